/* Read-write locks and real-time priorities (POSIX's Thread Execution
 * Scheduling rule, which glibc's reader-preferring default does not
 * follow): with SCHED_FIFO threads, a reader does not get the lock while a
 * writer of higher or equal priority waits, and an unlock gives the lock
 * to the highest priority waiter, writers before readers of their
 * priority.  SCHED_OTHER threads keep glibc's reader preference, and
 * PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP its writer preference.
 * The process pins itself to one CPU; main runs at SCHED_FIFO 30 and holds
 * a read lock while the others queue, so every order below is decided by
 * the lock, not by timing.  On NPTL only the SCHED_OTHER and
 * writer-preference parts are checked: glibc does not implement the rule
 * (the Open POSIX tests pthread_rwlock_rdlock/2-1, 2-2 and
 * pthread_rwlock_unlock/3-1 fail there), and the program says so.
 * Needs root for SCHED_FIFO: without it, exit 77 (skipped). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include "tp_util.h"

static pthread_rwlock_t rw;
static atomic_int nlog, arrived;
static char order[16];

struct who {
	char name;
	bool writer;
};

static void *locker(void *arg)
{
	const struct who *w = arg;
	atomic_fetch_add(&arrived, 1);
	if (w->writer)
		CHECK_OK(pthread_rwlock_wrlock(&rw));
	else
		CHECK_OK(pthread_rwlock_rdlock(&rw));
	order[atomic_fetch_add(&nlog, 1)] = w->name;
	CHECK_OK(pthread_rwlock_unlock(&rw));
	return NULL;
}

/* Blocked in the lock, as far as a thread can tell: it arrived and has
 * not logged.  Main yields the CPU meanwhile by sleeping. */
static void settle(void)
{
	struct timespec ts = { 0, 30000000 };
	nanosleep(&ts, NULL);
}

/* Main holds a read lock; the threads of `who` (policy, prios) queue in
 * that order; then main unlocks and the log gives the order they got it.
 * A reader that got the lock at once logs before main unlocks: '|' marks
 * main's unlock in the log. */
static void run(const char *label, int kind, int policy, const int *prio, const struct who *who,
		int n, const char *want)
{
	pthread_rwlockattr_t a;
	CHECK_OK(pthread_rwlockattr_init(&a));
	CHECK_OK(pthread_rwlockattr_setkind_np(&a, kind));
	CHECK_OK(pthread_rwlock_init(&rw, &a));
	CHECK_OK(pthread_rwlockattr_destroy(&a));
	atomic_store(&nlog, 0);
	atomic_store(&arrived, 0);
	memset(order, 0, sizeof order);
	CHECK_OK(pthread_rwlock_rdlock(&rw));
	pthread_t t[8];
	for (int i = 0; i < n; i++) {
		t[i] = tp_spawn_sched(policy, prio[i], locker, (void *)&who[i]);
		while (atomic_load(&arrived) <= i)
			settle();
		settle();
	}
	order[atomic_fetch_add(&nlog, 1)] = '|';
	CHECK_OK(pthread_rwlock_unlock(&rw));
	for (int i = 0; i < n; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_OK(pthread_rwlock_destroy(&rw));
	if (strcmp(order, want) != 0) {
		fprintf(stderr, "rwlock-prio: %s: order %s, want %s\n", label, order, want);
		exit(1);
	}
}

int main(void)
{
	alarm(60);
	struct sched_param sp = { .sched_priority = 30 };
	if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
		CHECK(errno == EPERM);
		printf("rwlock-prio: skipped, SCHED_FIFO needs privilege\n");
		return 77;
	}
	tp_pin_first_cpu();

	const struct who w = { 'W', true }, r = { 'r', false }, R = { 'R', false };
	const int deflt = PTHREAD_RWLOCK_DEFAULT_NP;
	/* SCHED_OTHER: a reader passes a waiting writer (glibc's preference). */
	run("SCHED_OTHER", deflt, SCHED_OTHER, (int[]){ 0, 0 }, (struct who[]){ w, r }, 2, "r|W");
	/* Writer preference, whatever the policy. */
	run("PREFER_WRITER_NONRECURSIVE", PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP,
	    SCHED_OTHER, (int[]){ 0, 0 }, (struct who[]){ w, r }, 2, "|Wr");
	if (getenv("PPL_EXPECT_ULT") == NULL) {
		printf("rwlock-prio: ok (NPTL: the real-time rule is not checked)\n");
		return 0;
	}
	/* rdlock/2-1: a reader below a waiting writer waits. */
	run("lower reader", deflt, SCHED_FIFO, (int[]){ 20, 10 }, (struct who[]){ w, r }, 2, "|Wr");
	/* rdlock/2-2: and one of its priority too. */
	run("equal reader", deflt, SCHED_FIFO, (int[]){ 20, 20 }, (struct who[]){ w, r }, 2, "|Wr");
	/* A reader above it does not. */
	run("higher reader", deflt, SCHED_FIFO, (int[]){ 10, 20 }, (struct who[]){ w, R }, 2, "R|W");
	/* unlock/3-1: the highest priority waiter first, a writer before the
	 * readers of its priority, readers above the next writer before it. */
	const struct who v = { 'V', true };
	run("unlock order", deflt, SCHED_FIFO, (int[]){ 20, 10, 20, 15 },
	    (struct who[]){ w, r, R, v }, 4, "|WRVr");
	printf("rwlock-prio: ok\n");
	return 0;
}
