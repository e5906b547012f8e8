/* tp_selfsched: the calls that act on "the calling thread" or on a thread
 * id act on the thread, as on NPTL, not on whatever kernel thread runs it:
 *  - gettid() is the process id in the initial thread, another id in each
 *    other thread, the same for a thread's whole life and different for
 *    two threads alive at once (on one VP they had their VP's);
 *  - sched_setscheduler/sched_getscheduler/sched_setparam/sched_getparam
 *    on pid 0 and on the thread's gettid() change and report that thread
 *    (seen through pthread_getschedparam from another), not the others
 *    (root only: real-time policies need it);
 *  - setpriority/getpriority(PRIO_PROCESS) and nice on 0 and on a gettid()
 *    value: a thread's nice value is its own;
 *  - tgkill(getpid(), tid, sig) runs the handler in the thread tid names,
 *    and kill(tid, 0) finds it. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <unistd.h>

#include "tp_util.h"

#define N 4

static pthread_barrier_t bar;
static pid_t tids[N];
static pthread_t ths[N];
static volatile pthread_t handled_in;
static volatile pid_t handled_tid;

static void on_usr1(int sig)
{
	(void)sig;
	handled_in = pthread_self();
	handled_tid = gettid();
}

static void *worker(void *arg)
{
	int i = (int)(long)arg;
	pid_t me = gettid();
	CHECK(me > 0 && me != getpid());
	tids[i] = me;
	/* Stable across blocking and yielding (a user thread may move). */
	for (int k = 0; k < 50; k++) {
		if (k % 10 == 0)
			usleep(100);
		sched_yield();
		CHECK(gettid() == me);
	}
	pthread_barrier_wait(&bar);        /* 1: every id is known */
	for (int j = 0; j < N; j++)
		CHECK(j == i || tids[j] != me);

	/* nice: its own (raise it: no privilege needed). */
	int base = getpriority(PRIO_PROCESS, 0);
	CHECK(setpriority(PRIO_PROCESS, 0, base + 1 + i) == 0);
	CHECK(getpriority(PRIO_PROCESS, 0) == base + 1 + i);
	CHECK(getpriority(PRIO_PROCESS, (id_t)me) == base + 1 + i);
	CHECK(nice(1) == base + 2 + i);
	CHECK(setpriority(PRIO_PROCESS, (id_t)me, base + 1 + i) == 0);

	/* Policy and priority through pid 0 (even workers) or gettid (odd). */
	pid_t who = i % 2 ? me : 0;
	struct sched_param sp = { .sched_priority = 10 + i };
	int r = sched_setscheduler(who, SCHED_FIFO, &sp);
	if (r == 0) {
		CHECK(sched_getscheduler(who) == SCHED_FIFO);
		CHECK(sched_getparam(who, &sp) == 0 && sp.sched_priority == 10 + i);
		sp.sched_priority = 20 + i;
		CHECK(sched_setparam(who, &sp) == 0);
		CHECK(sched_getparam(0, &sp) == 0 && sp.sched_priority == 20 + i);
	} else {
		CHECK(errno == EPERM);
	}
	pthread_barrier_wait(&bar);        /* 2: main looks */
	pthread_barrier_wait(&bar);        /* 3: main is done */
	sp.sched_priority = 0;
	CHECK(sched_setscheduler(0, SCHED_OTHER, &sp) == 0);
	/* tgkill from main while this thread waits at the barrier. */
	pthread_barrier_wait(&bar);        /* 4 */
	pthread_barrier_wait(&bar);        /* 5 */
	CHECK(gettid() == me);
	return NULL;
}

int main(void)
{
	alarm(30);
	CHECK(gettid() == getpid());
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	CHECK_OK(pthread_barrier_init(&bar, NULL, N + 1));
	int base = getpriority(PRIO_PROCESS, 0);
	for (long i = 0; i < N; i++)
		CHECK_OK(pthread_create(&ths[i], NULL, worker, (void *)i));
	pthread_barrier_wait(&bar);        /* 1 */
	CHECK(gettid() == getpid());
	pthread_barrier_wait(&bar);        /* 2 */
	/* The workers' changes are theirs. */
	CHECK(getpriority(PRIO_PROCESS, 0) == base);
	CHECK(sched_getscheduler(0) == SCHED_OTHER);
	bool rt = geteuid() == 0;
	for (int i = 0; i < N; i++) {
		CHECK(getpriority(PRIO_PROCESS, (id_t)tids[i]) == base + 1 + i);
		int policy;
		struct sched_param sp;
		CHECK_OK(pthread_getschedparam(ths[i], &policy, &sp));
		CHECK(policy == (rt ? SCHED_FIFO : SCHED_OTHER));
		CHECK(sp.sched_priority == (rt ? 20 + i : 0));
		CHECK(sched_getscheduler(tids[i]) == policy);
		CHECK(sched_getparam(tids[i], &sp) == 0 && sp.sched_priority == (rt ? 20 + i : 0));
	}
	pthread_barrier_wait(&bar);        /* 3 */
	pthread_barrier_wait(&bar);        /* 4 */
	/* Signals to a thread by its id: run there. */
	for (int i = 0; i < N; i++) {
		handled_in = 0;
		handled_tid = 0;
		CHECK(tgkill(getpid(), tids[i], SIGUSR1) == 0);
		for (int k = 0; k < 2000 && handled_tid == 0; k++)
			usleep(1000);
		CHECK(handled_tid == tids[i]);
		CHECK(pthread_equal(handled_in, ths[i]));
		CHECK(kill(tids[i], 0) == 0);
	}
	pthread_barrier_wait(&bar);        /* 5 */
	for (int i = 0; i < N; i++)
		CHECK_OK(pthread_join(ths[i], NULL));
	errno = 0;
	CHECK(tgkill(getpid(), tids[0], 0) == -1 && errno == ESRCH);
	puts("selfsched: ok");
	return 0;
}
