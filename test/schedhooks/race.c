/* A planted lost-update race: each thread reads a shared counter, calls
 * into the thread library (a mutex of its own, a condition signal), and
 * writes the counter back plus one.  A switch to another thread between
 * the read and the write loses updates.  Exits 0 if the count is right,
 * 1 if updates were lost.  Under PPL_SCHED_SEED the outcome depends only
 * on the seed (test/schedhooks/check_detsched.py). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define THREADS 3

static int iters = 8;
static volatile long counter;
static pthread_mutex_t own[THREADS];
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void *work(void *arg)
{
	pthread_mutex_t *m = arg;
	for (int i = 0; i < iters; i++) {
		long v = counter;                  /* read */
		pthread_mutex_lock(m);             /* library calls: a place to switch */
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(m);
		counter = v + 1;                   /* write */
	}
	return NULL;
}

int main(int argc, char **argv)
{
	alarm(20);
	if (argc > 1)
		iters = atoi(argv[1]);
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++) {
		pthread_mutex_init(&own[i], NULL);
		if (pthread_create(&t[i], NULL, work, &own[i]) != 0)
			return 2;
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	long want = (long)THREADS * iters;
	printf("counter %ld of %ld\n", counter, want);
	return counter == want ? 0 : 1;
}
