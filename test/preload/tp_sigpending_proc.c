/* sigpending shows a process-directed signal every thread blocks, from
 * every thread, until one takes it (POSIX: the signals pending on the
 * process and on the calling thread).  With PPL_VP_BACKEND=process such a
 * signal waits in libppl's forwarder, a helper of the initial process
 * (docs/vpdep.md), which the kernel's pending sets of the VPs' kernel
 * threads do not show.  main blocks SIGUSR1 and sends it to the process;
 * main and threads spread over the VPs must each see it pending, steadily;
 * main takes it with sigwait; then nobody sees it.  (The VPs exist before
 * the signal: the first thread is made first.) */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tp_util.h"

#define NTHREADS 4

static atomic_int off_initial;   /* threads that looked off the initial process */
static atomic_bool spread;
static atomic_bool settled;      /* main's settle is over */

static bool pending(int sig)
{
	sigset_t p;
	CHECK(sigpending(&p) == 0);
	return sigismember(&p, sig);
}

/* Until the kernel's pending set of the process no longer has sig (a
 * helper of libppl's took it off the kernel, as the process backend's
 * forwarder does: between its taking and its noting it a look would miss
 * it, docs/vpdep.md), or 200 ms (natively it stays there). */
static void settle(int sig)
{
	char self[32];
	snprintf(self, sizeof self, "%d", (int)getpid());
	long long until = tp_now_ns() + 200000000;
	while (tp_now_ns() < until) {
		char path[64], line[256];
		snprintf(path, sizeof path, "/proc/%s/status", self);
		FILE *f = fopen(path, "r");
		CHECK(f != NULL);
		unsigned long long shd = 0;
		while (fgets(line, sizeof line, f))
			if (sscanf(line, "ShdPnd: %llx", &shd) == 1)
				break;
		fclose(f);
		if (!(shd >> (sig - 1) & 1))
			return;
		sched_yield();
	}
}

/* Pending on 200 looks in a row. */
static void expect_pending(const char *who)
{
	for (int i = 0; i < 200; i++) {
		if (!pending(SIGUSR1)) {
			fprintf(stderr, "%s: SIGUSR1, sent to the process and blocked everywhere, "
					"not pending (look %d)\n", who, i);
			exit(1);
		}
		for (volatile int k = 0; k < 2000; k++)
			;
	}
}

static void *looker(void *arg)
{
	(void)arg;
	if (tp_spread_off_initial(&spread))
		atomic_fetch_add(&off_initial, 1);
	while (!atomic_load(&settled))
		sched_yield();
	expect_pending("thread");
	return NULL;
}

static void *not_pending(void *arg)
{
	(void)arg;
	CHECK(!pending(SIGUSR1));
	return NULL;
}

/* Alive from before the signal to the end: the program never goes back
 * to one thread, when libppl's helpers retire and the process backend's
 * forwarder gives what it holds back to the kernel, for the next one to
 * take again (the window of settle, again: docs/vpdep.md). */
static int hold_pipe[2];

static void *holder(void *arg)
{
	(void)arg;
	char c;
	CHECK(read(hold_pipe[0], &c, 1) == 0);
	return NULL;
}

int main(void)
{
	alarm(20);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	CHECK(pthread_sigmask(SIG_BLOCK, &s, NULL) == 0);
	CHECK(pipe(hold_pipe) == 0);
	pthread_t t[NTHREADS], h;
	CHECK_OK(pthread_create(&h, NULL, holder, NULL));
	CHECK_OK(pthread_create(&t[0], NULL, looker, NULL));
	CHECK(kill(getpid(), SIGUSR1) == 0);
	settle(SIGUSR1);
	atomic_store(&settled, true);
	expect_pending("main");
	for (int i = 1; i < NTHREADS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, looker, NULL));
	for (int i = 0; i < NTHREADS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	expect_pending("main, after the threads");
	int sig = 0;
	CHECK(sigwait(&s, &sig) == 0 && sig == SIGUSR1);
	/* Gone, at once but for the process backend's forwarder, which
	 * notes that it no longer holds the signal only after its copy was
	 * queued to the kernel thread of the sigwait (docs/vpdep.md). */
	long long until = tp_now_ns() + 1000000000;
	while (pending(SIGUSR1)) {
		CHECK(tp_now_ns() < until);
		sched_yield();
	}
	for (int i = 0; i < 200; i++)
		CHECK(!pending(SIGUSR1));
	CHECK_OK(pthread_create(&t[0], NULL, not_pending, NULL));
	CHECK_OK(pthread_join(t[0], NULL));
	close(hold_pipe[1]);
	CHECK_OK(pthread_join(h, NULL));
	if (getenv("TP_VERBOSE"))
		printf("%d threads looked off the initial process\n", atomic_load(&off_initial));
	return 0;
}
