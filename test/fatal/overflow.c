/* A thread that recurses without bound: libppl must end the process with a
 * one-line message naming the thread and its stack size (not a bare SIGSEGV).
 * With the argument "cancel" the thread has a deferred cancel pending: the
 * message is written all the same (libppl's own write is no cancellation
 * point) and the process aborts instead of the thread unwinding. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int rec(int n)
{
	volatile char buf[512];
	buf[0] = (char)n;
	return n ? rec(n - 1) + buf[0] : 0;
}

static void *deep(void *arg)
{
	pthread_setname_np(pthread_self(), "deep");
	if (arg)
		pthread_cancel(pthread_self());
	return (void *)(long)rec(1 << 30);
}

int main(int argc, char **argv)
{
	pthread_attr_t a;
	pthread_t t;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	if (pthread_create(&t, &a, deep, argc > 1 && strcmp(argv[1], "cancel") == 0 ? "" : NULL) != 0)
		return 1;
	pthread_join(t, NULL);
	puts("unreachable: the recursion returned");
	return 0;
}
