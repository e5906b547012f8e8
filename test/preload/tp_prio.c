/* Real-time priorities on one CPU, as the kernel gives them to NPTL's
 * threads: the process pins itself to one CPU first (libppl then starts
 * one VP), and main runs at SCHED_FIFO 50.
 *  - waiters of a semaphore and of a mutex are woken highest priority
 *    first, whatever order they came in;
 *  - a thread created above its creator's priority runs before
 *    pthread_create returns;
 *  - a lower priority thread does not run while a higher one computes
 *    (no time slice for SCHED_FIFO, and never to a lower priority);
 *  - a ready thread whose priority main raises runs before one it was
 *    queued behind, and a mutex waiter gets the mutex first;
 *  - threads pinned to the same CPU with pthread_setaffinity_np take turns
 *    at sched_yield (in a child forked before the pinning).
 * Needs root for SCHED_FIFO: without it, exit 77 (skipped). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "tp_util.h"

#define N 4
static const int prios[N] = { 10, 30, 20, 40 };   /* creation order */
static const int woken[N] = { 40, 30, 20, 10 };   /* expected wake order */

static atomic_int ready, nrec;
static int order[N];
static sem_t sem;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;

static void record(int prio)
{
	order[atomic_fetch_add(&nrec, 1)] = prio;
}

static void nap(void)
{
	usleep(2000);
}

/* Main sleeps until every waiter has blocked (they run only then: main
 * outranks them all). */
static void wait_blocked(void)
{
	while (atomic_load(&ready) < N)
		nap();
	usleep(20000);
}

static void *sem_waiter(void *arg)
{
	atomic_fetch_add(&ready, 1);
	while (sem_wait(&sem) != 0)
		CHECK(errno == EINTR);
	record((int)(long)arg);
	return NULL;
}

static void *mutex_waiter(void *arg)
{
	atomic_fetch_add(&ready, 1);
	CHECK_OK(pthread_mutex_lock(&mutex));
	record((int)(long)arg);
	CHECK_OK(pthread_mutex_unlock(&mutex));
	return NULL;
}

static void check_order(const char *what)
{
	for (int i = 0; i < N; i++)
		if (order[i] != woken[i]) {
			fprintf(stderr, "%s: woken %d-th: priority %d, expected %d\n", what, i,
				order[i], woken[i]);
			exit(1);
		}
}

static void test_sem_order(void)
{
	pthread_t t[N];
	CHECK(sem_init(&sem, 0, 0) == 0);
	atomic_store(&ready, 0);
	atomic_store(&nrec, 0);
	for (int i = 0; i < N; i++)
		t[i] = tp_spawn_sched(SCHED_FIFO, prios[i], sem_waiter, (void *)(long)prios[i]);
	wait_blocked();
	for (int i = 0; i < N; i++) {
		CHECK(sem_post(&sem) == 0);
		while (atomic_load(&nrec) < i + 1)
			nap();
	}
	for (int i = 0; i < N; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	check_order("sem_post");
	CHECK(sem_destroy(&sem) == 0);
}

static void test_mutex_order(void)
{
	pthread_t t[N];
	atomic_store(&ready, 0);
	atomic_store(&nrec, 0);
	CHECK_OK(pthread_mutex_lock(&mutex));
	for (int i = 0; i < N; i++)
		t[i] = tp_spawn_sched(SCHED_FIFO, prios[i], mutex_waiter, (void *)(long)prios[i]);
	wait_blocked();
	CHECK_OK(pthread_mutex_unlock(&mutex));
	for (int i = 0; i < N; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	check_order("pthread_mutex_unlock");
}

static atomic_int ran;

static void *recorder(void *arg)
{
	record((int)(long)arg);
	return NULL;
}

static void *mark(void *arg)
{
	atomic_store(&ran, 1);
	return arg;
}

static void test_create_preempts(void)
{
	atomic_store(&ran, 0);
	pthread_t t = tp_spawn_sched(SCHED_FIFO, 60, mark, NULL);
	CHECK(atomic_load(&ran) == 1);   /* it ran first: it outranks main */
	CHECK_OK(pthread_join(t, NULL));
}

static void *computer(void *arg)
{
	long long end = tp_now_ns() + 100000000;   /* 100 ms, several slices */
	while (tp_now_ns() < end)
		;
	*(int *)arg = atomic_load(&ran);
	return NULL;
}

static void test_no_lower_while_higher_runs(void)
{
	int seen = -1;
	atomic_store(&ran, 0);
	pthread_t hi = tp_spawn_sched(SCHED_FIFO, 40, computer, &seen);
	pthread_t lo = tp_spawn_sched(SCHED_FIFO, 20, mark, NULL);
	CHECK_OK(pthread_join(hi, NULL));
	CHECK(seen == 0);   /* the lower priority waited for the whole 100 ms */
	CHECK_OK(pthread_join(lo, NULL));
	CHECK(atomic_load(&ran) == 1);
}

/* Two ready threads of priority 10 that cannot run yet (main outranks
 * them); main raises the second to 20: it runs first when main sleeps. */
static void test_raise_ready(void)
{
	atomic_store(&nrec, 0);
	pthread_t a = tp_spawn_sched(SCHED_FIFO, 10, recorder, (void *)10L);
	pthread_t b = tp_spawn_sched(SCHED_FIFO, 10, recorder, (void *)20L);
	struct sched_param sp = { .sched_priority = 20 };
	CHECK_OK(pthread_setschedparam(b, SCHED_FIFO, &sp));
	CHECK(atomic_load(&nrec) == 0);   /* neither has run yet */
	CHECK_OK(pthread_join(a, NULL));
	CHECK_OK(pthread_join(b, NULL));
	CHECK(atomic_load(&nrec) == 2);
	CHECK(order[0] == 20 && order[1] == 10);
}

static void *mutex_recorder(void *arg)
{
	atomic_fetch_add(&ready, 1);
	CHECK_OK(pthread_mutex_lock(&mutex));
	record((int)(long)arg);
	CHECK_OK(pthread_mutex_unlock(&mutex));
	return NULL;
}

/* The same for two threads blocked on a mutex: the raised one gets it
 * first (NPTL: the kernel requeues the futex waiter). */
static void test_raise_waiter(void)
{
	atomic_store(&nrec, 0);
	atomic_store(&ready, 0);
	CHECK_OK(pthread_mutex_lock(&mutex));
	pthread_t a = tp_spawn_sched(SCHED_FIFO, 10, mutex_recorder, (void *)10L);
	pthread_t b = tp_spawn_sched(SCHED_FIFO, 10, mutex_recorder, (void *)20L);
	while (atomic_load(&ready) < 2)
		nap();
	usleep(20000);   /* both blocked on the mutex */
	struct sched_param sp = { .sched_priority = 20 };
	CHECK_OK(pthread_setschedparam(b, SCHED_FIFO, &sp));
	CHECK_OK(pthread_mutex_unlock(&mutex));
	CHECK_OK(pthread_join(a, NULL));
	CHECK_OK(pthread_join(b, NULL));
	CHECK(atomic_load(&nrec) == 2);
	CHECK(order[0] == 20 && order[1] == 10);
}

static atomic_int turns, takers;

static void *taker(void *arg)
{
	cpu_set_t *cpu = arg;
	CHECK_OK(pthread_setaffinity_np(pthread_self(), sizeof *cpu, cpu));
	cpu_set_t got;
	CHECK_OK(pthread_getaffinity_np(pthread_self(), sizeof got, &got));
	CHECK(CPU_EQUAL(&got, cpu));
	atomic_fetch_add(&takers, 1);
	while (atomic_load(&takers) < 2)   /* both on the CPU before counting */
		sched_yield();
	int missed = 0;
	for (int i = 0; i < 1000; i++) {
		int before = atomic_load(&turns);
		sched_yield();
		if (atomic_fetch_add(&turns, 1) == before)
			missed++;   /* nobody ran in between */
	}
	return (void *)(long)missed;
}

static void test_affinity_yield(int cpu_id)
{
	cpu_set_t cpu;
	CPU_ZERO(&cpu);
	CPU_SET(cpu_id, &cpu);
	/* Equal priorities, below main's: they run while main joins. */
	pthread_t a = tp_spawn_sched(SCHED_FIFO, 20, taker, &cpu);
	pthread_t b = tp_spawn_sched(SCHED_FIFO, 20, taker, &cpu);
	void *ra, *rb;
	CHECK_OK(pthread_join(a, &ra));
	CHECK_OK(pthread_join(b, &rb));
	/* Each yield hands over to the other thread, but at the start and the
	 * end, where one of them is alone. */
	if ((long)ra + (long)rb > 2) {
		fprintf(stderr, "sched_yield: %ld and %ld of 1000 yields kept the CPU\n", (long)ra,
			(long)rb);
		exit(1);
	}
}

/* In a child process, before anything pins the CPUs: with two CPUs or
 * more, libppl runs two VPs, and only the affinity keeps the takers on one. */
static void test_affinity_yield_child(int cpu_id)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		test_affinity_yield(cpu_id);
		_exit(0);
	}
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void)
{
	struct sched_param sp = { .sched_priority = 50 };
	int err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	if (err == EPERM) {
		printf("prio: skipped, SCHED_FIFO needs privilege\n");
		return 77;
	}
	CHECK_OK(err);
	int policy;
	CHECK_OK(pthread_getschedparam(pthread_self(), &policy, &sp));
	CHECK(policy == SCHED_FIFO && sp.sched_priority == 50);
	CHECK(sched_getscheduler(0) == SCHED_FIFO);

	cpu_set_t all, one;
	CHECK(sched_getaffinity(0, sizeof all, &all) == 0);
	int cpu_id = 0;
	while (!CPU_ISSET(cpu_id, &all))
		cpu_id++;
	test_affinity_yield_child(cpu_id);

	CPU_ZERO(&one);
	CPU_SET(cpu_id, &one);
	CHECK(sched_setaffinity(0, sizeof one, &one) == 0);
	test_sem_order();
	test_mutex_order();
	test_create_preempts();
	test_no_lower_while_higher_runs();
	test_raise_ready();
	test_raise_waiter();
	printf("prio: ok\n");
	return 0;
}
