/* Setting another thread's CPU set does not move the calling thread: on
 * NPTL the kernel moves only the thread the set is for.  libppl checked
 * the set on the caller's own kernel thread, so the caller's VP went to
 * the other thread's CPU and back in every call; under load each move
 * waited for a turn on that CPU, with every thread queued on the VP (0.1
 * to 0.5 s a call; glibc's tst-thread-affinity-pthread creates a thread
 * pinned to each CPU and timed out beside other tests).
 *
 * Main pins itself to the CPU it runs on, and sets the CPUs of threads
 * blocked on a semaphore (so that no VP runs them meanwhile) to another
 * CPU and back, 2 x 20 times.  The kernel counts the migrations of the
 * caller's kernel thread (se.nr_migrations in /proc/thread-self/sched, a
 * CONFIG_SCHED_DEBUG file: skipped without it): natively 0; libppl
 * before, at least two a call.  A few are allowed for the load balancer. */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tp_util.h"

#define THREADS 4
#define CALLS 20
#define ALLOWED 4

static sem_t go;
static sem_t parked;

static void *waiter(void *arg)
{
	(void)arg;
	CHECK(sem_post(&parked) == 0);
	CHECK(sem_wait(&go) == 0);
	return NULL;
}

/* The calling kernel thread's migrations so far, or -1. */
static long migrations(void)
{
	FILE *f = fopen("/proc/thread-self/sched", "r");
	if (f == NULL)
		return -1;
	char line[256];
	long n = -1;
	while (fgets(line, sizeof line, f))
		if (strncmp(line, "se.nr_migrations", 16) == 0) {
			char *colon = strchr(line, ':');
			if (colon)
				n = strtol(colon + 1, NULL, 10);
			break;
		}
	fclose(f);
	return n;
}

int main(void)
{
	alarm(30);
	cpu_set_t all, mine, other;
	CHECK(sched_getaffinity(0, sizeof all, &all) == 0);
	if (CPU_COUNT(&all) < 2 || migrations() < 0) {
		printf("skipped: needs 2 CPUs and /proc/thread-self/sched\n");
		return 77;
	}
	int here = sched_getcpu();
	CHECK(here >= 0 && CPU_ISSET(here, &all));
	int there = 0;
	while (there == here || !CPU_ISSET(there, &all))
		there++;
	CPU_ZERO(&mine);
	CPU_SET(here, &mine);
	CPU_ZERO(&other);
	CPU_SET(there, &other);
	CHECK_OK(pthread_setaffinity_np(pthread_self(), sizeof mine, &mine));

	CHECK(sem_init(&go, 0, 0) == 0);
	CHECK(sem_init(&parked, 0, 0) == 0);
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, waiter, NULL));
	for (int i = 0; i < THREADS; i++)
		CHECK(sem_wait(&parked) == 0);
	usleep(20000);   /* into sem_wait's sleep */

	long before = migrations();
	for (int i = 0; i < CALLS; i++) {
		pthread_t w = t[i % THREADS];
		CHECK_OK(pthread_setaffinity_np(w, sizeof other, &other));
		CHECK_OK(pthread_setaffinity_np(w, sizeof all, &all));
	}
	long moved = migrations() - before;
	CHECK(sched_getcpu() == here);

	for (int i = 0; i < THREADS; i++)
		CHECK(sem_post(&go) == 0);
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	printf("caller's kernel thread: %ld migrations in %d calls (CPU %d, others to %d)\n",
	       moved, 2 * CALLS, here, there);
	CHECK(moved <= ALLOWED);
	return 0;
}
