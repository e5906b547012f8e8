/* A vfork child runs on its parent's memory until it execs or exits, but
 * its signal actions, mask and ids are its own (CPython's subprocess resets
 * every handler to SIG_DFL and blocks all signals in its vfork child before
 * exec).  Nothing the child does may show in the parent: main keeps its
 * handler (sigaction reports it, and a process-directed signal sent while
 * main waits for the sender runs it) and its mask.  In the child, sigaction
 * reports the inherited handler, then its own SIG_DFL; gettid() is its
 * own id (getpid()); pthread_self() is the parent's thread, as in glibc.
 * While the child sleeps, the parent's other threads run on (a counter
 * moves, within 2 s): the vforking thread's VP waits in the kernel, and the others
 * must not wait with it, on one VP too.  SIGTERM to a child before its
 * exec ends the child, not the parent.  Then the same from a thread, with
 * an exec. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tp_util.h"

static atomic_int handled;
static atomic_long ticks;
static atomic_bool stop;

static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&handled, 1);
}

static void *counter(void *arg)
{
	while (!atomic_load(&stop)) {
		atomic_fetch_add(&ticks, 1);
		sched_yield();
	}
	return arg;
}

/* What the child saw, in the memory it shares with the parent. */
static struct {
	int inherited;   /* sigaction reported on_usr1 */
	int reset;       /* then SIG_DFL */
	int own_tid;     /* gettid() == getpid() != the parent's */
	int same_self;   /* pthread_self() is the parent's */
	int moved;       /* the counter moved while it slept */
} seen;

static void expect_parent_intact(void)
{
	struct sigaction q;
	CHECK(sigaction(SIGUSR1, NULL, &q) == 0);
	CHECK(q.sa_handler == on_usr1);
	sigset_t m;
	CHECK(pthread_sigmask(SIG_BLOCK, NULL, &m) == 0);
	CHECK(!sigismember(&m, SIGUSR1));
	CHECK(!sigismember(&m, SIGTERM));
}

/* vfork, the child's checks, then _exit or an exec of /bin/true. */
static void vfork_once(bool exec)
{
	pid_t parent = getpid();
	pthread_t me = pthread_self();
	memset(&seen, 0, sizeof seen);
	sigset_t all;
	sigfillset(&all);
	pid_t p = vfork();
	if (p == 0) {
		struct sigaction q;
		seen.inherited = sigaction(SIGUSR1, NULL, &q) == 0 && q.sa_handler == on_usr1;
		signal(SIGUSR1, SIG_DFL);
		seen.reset = sigaction(SIGUSR1, NULL, &q) == 0 && q.sa_handler == SIG_DFL;
		sigprocmask(SIG_BLOCK, &all, NULL);
		seen.own_tid = gettid() == getpid() && getpid() != parent;
		seen.same_self = pthread_equal(pthread_self(), me);
		long before = atomic_load(&ticks);
		struct timespec t = { 0, 10 * 1000 * 1000 };
		for (int i = 0; i < 200 && atomic_load(&ticks) <= before + 100; i++)
			nanosleep(&t, NULL);   /* up to 2 s, for a loaded machine */
		seen.moved = atomic_load(&ticks) > before + 100;
		if (exec) {
			sigprocmask(SIG_UNBLOCK, &all, NULL);
			execl("/bin/true", "true", (char *)NULL);
		}
		_exit(0);
	}
	CHECK(p > 0);
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(seen.inherited);
	CHECK(seen.reset);
	CHECK(seen.own_tid);
	CHECK(seen.same_self);
	CHECK(seen.moved);
	expect_parent_intact();
}

/* A process-directed SIGUSR1 from a child, while main waits for it. */
static void signal_from_child(void)
{
	int before = atomic_load(&handled);
	pid_t k = fork();
	CHECK(k >= 0);
	if (k == 0) {
		kill(getppid(), SIGUSR1);
		_exit(0);
	}
	pid_t w;
	while ((w = waitpid(k, NULL, 0)) == -1 && errno == EINTR)
		;   /* the handler may interrupt it */
	CHECK(w == k);
	long long until = tp_now_ns() + 5000000000LL;
	while (atomic_load(&handled) == before && tp_now_ns() < until)
		usleep(1000);
	CHECK(atomic_load(&handled) == before + 1);
}

/* SIGTERM to a vfork child before it execs ends the child (its default
 * action, in its own process), not the parent. */
static atomic_int child_pid;

static void *killer(void *arg)
{
	int pid;
	while ((pid = atomic_load(&child_pid)) == 0)
		sched_yield();
	CHECK(kill(pid, SIGTERM) == 0);
	return arg;
}

static void vfork_killed(void)
{
	atomic_store(&child_pid, 0);
	pthread_t k;
	CHECK_OK(pthread_create(&k, NULL, killer, NULL));
	pid_t p = vfork();
	if (p == 0) {
		atomic_store(&child_pid, getpid());
		struct timespec t = { 0, 10 * 1000 * 1000 };
		for (int i = 0; i < 500; i++)
			nanosleep(&t, NULL);   /* 5 s: killed long before */
		_exit(3);
	}
	CHECK(p > 0);
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
	CHECK_OK(pthread_join(k, NULL));
}

static void *from_thread(void *arg)
{
	vfork_once(true);
	return arg;
}

int main(void)
{
	alarm(60);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	pthread_t c, t;
	CHECK_OK(pthread_create(&c, NULL, counter, NULL));
	for (int round = 0; round < 5; round++) {
		vfork_once(false);
		signal_from_child();
	}
	vfork_killed();
	CHECK_OK(pthread_create(&t, NULL, from_thread, NULL));
	CHECK_OK(pthread_join(t, NULL));
	signal_from_child();
	atomic_store(&stop, true);
	CHECK_OK(pthread_join(c, NULL));
	expect_parent_intact();
	puts("vfork: ok");
	return 0;
}
