/* mutex_stats: PPL_STATS's mutex counters.  A lock that finds the mutex
 * held counts one mutex-wait, the unlock that wakes its waiter one
 * mutex-wake; a thread that locks and unlocks alone counts neither.
 * Exit 0 and "ok" when they do; bounded (10 s) however slow the machine. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ppl.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static void *locker(void *arg)
{
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
	return arg;
}

/* The value of `key`=N in ppl_stats_print's line (written to stderr, read
 * back through a temporary file); -1 if it is not there. */
static long counter(const char *key)
{
	char line[1024] = "";
	fflush(stderr);
	FILE *f = tmpfile();
	int saved = dup(2);
	if (f == NULL || saved < 0 || dup2(fileno(f), 2) < 0)
		return -1;
	ppl_stats_print();
	dup2(saved, 2);
	close(saved);
	rewind(f);
	size_t n = fread(line, 1, sizeof line - 1, f);
	line[n] = '\0';
	fclose(f);
	char pat[64];
	snprintf(pat, sizeof pat, " %s=", key);
	char *p = strstr(line, pat);
	return p ? strtol(p + strlen(pat), NULL, 10) : -1;
}

static int fail(const char *what, long waits, long wakes)
{
	fprintf(stderr, "mutex_stats: %s (mutex-waits=%ld mutex-wakes=%ld)\n", what, waits, wakes);
	return 1;
}

int main(void)
{
	pthread_t t;
	/* Alone: the uncontended path counts nothing. */
	if (pthread_create(&t, NULL, locker, NULL) != 0 || pthread_join(t, NULL) != 0)
		return fail("pthread_create", -1, -1);
	long waits0 = counter("mutex-waits"), wakes0 = counter("mutex-wakes");
	if (waits0 != 0 || wakes0 != 0)
		return fail("uncontended locks were counted", waits0, wakes0);

	pthread_mutex_lock(&m);
	if (pthread_create(&t, NULL, locker, NULL) != 0)
		return fail("pthread_create", -1, -1);
	/* Until the locker has found the mutex held (it then waits). */
	long waits = 0;
	for (int i = 0; i < 1000 && (waits = counter("mutex-waits")) == 0; i++)
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	pthread_mutex_unlock(&m);
	if (pthread_join(t, NULL) != 0)
		return fail("pthread_join", -1, -1);
	waits = counter("mutex-waits");
	long wakes = counter("mutex-wakes");
	if (waits != 1 || wakes != 1)
		return fail("want one wait and one wake", waits, wakes);
	puts("ok");
	return 0;
}
