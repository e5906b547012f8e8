/* What a burst of threads leaves for fork to copy: fork copies every page
 * table of a private mapping, however empty, so the page tables under the
 * stacks of joined threads must go back, as NPTL's do when it unmaps the
 * stacks beyond its cache.  2,000 threads on 256 KiB stacks (eight to a
 * page table) and 300 on 8 MiB stacks (one upper table per 1 GiB of them)
 * are created, all alive, and joined: VmPTE may grow by at most 256 KiB
 * (libppl kept 1 MiB and 120 KiB of them before).  The child of a fork
 * made meanwhile by one of threads still alive sees what a program may
 * reach: the other live threads' stack objects, the forking thread's own,
 * the heap, and a stack reused after the burst. */
#include <pthread.h>
#include <sys/wait.h>

#include "tp_util.h"

#define SMALL 2000
#define LARGE 300
#define KEEP 8

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int go, arrived;
static unsigned char *objs[KEEP];  /* a stack object of each thread kept alive */

static long vmpte_kb(void)
{
	int kb = tp_status_field("self", "VmPTE:");
	CHECK(kb >= 0);
	return kb;
}

static void *waiter(void *arg)
{
	unsigned char local[3000];   /* touches the stack */
	memset(local, (int)(long)arg, sizeof local);
	pthread_mutex_lock(&m);
	arrived++;
	pthread_cond_broadcast(&c);
	while (!go)
		pthread_cond_wait(&c, &m);
	pthread_mutex_unlock(&m);
	return local[100] == (unsigned char)(long)arg ? arg : NULL;
}

static void burst(pthread_t *t, int n, size_t stack)
{
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setstacksize(&a, stack));
	go = arrived = 0;
	for (int i = 0; i < n; i++)
		CHECK_OK(pthread_create(&t[i], &a, waiter, (void *)(long)(i & 0x7f)));
	pthread_mutex_lock(&m);
	while (arrived < n)
		pthread_cond_wait(&c, &m);
	go = 1;
	pthread_cond_broadcast(&c);
	pthread_mutex_unlock(&m);
	for (int i = 0; i < n; i++) {
		void *r;
		CHECK_OK(pthread_join(t[i], &r));
		CHECK(r == (void *)(long)(i & 0x7f));
	}
	CHECK_OK(pthread_attr_destroy(&a));
}

/* Kept alive across the fork: publishes a stack object, then waits. */
static pthread_mutex_t km = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t kc = PTHREAD_COND_INITIALIZER;
static int kept, release_kept;

static void *keeper(void *arg)
{
	long i = (long)arg;
	unsigned char obj[512];
	memset(obj, (int)(0xa0 + i), sizeof obj);
	pthread_mutex_lock(&km);
	objs[i] = obj;
	kept++;
	pthread_cond_broadcast(&kc);
	while (!release_kept)
		pthread_cond_wait(&kc, &km);
	pthread_mutex_unlock(&km);
	return NULL;
}

static int *heap_obj;

/* The forking thread: its child checks every object, its own too. */
static void *forker(void *arg)
{
	unsigned char mine[2048];
	memset(mine, 0x3c, sizeof mine);
	pid_t p = fork();
	if (p == 0) {
		for (int i = 0; i < KEEP; i++)
			for (int j = 0; j < 512; j++)
				if (objs[i][j] != (unsigned char)(0xa0 + i))
					_exit(2);
		for (int j = 0; j < 2048; j++)
			if (mine[j] != 0x3c)
				_exit(3);
		for (int j = 0; j < 1000; j++)
			if (heap_obj[j] != j)
				_exit(4);
		_exit(0);
	}
	int st = -1;
	if (p < 0 || waitpid(p, &st, 0) != p)
		return (void *)1;
	return (void *)(long)(WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st));
}

int main(void)
{
	alarm(60);
	static pthread_t t[SMALL];
	/* A few threads of each size first, for what is made once. */
	burst(t, 20, 256 << 10);
	burst(t, 20, 8 << 20);
	long before = vmpte_kb();
	burst(t, SMALL, 256 << 10);
	long small = vmpte_kb();
	burst(t, LARGE, 8 << 20);
	long large = vmpte_kb();
	printf("VmPTE %ld kB, %ld after %d threads on 256 KiB stacks, %ld after %d on 8 MiB\n",
	       before, small, SMALL, large, LARGE);
	CHECK(small - before <= 256);
	CHECK(large - before <= 256);

	heap_obj = malloc(1000 * sizeof *heap_obj);
	CHECK(heap_obj != NULL);
	for (int i = 0; i < 1000; i++)
		heap_obj[i] = i;
	pthread_t k[KEEP], f;
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setstacksize(&a, 256 << 10));
	for (long i = 0; i < KEEP; i++)
		CHECK_OK(pthread_create(&k[i], &a, keeper, (void *)i));
	pthread_mutex_lock(&km);
	while (kept < KEEP)
		pthread_cond_wait(&kc, &km);
	pthread_mutex_unlock(&km);
	void *r;
	CHECK_OK(pthread_create(&f, &a, forker, NULL));
	CHECK_OK(pthread_join(f, &r));
	CHECK(r == NULL);
	pthread_mutex_lock(&km);
	release_kept = 1;
	pthread_cond_broadcast(&kc);
	pthread_mutex_unlock(&km);
	for (int i = 0; i < KEEP; i++)
		CHECK_OK(pthread_join(k[i], NULL));
	CHECK_OK(pthread_attr_destroy(&a));
	free(heap_obj);
	puts("fork-burst: ok");
	return 0;
}
