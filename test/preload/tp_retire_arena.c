/* Threads that never call malloc leave no malloc arena behind, as under
 * NPTL: glibc gives an arena to each thread that first calls malloc or
 * free, and every later fork locks, copies and unlocks all of them in both
 * processes (docs/benchmarks.md, fork).  libppl's own kernel threads must
 * not make one either: its helpers as they start, and the VPs that end
 * when the program is back to one thread (glibc's pthread_exit loads
 * libgcc_s with dlopen, which mallocs).  Several cycles of: a burst of
 * threads that yield and spin (preemption); join; wait (bounded) for one
 * task; count the heaps malloc_info lists: only the main arena's.  (No
 * blocking call: the spare VP of a hand-off, which the monitor allocates,
 * still gives the monitor an arena: docs/benchmarks.md.) */
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CYCLES 3
#define NTHREADS 64
static atomic_int go;

static int tasks(void)
{
	DIR *d = opendir("/proc/self/task");
	if (d == NULL) {
		perror("opendir /proc/self/task");
		exit(1);
	}
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void *yielder(void *arg)
{
	for (int i = 0; i < 10; i++)
		sched_yield();
	return arg;
}

static void *spinner(void *arg)
{
	while (!atomic_load(&go))
		;
	return arg;
}

static void *releaser(void *arg)
{
	nap_ms(2);
	atomic_store(&go, 1);
	return arg;
}

/* The arenas malloc_info lists (<heap nr="N">: one per arena). */
static int arenas(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (f == NULL || malloc_info(0, f) != 0) {
		perror("malloc_info");
		exit(1);
	}
	fclose(f);
	int n = 0;
	for (char *p = buf; (p = strstr(p, "<heap nr=")) != NULL; p++)
		n++;
	free(buf);
	return n;
}

static void cycle(int k)
{
	pthread_t t[NTHREADS], s, l;
	atomic_store(&go, 0);
	for (int i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, yielder, (void *)(long)(i + 1)) != 0) {
			fprintf(stderr, "cycle %d: pthread_create failed\n", k);
			exit(1);
		}
	if (pthread_create(&s, NULL, spinner, (void *)100L) != 0 ||
	    pthread_create(&l, NULL, releaser, (void *)101L) != 0) {
		fprintf(stderr, "cycle %d: pthread_create failed\n", k);
		exit(1);
	}
	void *res;
	for (int i = 0; i < NTHREADS; i++)
		if (pthread_join(t[i], &res) != 0 || res != (void *)(long)(i + 1)) {
			fprintf(stderr, "cycle %d: thread %d failed\n", k, i);
			exit(1);
		}
	if (pthread_join(s, &res) != 0 || res != (void *)100L || pthread_join(l, &res) != 0 ||
	    res != (void *)101L) {
		fprintf(stderr, "cycle %d: spinner or releaser failed\n", k);
		exit(1);
	}
	int n = 0;
	for (int i = 0; i < 1000 && (n = tasks()) != 1; i++)
		nap_ms(5);
	if (n != 1) {
		fprintf(stderr, "cycle %d: /proc/self/task still lists %d tasks after 5 s\n", k, n);
		exit(1);
	}
	int a = arenas();
	if (a != 1) {
		fprintf(stderr, "cycle %d: %d malloc arenas, the main one only expected\n", k, a);
		exit(1);
	}
}

int main(void)
{
	alarm(30);
	if (arenas() != 1) {
		fprintf(stderr, "%d malloc arenas before any thread\n", arenas());
		return 1;
	}
	for (int k = 0; k < CYCLES; k++)
		cycle(k);
	puts("ok");
	return 0;
}
