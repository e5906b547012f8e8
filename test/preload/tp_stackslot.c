/* tp_stackslot: a thread's TLS block and descriptor live at the top of its
 * stack, as NPTL keeps them (docs/tls.md).
 *  - 2,000 threads alive on 64 KiB stacks: the heap grows by less than
 *    3 KiB per thread (a TLS block on the heap is 4.2 KiB, with its DTV and
 *    the TCB 6.3) and the resident size by less than 12 KiB;
 *  - in such a thread, errno and a __thread variable lie inside the stack
 *    pthread_getattr_np reports (64 KiB, the guard asked for), above the
 *    thread's frames;
 *  - on an application's stack (pthread_attr_setstack) likewise, and the
 *    reported stack is exactly the application's; 300 threads one after
 *    another on stacks unmapped after each join use malloc, stdio and
 *    strerror without the heap growing (the C library's per-thread malloc
 *    state must outlive the memory its block was in);
 *  - 300 threads alive on 1 MiB stacks, each touching 256 KiB of it, then
 *    joined: the stacks kept for reuse hold at most about 40 MiB of stack
 *    (NPTL's stack cache; libppl's TCB cache and hot stacks each): less
 *    than 30 MiB stays resident of the 75 touched.
 * Where the per-thread TLS blocks are not in stacks (shared TLS, or the
 * ldt switch method's blocks below 4 GiB) the placement checks are skipped. */
#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>

#include "tp_util.h"

#define ALIVE 2000
#define STACK (64 * 1024)
#define SERIAL 300

static __thread int tvar = 7;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long started;
static int released;
static int placement;   /* 1: in the stack, 0: skipped, -1: wrong */

static size_t heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	CHECK(f != NULL);
	long size, res;
	CHECK(fscanf(f, "%ld %ld", &size, &res) == 2);
	fclose(f);
	return res * (sysconf(_SC_PAGESIZE) / 1024);
}

static bool tls_in_stacks(void)
{
	const char *t = getenv("PPL_TLS");
	return t == NULL || strcmp(t, "shared") != 0;
}

/* Where this thread's TLS is against the stack pthread_getattr_np reports. */
static int check_placement(void *want_lo, size_t want_size, size_t want_guard)
{
	pthread_attr_t a;
	CHECK_OK(pthread_getattr_np(pthread_self(), &a));
	void *lo;
	size_t size, guard;
	CHECK_OK(pthread_attr_getstack(&a, &lo, &size));
	CHECK_OK(pthread_attr_getguardsize(&a, &guard));
	CHECK_OK(pthread_attr_destroy(&a));
	CHECK(size == want_size);
	if (want_lo != NULL)
		CHECK(lo == want_lo);
	else
		CHECK(guard == want_guard);
	char frame;
	char *b = lo, *e = b + size;
	CHECK(&frame >= b && &frame < e);
	if (!tls_in_stacks() || (uintptr_t)&tvar < (1ULL << 32))
		return 0;   /* shared TLS, or a low block of the ldt method */
	if ((char *)&tvar < b || (char *)&tvar >= e || (char *)&errno < b || (char *)&errno >= e ||
	    (char *)&tvar < &frame) {
		fprintf(stderr, "stack [%p, %p), frame %p, __thread %p, errno %p\n", (void *)b,
			(void *)e, (void *)&frame, (void *)&tvar, (void *)&errno);
		return -1;
	}
	return 1;
}

static void *alive(void *arg)
{
	CHECK(tvar == 7 || !tls_in_stacks());
	int p = arg != NULL ? check_placement(NULL, STACK, (size_t)sysconf(_SC_PAGESIZE)) : 1;
	pthread_mutex_lock(&m);
	if (p < placement)
		placement = p;
	started++;
	pthread_cond_broadcast(&cv);
	while (!released)
		CHECK_OK(pthread_cond_wait(&cv, &m));
	pthread_mutex_unlock(&m);
	return NULL;
}

static void *on_user_stack(void *arg)
{
	CHECK(tvar == 7 || !tls_in_stacks());   /* shared TLS: the VP's */
	tvar = 8;
	int p = check_placement(arg, STACK, 0);
	CHECK(p >= 0);
	/* The C library's per-thread state: malloc's cache, stdio, strerror. */
	void *q[8];
	for (int i = 0; i < 8; i++)
		CHECK((q[i] = malloc(32 + 100 * (size_t)i)) != NULL);
	for (int i = 0; i < 8; i++)
		free(q[i]);
	char buf[64];
	snprintf(buf, sizeof buf, "%s %d", strerror(EINVAL), tvar);
	CHECK(strstr(buf, " 8") != NULL);
	errno = ENOENT;
	tvar = 7;
	return (void *)(intptr_t)p;
}

static int user_stack_thread(void)
{
	void *s = mmap(NULL, STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(s != MAP_FAILED);
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setstack(&a, s, STACK));
	pthread_t t;
	CHECK_OK(pthread_create(&t, &a, on_user_stack, s));
	CHECK_OK(pthread_attr_destroy(&a));
	void *r;
	CHECK_OK(pthread_join(t, &r));
	CHECK(munmap(s, STACK) == 0);   /* nothing may use it any more */
	return (int)(intptr_t)r;
}

#define BIG_STACK (1024 * 1024)
#define BIG_TOUCH (256 * 1024)
#define BIG_N 300

static void *toucher(void *arg)
{
	volatile char *p = __builtin_alloca(BIG_TOUCH);
	for (size_t i = 0; i < BIG_TOUCH; i += 4096)
		p[i] = 1;
	pthread_mutex_lock(&m);
	started++;
	pthread_cond_broadcast(&cv);
	while (!released)
		CHECK_OK(pthread_cond_wait(&cv, &m));
	pthread_mutex_unlock(&m);
	return NULL;
}

/* Resident KiB that stays after BIG_N threads touched BIG_TOUCH each. */
static long stack_cache_kept(void)
{
	pthread_t *t = calloc(BIG_N, sizeof *t);
	CHECK(t != NULL);
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setstacksize(&a, BIG_STACK));
	started = 0;
	released = 0;
	long rss0 = rss_kib();
	for (int i = 0; i < BIG_N; i++)
		CHECK_OK(pthread_create(&t[i], &a, toucher, NULL));
	pthread_mutex_lock(&m);
	while (started < BIG_N)
		CHECK_OK(pthread_cond_wait(&cv, &m));
	released = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&m);
	long rss1 = rss_kib();
	for (int i = 0; i < BIG_N; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_OK(pthread_attr_destroy(&a));
	free(t);
	long kept = rss_kib() - rss0;
	printf("1 MiB stacks: %ld KiB resident while alive, %ld KiB kept after the joins\n",
	       rss1 - rss0, kept);
	return kept;
}

int main(void)
{
	alarm(60);
	pthread_t *t = calloc(ALIVE, sizeof *t);
	CHECK(t != NULL);
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setstacksize(&a, STACK));
	/* The runtime's own start-up before measuring. */
	CHECK_OK(pthread_create(&t[0], &a, alive, NULL));
	pthread_mutex_lock(&m);
	while (started < 1)
		CHECK_OK(pthread_cond_wait(&cv, &m));
	pthread_mutex_unlock(&m);

	size_t heap0 = heap_bytes();
	long rss0 = rss_kib();
	placement = 1;
	for (long i = 1; i < ALIVE; i++)
		CHECK_OK(pthread_create(&t[i], &a, alive, i < 50 ? (void *)1 : NULL));
	pthread_mutex_lock(&m);
	while (started < ALIVE)
		CHECK_OK(pthread_cond_wait(&cv, &m));
	pthread_mutex_unlock(&m);
	double heap_per = (double)(heap_bytes() - heap0) / (ALIVE - 1) / 1024;
	double rss_per = (double)(rss_kib() - rss0) / (ALIVE - 1);
	printf("per thread alive: heap %.2f KiB, resident %.2f KiB; TLS placement %d\n", heap_per,
	       rss_per, placement);
	pthread_mutex_lock(&m);
	released = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&m);
	for (long i = 0; i < ALIVE; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_OK(pthread_attr_destroy(&a));
	CHECK(placement >= 0);
	CHECK(heap_per < 3.0);
	CHECK(rss_per < 12.0);

	int in_stack = 0;
	size_t heap1 = 0;
	for (int i = 0; i < SERIAL; i++) {
		if (i == 20)
			heap1 = heap_bytes();
		in_stack += user_stack_thread();
	}
	size_t heap2 = heap_bytes();
	printf("application stacks: TLS inside %d of %d; heap %+ld bytes over %d threads\n",
	       in_stack, SERIAL, (long)heap2 - (long)heap1, SERIAL - 20);
	CHECK(heap2 < heap1 + 64 * 1024);
	free(t);
	CHECK(stack_cache_kept() < 30 * 1024);
	return 0;
}
