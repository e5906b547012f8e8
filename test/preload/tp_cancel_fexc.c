/* C built with -fexceptions: cleanup handlers and cleanup attributes run
 * through the unwinder on cancellation and pthread_exit, innermost first;
 * and the main thread can pthread_exit, running its handlers, while
 * another thread carries on (the process then exits with status 0). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

#include "tp_util.h"

static atomic_int order[8], norder, started, main_done;

static void record(void *arg)
{
	int i = atomic_fetch_add(&norder, 1);
	if (i < 8)
		atomic_store(&order[i], (int)(intptr_t)arg);
}

static void scoped(int *v)
{
	record((void *)(intptr_t)*v);
}

static void inner(void)
{
	int v __attribute__((cleanup(scoped))) = 3;
	pthread_cleanup_push(record, (void *)2);
	atomic_store(&started, 1);
	for (;;)
		pthread_testcancel();
	pthread_cleanup_pop(0);
	(void)v;
}

static void *worker(void *arg)
{
	pthread_cleanup_push(record, (void *)1);
	inner();
	pthread_cleanup_pop(0);
	return NULL;
}

static void *survivor(void *arg)
{
	/* Runs on after main has called pthread_exit. */
	for (int i = 0; i < 5000 && !atomic_load(&main_done); i++)
		usleep(1000);
	if (!atomic_load(&main_done)) {
		fprintf(stderr, "main's cleanup handler did not run\n");
		_exit(1);
	}
	return NULL;
}

static void main_handler(void *arg)
{
	atomic_store(&main_done, 1);
}

int main(void)
{
	pthread_t t;
	void *res;
	CHECK_OK(pthread_create(&t, NULL, worker, NULL));
	while (!atomic_load(&started))
		usleep(1000);
	CHECK_OK(pthread_cancel(t));
	CHECK_OK(pthread_join(t, &res));
	CHECK(res == PTHREAD_CANCELED);
	CHECK(atomic_load(&norder) == 3);
	CHECK(atomic_load(&order[0]) == 2);
	CHECK(atomic_load(&order[1]) == 3);
	CHECK(atomic_load(&order[2]) == 1);

	CHECK_OK(pthread_create(&t, NULL, survivor, NULL));
	pthread_cleanup_push(main_handler, NULL);
	pthread_exit(NULL);
	pthread_cleanup_pop(0);
	return 1;
}
