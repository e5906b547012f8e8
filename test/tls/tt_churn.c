/* 100,000 thread create/exit cycles, each thread using malloc, stdio,
 * errno, __thread and strerror: resident memory must stay flat (TLS blocks
 * and the C library's per-thread malloc state are pooled with the TCBs). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_util.h"

#define BATCH 8

static __thread char *tbuf;

static void *worker(void *arg)
{
	CHECK(tbuf == NULL);
	tbuf = malloc(100 + ((uintptr_t)arg % 900));
	CHECK(tbuf != NULL);
	snprintf(tbuf, 100, "%s", strerror(EINVAL));
	errno = EIO;
	void *p[8];
	for (int i = 0; i < 8; i++)
		p[i] = malloc(32 << i);
	for (int i = 0; i < 8; i++)
		free(p[i]);
	free(tbuf);
	tbuf = NULL;
	return NULL;
}

static long rss_kb(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long pages = 0, res = 0;
	CHECK(f != NULL && fscanf(f, "%ld %ld", &pages, &res) == 2);
	fclose(f);
	return res * (sysconf(_SC_PAGESIZE) / 1024);
}

int main(int argc, char **argv)
{
	long total = argc > 1 ? atol(argv[1]) : 100000;
	long base = 0;
	for (long n = 0; n < total; n += BATCH) {
		pthread_t t[BATCH];
		for (int i = 0; i < BATCH; i++)
			CHECK_OK(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)(n + i)));
		for (int i = 0; i < BATCH; i++)
			CHECK_OK(pthread_join(t[i], NULL));
		if (n == total / 10 - total / 10 % BATCH)
			base = rss_kb();
	}
	long end = rss_kb();
	printf("rss after %ld cycles: %ld kB; after %ld: %ld kB\n", total / 10, base, total, end);
	CHECK(end - base < 2048);
	puts("ok");
	return 0;
}
