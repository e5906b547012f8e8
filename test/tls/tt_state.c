/* Per-thread C library state under per-thread TLS: errno, __thread,
 * strerror's buffer, dlerror, uselocale and sched_getcpu, each checked
 * across many switches (sched_yield) and, with several VPs, migrations. */
#include <dlfcn.h>
#include <ctype.h>
#include <errno.h>
#include <locale.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tp_util.h"

#define NTHREADS 16
#define ROUNDS 200

static __thread long tv = 42;
static __thread char tbuf[64];

static void *worker(void *arg)
{
	long id = (long)(intptr_t)arg;
	CHECK(tv == 42);          /* the init image, in a fresh or reused block */
	CHECK(tbuf[0] == '\0');
	CHECK(errno == 0);
	tv = id;
	snprintf(tbuf, sizeof tbuf, "thread %ld", id);

	/* strerror of an unknown number writes a per-thread buffer. */
	const char *msg = strerror(10000 + (int)id);
	char want[64];
	snprintf(want, sizeof want, "Unknown error %d", 10000 + (int)id);

	/* dlerror: each thread's last error is its own. */
	char lib[64];
	snprintf(lib, sizeof lib, "libtt-missing-%ld.so", id);
	CHECK(dlopen(lib, RTLD_NOW) == NULL);

	/* uselocale: odd threads switch to a private locale. */
	locale_t loc = (locale_t)0;
	if (id % 2) {
		loc = newlocale(LC_ALL_MASK, "C.UTF-8", (locale_t)0);
		if (loc != (locale_t)0)
			uselocale(loc);
	}
	size_t mbmax = MB_CUR_MAX;

	for (int r = 0; r < ROUNDS; r++) {
		errno = (int)id + r;
		sched_yield();
		CHECK(errno == (int)id + r);
		CHECK(tv == id);
		CHECK(strcmp(tbuf + 7, tbuf + 7) == 0 && atol(tbuf + 7) == id);
		CHECK(strcmp(msg, want) == 0);
		CHECK(MB_CUR_MAX == mbmax);
		CHECK(uselocale((locale_t)0) == (loc != (locale_t)0 ? loc : LC_GLOBAL_LOCALE));
		CHECK(isalpha('a') && !isalpha('1'));
		int cpu = sched_getcpu();
		CHECK(cpu >= 0);
	}
	const char *e = dlerror();
	CHECK(e != NULL && strstr(e, lib) != NULL);
	CHECK(dlerror() == NULL);
	if (loc != (locale_t)0) {
		uselocale(LC_GLOBAL_LOCALE);
		freelocale(loc);
	}
	return NULL;
}

/* sched_getcpu must match the kernel's answer (it reads the rseq area when
 * registered; a user thread's block says "not registered"). */
static void *cpu_worker(void *arg)
{
	int agree = 0;
	for (int i = 0; i < 100; i++) {
		unsigned cpu = 0;
		int a = sched_getcpu();
		syscall(SYS_getcpu, &cpu, NULL, NULL);
		agree += a == (int)cpu;
	}
	CHECK(agree >= 90);
	return NULL;
}

int main(void)
{
	for (int round = 0; round < 3; round++) {   /* later rounds reuse blocks */
		pthread_t t[NTHREADS];
		for (long i = 0; i < NTHREADS; i++)
			CHECK_OK(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)(i + 1)));
		for (int i = 0; i < NTHREADS; i++)
			CHECK_OK(pthread_join(t[i], NULL));
		CHECK_OK(pthread_create(&t[0], NULL, cpu_worker, NULL));
		CHECK_OK(pthread_join(t[0], NULL));
	}
	CHECK(tv == 42);
	puts("ok");
	return 0;
}
