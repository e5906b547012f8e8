/* The SVID and BSD signal calls and the other names of signal, raise and
 * sigaction act on the calling thread's mask and the program's actions,
 * as pthread_sigmask and sigaction do.  The C library builds them on its
 * own sigprocmask and sigaction, which libppl does not see: sigrelse and
 * sigsetmask changed only the VP's kernel mask (pthread_sigmask still said
 * blocked, and the next switch put it back), sigignore and __sigaction
 * went unseen by sigaction, and sigpause's handler never ran.  Checked in
 * a thread, after a yield (another VP's kernel thread, maybe). */
/* The calls are obsolescent: testing them is the point. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "tp_util.h"

/* Exported by glibc (GLIBC_2.2.5), declared for old programs only or in no header. */
extern int sigblock(int mask);
extern int sigsetmask(int mask);
extern int siggetmask(void);
extern int __sigpause(int sig_or_mask, int is_sig);
extern int __xpg_sigpause(int sig);
extern int __sigaction(int sig, const struct sigaction *a, struct sigaction *o);
extern __sighandler_t ssignal(int sig, __sighandler_t h);
extern int gsignal(int sig);

/* A signal in BSD's int masks (<signal.h>'s sigmask, which warns). */
#define old_bit(sig) (1 << ((sig) - 1))

static atomic_int ran;

static void handler(int sig)
{
	(void)sig;
	atomic_fetch_add(&ran, 1);
}

static int blocked(int sig)
{
	sigset_t s;
	CHECK_OK(pthread_sigmask(SIG_BLOCK, NULL, &s));
	return sigismember(&s, sig);
}

static __sighandler_t action(int sig)
{
	struct sigaction a;
	CHECK(sigaction(sig, NULL, &a) == 0);
	return a.sa_handler;
}

static void *sends_usr2(void *arg)
{
	(void)arg;
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	CHECK(kill(getpid(), SIGUSR2) == 0);
	return NULL;
}

/* sigpause (X/Open's with is_sig, else BSD's mask) returns -1/EINTR once
 * SIGUSR2's handler ran, the mask as before. */
static void check_sigpause(int is_sig)
{
	CHECK(sighold(SIGUSR2) == 0);
	atomic_store(&ran, 0);
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, sends_usr2, NULL));
	int mask = siggetmask() & ~old_bit(SIGUSR2);
	CHECK((is_sig ? __xpg_sigpause(SIGUSR2) : __sigpause(mask, 0)) == -1);
	CHECK(atomic_load(&ran) == 1);
	CHECK(blocked(SIGUSR2));
	CHECK_OK(pthread_join(t, NULL));
	CHECK(sigrelse(SIGUSR2) == 0);
}

static void *run(void *arg)
{
	(void)arg;
	CHECK(signal(SIGUSR1, handler) != SIG_ERR);
	CHECK(signal(SIGUSR2, handler) != SIG_ERR);
	CHECK(blocked(SIGUSR1));   /* main's mask, inherited */
	CHECK(sigrelse(SIGUSR1) == 0);
	sched_yield();
	CHECK(!blocked(SIGUSR1));
	CHECK(sighold(SIGUSR1) == 0);
	sched_yield();
	CHECK(blocked(SIGUSR1));
	CHECK(sighold(0) == -1);

	CHECK(sigsetmask(0) != -1);
	sched_yield();
	CHECK(!blocked(SIGUSR1) && !blocked(SIGTERM));
	CHECK(sigblock(old_bit(SIGUSR1)) == 0);
	sched_yield();
	CHECK(blocked(SIGUSR1));
	CHECK(siggetmask() == old_bit(SIGUSR1));
	CHECK(sigsetmask(old_bit(SIGTERM)) == old_bit(SIGUSR1));
	CHECK(blocked(SIGTERM) && !blocked(SIGUSR1));
	CHECK(sigsetmask(0) == old_bit(SIGTERM));

	/* sigignore discards what was pending */
	CHECK(sighold(SIGUSR1) == 0);
	CHECK(raise(SIGUSR1) == 0);
	CHECK(sigignore(SIGUSR1) == 0);
	CHECK(action(SIGUSR1) == SIG_IGN);
	CHECK(signal(SIGUSR1, handler) == SIG_IGN);
	atomic_store(&ran, 0);
	CHECK(sigrelse(SIGUSR1) == 0);
	sched_yield();
	CHECK(atomic_load(&ran) == 0);

	CHECK(ssignal(SIGUSR1, SIG_DFL) == handler);
	CHECK(ssignal(SIGUSR1, handler) == SIG_DFL);
	CHECK(action(SIGUSR1) == handler);
	CHECK(gsignal(SIGUSR1) == 0);
	CHECK(atomic_load(&ran) == 1);

	struct sigaction a, old;
	memset(&a, 0, sizeof a);
	a.sa_handler = SIG_IGN;
	CHECK(__sigaction(SIGUSR1, &a, &old) == 0);
	CHECK(old.sa_handler == handler);
	CHECK(action(SIGUSR1) == SIG_IGN);

	check_sigpause(1);
	check_sigpause(0);
	return NULL;
}

int main(void)
{
	alarm(60);
	sigset_t all;
	sigfillset(&all);
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &all, NULL));
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, run, NULL));
	CHECK_OK(pthread_join(t, NULL));
	puts("ok");
	return 0;
}
