/* A thread cancelled as it enters an interposed call that is also one of
 * the C library's cancellation points (select, glibc's
 * tst-pthread_cancel-select-loop).  When the request lands between the
 * thread marking itself for libppl and the C library's own check, glibc
 * starts unwinding it, and its first unwind in a process dlopens
 * libgcc_s under the dynamic loader's locks.  The canceller's signal must
 * not unwind the thread a second time from inside that: the loader's
 * locks would stay held by a dead thread, and exit (or any dlopen, dlsym)
 * then hangs.  That first unwind happens once per process, so the race is
 * run in fresh child processes, each of which must exit within its
 * alarm. */
#include <dlfcn.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/select.h>
#include <sys/wait.h>

#include "tp_util.h"

/* Each process has one chance (its first unwind by the C library). */
#ifndef NCHILD
#define NCHILD 100
#endif
#ifndef CHILD_MS
#define CHILD_MS 10
#endif

static int pipe_fds[2];     /* nobody writes to it */
static atomic_int started;

/* Polls, so that it is in and out of the call all the time and a request
 * often lands between libppl's check and the C library's. */
static void *looper(void *arg)
{
	(void)arg;
	atomic_store(&started, 1);
	for (;;) {
		fd_set r;
		FD_ZERO(&r);
		FD_SET(pipe_fds[0], &r);
		struct timeval tv = { 0, 0 };
		select(pipe_fds[0] + 1, &r, NULL, NULL, &tv);
	}
	return NULL;
}

/* One process: create, cancel, join for `ms`, then use the loader. */
static void child(long ms)
{
	alarm(3);
	CHECK(pipe(pipe_fds) == 0);
	long long end = tp_now_ns() + ms * 1000000LL;
	while (tp_now_ns() < end) {
		pthread_t t;
		void *res;
		atomic_store(&started, 0);
		CHECK_OK(pthread_create(&t, NULL, looper, NULL));
		while (!atomic_load(&started))
			sched_yield();
		CHECK_OK(pthread_cancel(t));
		CHECK_OK(pthread_join(t, &res));
		CHECK(res == PTHREAD_CANCELED);
	}
	void *h = dlopen("libc.so.6", RTLD_NOW);   /* takes the loader's lock */
	CHECK(h != NULL);
	dlclose(h);
	exit(0);   /* _dl_fini takes it too */
}

int main(void)
{
	alarm(60);
	for (int i = 0; i < NCHILD; i++) {
		fflush(NULL);
		pid_t p = fork();
		CHECK(p >= 0);
		if (p == 0)
			child(CHILD_MS);
		int st;
		CHECK(waitpid(p, &st, 0) == p);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "child %d: %s %d (a hang is killed by SIGALRM, %d)\n", i,
				WIFEXITED(st) ? "exit status" : "signal",
				WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), SIGALRM);
			return 1;
		}
	}
	return 0;
}
