/* The mask a signal handler runs with is the thread's own while it runs,
 * as the kernel makes it: the signal itself and the action's sa_mask are
 * blocked, pthread_sigmask says so, and they stay blocked when the handler
 * is switched out and resumed (it waits, yields, is preempted).  Another
 * instance that comes meanwhile waits for the handler's return instead of
 * nesting in it.  After the handler, the mask is the thread's again; left
 * by siglongjmp it is the one sigsetjmp saved, by longjmp the handler's
 * (as on NPTL).  Inside sigsuspend it is built on the call's mask.  The Open POSIX test pthread_setschedparam/5-1 nested two
 * handlers that each post a semaphore until the stack overflowed. */
#include <errno.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>

#include "tp_util.h"

static _Atomic int depth, max_depth, runs;
static volatile sig_atomic_t failed_mask;

static int blocked(int sig)
{
	sigset_t cur;
	CHECK_OK(pthread_sigmask(SIG_BLOCK, NULL, &cur));
	return sigismember(&cur, sig);
}

static void enter(void)
{
	int d = atomic_fetch_add(&depth, 1) + 1;
	int m = atomic_load(&max_depth);
	while (d > m && !atomic_compare_exchange_weak(&max_depth, &m, d))
		;
	atomic_fetch_add(&runs, 1);
}

static void install(int sig, void (*h)(int), int also)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = h;
	sigemptyset(&sa.sa_mask);
	if (also)
		sigaddset(&sa.sa_mask, also);
	CHECK(sigaction(sig, &sa, NULL) == 0);
}

static void set_blocked(int how, int a, int b)
{
	sigset_t s;
	sigemptyset(&s);
	if (a)
		sigaddset(&s, a);
	if (b)
		sigaddset(&s, b);
	CHECK_OK(pthread_sigmask(how, &s, NULL));
}

/* 1. What the handler sees, raised and sent to the process. */
static void h_view(int sig)
{
	(void)sig;
	enter();
	if (!blocked(SIGUSR1) || !blocked(SIGUSR2))
		failed_mask = 1;
	sched_yield();   /* switched out and back: still blocked */
	if (!blocked(SIGUSR1) || !blocked(SIGUSR2))
		failed_mask = 2;
	atomic_fetch_sub(&depth, 1);
}

static void *kill_proc(void *arg)
{
	(void)arg;
	CHECK(kill(getpid(), SIGUSR1) == 0);
	return NULL;
}

static void view(void)
{
	install(SIGUSR1, h_view, SIGUSR2);
	failed_mask = 0;
	CHECK(raise(SIGUSR1) == 0);
	CHECK(failed_mask == 0);
	CHECK(!blocked(SIGUSR1) && !blocked(SIGUSR2));
	/* Sent to the process by a thread that blocks it: main takes it. */
	set_blocked(SIG_BLOCK, SIGUSR1, 0);
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, kill_proc, NULL));   /* inherits the block */
	CHECK_OK(pthread_join(t, NULL));
	int before = atomic_load(&runs);
	set_blocked(SIG_UNBLOCK, SIGUSR1, 0);   /* delivered before this returns */
	CHECK(atomic_load(&runs) == before + 1);
	CHECK(failed_mask == 0);
	CHECK(!blocked(SIGUSR1) && !blocked(SIGUSR2));
}

/* 2. Two signals whose handlers each wake the thread that sends the other
 *    (pthread_setschedparam/5-1): the handlers switch out to let the
 *    senders run, and a new instance of a signal whose handler is running
 *    waits for it.  Depth at most 2 (SIGUSR2's handler inside SIGUSR1's). */
static sem_t go1, go2;
static atomic_bool stop;

/* SIGUSR1's handler posts go1, SIGUSR2's go2. */
static void h_post(int sig)
{
	enter();
	if (!blocked(sig))
		failed_mask = sig == SIGUSR1 ? 3 : 4;
	CHECK(sem_post(sig == SIGUSR1 ? &go1 : &go2) == 0);
	sched_yield();
	atomic_fetch_sub(&depth, 1);
}

struct sender {
	sem_t *go;
	int sig;
};

static void *sender(void *arg)
{
	struct sender *s = arg;
	while (!atomic_load(&stop)) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 10 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		if (sem_timedwait(s->go, &ts) != 0) {
			CHECK(errno == ETIMEDOUT || errno == EINTR);
			continue;
		}
		CHECK(kill(getpid(), s->sig) == 0);
	}
	return NULL;
}

static void *worker(void *arg)
{
	(void)arg;
	set_blocked(SIG_UNBLOCK, SIGUSR1, SIGUSR2);   /* the only thread that takes them */
	while (!atomic_load(&stop))
		sched_yield();
	set_blocked(SIG_BLOCK, SIGUSR1, SIGUSR2);
	return NULL;
}

static void storm(void)
{
	install(SIGUSR1, h_post, 0);
	install(SIGUSR2, h_post, 0);
	set_blocked(SIG_BLOCK, SIGUSR1, SIGUSR2);   /* inherited by every thread below */
	CHECK(sem_init(&go1, 0, 1) == 0 && sem_init(&go2, 0, 1) == 0);
	atomic_store(&max_depth, 0);
	atomic_store(&runs, 0);
	failed_mask = 0;
	pthread_t w, s1, s2;
	struct sender a1 = { &go1, SIGUSR1 }, a2 = { &go2, SIGUSR2 };
	CHECK_OK(pthread_create(&w, NULL, worker, NULL));
	CHECK_OK(pthread_create(&s1, NULL, sender, &a1));
	CHECK_OK(pthread_create(&s2, NULL, sender, &a2));
	struct timespec second = { 1, 0 };
	while (nanosleep(&second, &second) != 0)
		CHECK(errno == EINTR);
	atomic_store(&stop, true);
	CHECK_OK(pthread_join(w, NULL));
	CHECK_OK(pthread_join(s1, NULL));
	CHECK_OK(pthread_join(s2, NULL));
	/* What is still pending stays so: blocked everywhere. */
	install(SIGUSR1, SIG_IGN, 0);
	install(SIGUSR2, SIG_IGN, 0);
	set_blocked(SIG_UNBLOCK, SIGUSR1, SIGUSR2);
	if (atomic_load(&max_depth) > 2 || failed_mask != 0) {
		fprintf(stderr, "storm: %d handlers, nested %d deep, mask check %d\n",
			atomic_load(&runs), atomic_load(&max_depth), failed_mask);
		exit(1);
	}
	CHECK(atomic_load(&runs) > 10);
}

/* 3. In a thread: left by siglongjmp: sigsetjmp's mask (SIGUSR2 open, blocked since);
 *    by longjmp: the handler's (SIGUSR1 blocked, as on NPTL). */
static sigjmp_buf senv;
static jmp_buf env;
static volatile sig_atomic_t usr2_runs;

static void h_sigjump(int sig)
{
	(void)sig;
	siglongjmp(senv, 1);
}

static void h_jump(int sig)
{
	(void)sig;
	longjmp(env, 1);
}

static void h_count(int sig)
{
	(void)sig;
	usr2_runs++;
}

static void *jumps(void *arg)
{
	(void)arg;
	install(SIGUSR1, h_sigjump, 0);
	install(SIGUSR2, h_count, 0);
	set_blocked(SIG_SETMASK, 0, 0);
	if (sigsetjmp(senv, 1) == 0) {
		set_blocked(SIG_BLOCK, SIGUSR2, 0);
		CHECK(raise(SIGUSR1) == 0);
		CHECK(!"not reached");
	}
	CHECK(!blocked(SIGUSR1));
	CHECK(!blocked(SIGUSR2));
	usr2_runs = 0;
	CHECK(raise(SIGUSR2) == 0);
	CHECK(usr2_runs == 1);
	sched_yield();   /* and after a switch */
	CHECK(!blocked(SIGUSR1) && !blocked(SIGUSR2));

	install(SIGUSR1, h_jump, 0);
	if (setjmp(env) == 0) {
		CHECK(raise(SIGUSR1) == 0);
		CHECK(!"not reached");
	}
	CHECK(blocked(SIGUSR1));
	sched_yield();
	CHECK(blocked(SIGUSR1));
	set_blocked(SIG_SETMASK, 0, 0);
	CHECK(!blocked(SIGUSR1));
	return NULL;
}

/* 4. In a thread, inside sigsuspend: the handler's mask is built on the
 *    call's, so a signal the call opens nests in it, as on NPTL. */
static volatile sig_atomic_t in_usr1, usr2_nested;

static void h_raise2(int sig)
{
	(void)sig;
	in_usr1 = 1;
	CHECK_OK(pthread_kill(pthread_self(), SIGUSR2));
	in_usr1 = 0;
}

static void h_note2(int sig)
{
	(void)sig;
	usr2_runs++;
	usr2_nested = in_usr1;
}

static void *suspend(void *arg)
{
	(void)arg;
	install(SIGUSR1, h_raise2, 0);
	install(SIGUSR2, h_note2, 0);
	set_blocked(SIG_SETMASK, SIGUSR1, SIGUSR2);
	usr2_runs = 0;
	CHECK(raise(SIGUSR1) == 0);   /* pending */
	sigset_t none;
	sigemptyset(&none);
	CHECK(sigsuspend(&none) == -1 && errno == EINTR);
	CHECK(usr2_runs == 1 && usr2_nested);
	CHECK(blocked(SIGUSR1) && blocked(SIGUSR2));
	set_blocked(SIG_SETMASK, 0, 0);
	return NULL;
}

int main(int argc, char **argv)
{
	/* An argument runs one part: view, storm, jumps or suspend. */
	const char *only = argc > 1 ? argv[1] : NULL;
	alarm(60);
	if (!only || strcmp(only, "view") == 0)
		view();
	if (!only || strcmp(only, "storm") == 0)
		storm();
	if (!only || strcmp(only, "jumps") == 0) {
		pthread_t t;   /* a thread of libppl's, even when run alone */
		CHECK_OK(pthread_create(&t, NULL, jumps, NULL));
		CHECK_OK(pthread_join(t, NULL));
	}
	if (!only || strcmp(only, "suspend") == 0) {
		pthread_t t;
		CHECK_OK(pthread_create(&t, NULL, suspend, NULL));
		CHECK_OK(pthread_join(t, NULL));
	}
	puts("ok");
	return 0;
}
