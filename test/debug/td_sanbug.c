/* td_sanbug KIND: a bug of one kind, planted in a user thread, that the
 * matching sanitizer must catch under libppl as it does natively:
 * "heap" (-fsanitize=address: a heap buffer overflow) or "signed"
 * (-fsanitize=undefined: a signed integer overflow).  "none" runs the
 * same threads without the bug.  check_san.sh runs it. */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *kind;
static volatile int one = 1;

static __attribute__((noinline)) int planted(void)
{
	if (strcmp(kind, "heap") == 0) {
		char *p = malloc(16);
		p[15 + one] = 1;   /* one past the end */
		int r = p[0];
		free(p);
		return r;
	}
	if (strcmp(kind, "signed") == 0) {
		int x = INT_MAX - 1 + one;
		return x + one;    /* INT_MAX + 1 */
	}
	return 0;
}

static void *worker(void *arg)
{
	(void)arg;
	return (void *)(long)planted();
}

int main(int argc, char **argv)
{
	alarm(30);
	kind = argc > 1 ? argv[1] : "none";
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, worker, NULL) != 0)
			abort();
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("sanbug %s: done\n", kind);
	return 0;
}
