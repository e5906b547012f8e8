/* Preemption and the C library's own locks: threads that spend nearly all
 * their time inside stdio (one shared FILE, whose lock is glibc's, not a
 * pthread mutex) and malloc.  A thread preempted while it holds such a
 * lock would block its whole VP when the next thread there asks for it,
 * so a tick inside the C library is deferred, never acted on: the run must
 * complete.  The workers first meet at a spinning barrier, which on one VP
 * they pass only by being preempted. */
#include <pthread.h>
#include <stdlib.h>

#include "tp_util.h"

#define THREADS 6
#define LINES 40000

static FILE *out;
static volatile int arrived;

static void *worker(void *arg)
{
	long id = (long)arg;
	__sync_fetch_and_add(&arrived, 1);
	while (arrived < THREADS)
		;
	char buf[64];
	for (int i = 0; i < LINES; i++) {
		char *p = malloc(32 + (size_t)(i % 512));
		CHECK(p != NULL);
		snprintf(buf, sizeof buf, "%ld:%d", id, i);
		CHECK(fprintf(out, "thread %ld line %d %s %f\n", id, i, buf, i * 0.5) > 0);
		free(p);
	}
	return NULL;
}

int main(void)
{
	out = fopen("/dev/null", "w");
	CHECK(out != NULL);
	pthread_t t[THREADS];
	for (long i = 0; i < THREADS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, worker, (void *)i));
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK(fclose(out) == 0);
	printf("%d threads printed %d lines each\n", THREADS, LINES);
	return 0;
}
