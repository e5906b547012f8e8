/* Two threads take two mutexes in opposite orders (a barrier makes the
 * interleaving certain) while main joins them: every thread blocks for
 * good.  With PPL_DEADLOCK=abort libppl says so and aborts. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both;

static void *one(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&a);
	pthread_barrier_wait(&both);
	pthread_mutex_lock(&b);
	return NULL;
}

static void *two(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&b);
	pthread_barrier_wait(&both);
	pthread_mutex_lock(&a);
	return NULL;
}

int main(void)
{
	alarm(20);   /* no report: SIGALRM, not the expected SIGABRT */
	pthread_barrier_init(&both, NULL, 2);
	pthread_t t1, t2;
	pthread_create(&t1, NULL, one, NULL);
	pthread_create(&t2, NULL, two, NULL);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	printf("not reached\n");
	return 0;
}
