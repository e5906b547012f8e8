/* A thread blocked in read() on an empty pipe must not stop the compute
 * threads or main: they finish their work while it still waits, then main
 * writes the byte that releases it.  On one VP this needs the monitor. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "../preload/tp_util.h"

#define NCOMPUTE 3

static int fds[2];
static volatile int reader_done;

static void *reader(void *arg)
{
	(void)arg;
	char c;
	CHECK(read(fds[0], &c, 1) == 1);
	CHECK(c == 'x');
	reader_done = 1;
	return NULL;
}

static void *compute(void *arg)
{
	unsigned long x = (unsigned long)arg;
	for (long i = 0; i < 20000000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return (void *)(x | 1);
}

int main(void)
{
	alarm(60);
	CHECK(pipe(fds) == 0);
	pthread_t r, c[NCOMPUTE];
	CHECK_OK(pthread_create(&r, NULL, reader, NULL));
	/* Let the reader reach its read() first where it can. */
	usleep(20000);
	for (int i = 0; i < NCOMPUTE; i++)
		CHECK_OK(pthread_create(&c[i], NULL, compute, (void *)(long)i));
	for (int i = 0; i < NCOMPUTE; i++) {
		void *res;
		CHECK_OK(pthread_join(c[i], &res));
		CHECK(res != NULL);
	}
	CHECK(!reader_done);
	CHECK(write(fds[1], "x", 1) == 1);
	CHECK_OK(pthread_join(r, NULL));
	CHECK(reader_done);
	printf("compute threads finished while the reader was blocked\n");
	return 0;
}
