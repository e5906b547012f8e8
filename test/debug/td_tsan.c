/* td_tsan [race]: ThreadSanitizer under libppl (check_tsan.sh).  Without an
 * argument every shared access is ordered by a libppl handoff TSan must see:
 * a mutex, a condition variable, a semaphore, a barrier, pthread_join, and
 * thread-local data that is never shared; it must report nothing.  "race"
 * adds one unsynchronised increment of a shared counter in every thread,
 * which TSan must report as a data race. */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 4

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t bar;
static sem_t sem;
static long locked;        /* under m */
static int ready;          /* under m, waited for on cv */
static long handed[N];     /* written before sem_post, read after sem_wait */
static long joined[N];     /* written by the thread, read after pthread_join */
static long barriered[N];  /* written before the barrier, read after it */
static long racy;          /* the planted race */
static int race;
static __thread long mine; /* never shared */

static void *worker(void *arg)
{
	long i = (long)arg;
	for (int k = 0; k < 100; k++) {
		mine++;
		pthread_mutex_lock(&m);
		locked++;
		pthread_mutex_unlock(&m);
	}
	pthread_mutex_lock(&m);
	while (!ready)
		pthread_cond_wait(&cv, &m);
	pthread_mutex_unlock(&m);
	handed[i] = i + 1;
	sem_post(&sem);
	barriered[i] = i;
	pthread_barrier_wait(&bar);
	long sum = 0;
	for (int j = 0; j < N; j++)
		sum += barriered[j];
	if (sum != N * (N - 1) / 2)
		abort();
	if (race)
		racy++;
	joined[i] = mine;
	return NULL;
}

int main(int argc, char **argv)
{
	alarm(60);
	race = argc > 1 && strcmp(argv[1], "race") == 0;
	pthread_t t[N];
	pthread_barrier_init(&bar, NULL, N);
	sem_init(&sem, 0, 0);
	for (long i = 0; i < N; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i) != 0)
			abort();
	pthread_mutex_lock(&m);
	ready = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&m);
	long h = 0;
	for (int i = 0; i < N; i++)
		sem_wait(&sem);
	for (int i = 0; i < N; i++)
		h += handed[i];
	long j = 0;
	for (int i = 0; i < N; i++) {
		pthread_join(t[i], NULL);
		j += joined[i];
	}
	pthread_barrier_destroy(&bar);
	sem_destroy(&sem);
	printf("tsan %s: locked %ld handed %ld joined %ld\n", race ? "race" : "clean", locked, h, j);
	return locked == 100 * N && h == N * (N + 1) / 2 && j == 100 * N ? 0 : 1;
}
