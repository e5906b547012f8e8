/* Raw rt_sigprocmask and sigaltstack through syscall()
 * (src/preload/syscall.c) act on the calling thread, as on NPTL:
 *
 * - a thread that blocks SIGUSR1 by raw call sees it blocked through
 *   pthread_sigmask, the other threads do not, and a process-directed
 *   SIGUSR1 is taken by a thread that does not block it (before, the call
 *   blocked the VP's kernel thread under every user thread on it, and the
 *   thread's own mask did not show it);
 * - a size other than 8 is EINVAL, a bad pointer EFAULT;
 * - a raw sigaltstack gives the calling thread its alternate stack, no
 *   other thread. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>

#include "tp_util.h"

static pthread_barrier_t step;
static pthread_t blocker;
static volatile pthread_t taker;
static volatile sig_atomic_t taken;
static char alt[65536];

static void on_usr1(int sig)
{
	(void)sig;
	taker = pthread_self();
	taken = 1;
}

static bool blocked_here(int sig)
{
	sigset_t cur;
	CHECK_OK(pthread_sigmask(SIG_BLOCK, NULL, &cur));
	return sigismember(&cur, sig);
}

static void *block_raw(void *arg)
{
	(void)arg;
	uint64_t set = 1ULL << (SIGUSR1 - 1), old = ~0ULL;
	CHECK(syscall(SYS_rt_sigprocmask, SIG_BLOCK, &set, &old, sizeof set) == 0);
	CHECK((old & set) == 0);
	CHECK(blocked_here(SIGUSR1));
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof alt }, cur;
	CHECK(syscall(SYS_sigaltstack, &ss, NULL) == 0);
	CHECK(sigaltstack(NULL, &cur) == 0 && cur.ss_sp == alt && !(cur.ss_flags & SS_DISABLE));
	pthread_barrier_wait(&step);   /* 1: blocked */
	pthread_barrier_wait(&step);   /* 2: the signal was taken */
	CHECK(syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &set, &old, sizeof set) == 0);
	CHECK((old & set) != 0 && !blocked_here(SIGUSR1));
	ss.ss_flags = SS_DISABLE;
	CHECK(syscall(SYS_sigaltstack, &ss, NULL) == 0);
	return NULL;
}

static void *other(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&step);   /* 1 */
	CHECK(!blocked_here(SIGUSR1));
	stack_t cur;
	CHECK(sigaltstack(NULL, &cur) == 0 && (cur.ss_flags & SS_DISABLE));
	for (int i = 0; i < 5000 && !taken; i++)
		usleep(1000);
	pthread_barrier_wait(&step);   /* 2 */
	return NULL;
}

int main(void)
{
	alarm(30);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);

	uint64_t set = 1ULL << (SIGUSR1 - 1);
	errno = 0;
	CHECK(syscall(SYS_rt_sigprocmask, SIG_BLOCK, &set, NULL, 4) == -1 && errno == EINVAL);
	errno = 0;
	CHECK(syscall(SYS_rt_sigprocmask, SIG_BLOCK, (void *)16, NULL, 8) == -1 && errno == EFAULT);
	errno = 0;
	CHECK(syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, (void *)16, 8) == -1 && errno == EFAULT);
	CHECK(!blocked_here(SIGUSR1));

	pthread_t o;
	CHECK_OK(pthread_barrier_init(&step, NULL, 3));
	CHECK_OK(pthread_create(&blocker, NULL, block_raw, NULL));
	CHECK_OK(pthread_create(&o, NULL, other, NULL));
	pthread_barrier_wait(&step);   /* 1 */
	CHECK(!blocked_here(SIGUSR1));
	CHECK(kill(getpid(), SIGUSR1) == 0);
	for (int i = 0; i < 5000 && !taken; i++)
		usleep(1000);
	CHECK(taken && !pthread_equal(taker, blocker));
	pthread_barrier_wait(&step);   /* 2 */
	CHECK_OK(pthread_join(blocker, NULL));
	CHECK_OK(pthread_join(o, NULL));
	puts("ok");
	return 0;
}
