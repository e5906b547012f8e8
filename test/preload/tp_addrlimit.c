/* Threads under address-space and stack limits, each case in a child of
 * its own (the limits stay there):
 *  - RLIMIT_AS 512 MiB above what the process maps: threads with 64 KiB
 *    stacks are created until pthread_create says EAGAIN (never a crash),
 *    hundreds of them at least; all joined, one more can be created;
 *  - glibc's tst-create-detached: under an 800 MiB RLIMIT_AS, two threads
 *    with the default attributes (8 MiB stacks) are created, and they
 *    create 20,000 detached threads with 16 MiB stacks;
 *  - glibc's tst-pthread-getattr: after RLIMIT_STACK is lowered, every page
 *    of the initial thread's stack as pthread_getattr_np reports it can be
 *    reached;
 *  - RLIMIT_AS 1 GiB above what the process maps: 1,000 threads with
 *    64 KiB stacks block in read() on a pipe at once, then are released
 *    and joined (a thread library that hands each blocked call's other
 *    work to a kernel thread must not run out of address space doing so:
 *    a hang, killed by the child's alarm). */
#define _GNU_SOURCE 1
#include <alloca.h>
#include <errno.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "tp_util.h"

#define MAX_THREADS 20000

static long vm_size_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	CHECK(f != NULL);
	char line[256];
	long kib = -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmSize: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static void limit_as(rlim_t bytes)
{
	struct rlimit rl = { bytes, bytes };
	CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go = PTHREAD_COND_INITIALIZER;
static int released;

static void *wait_go(void *arg)
{
	pthread_mutex_lock(&lock);
	while (!released)
		pthread_cond_wait(&go, &lock);
	pthread_mutex_unlock(&lock);
	return arg;
}

static void many_threads(void)
{
	limit_as((rlim_t)vm_size_kib() * 1024 + (512UL << 20));
	static pthread_t t[MAX_THREADS];
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setstacksize(&a, 64 << 10));
	int n = 0, err = 0;
	while (n < MAX_THREADS && (err = pthread_create(&t[n], &a, wait_go, NULL)) == 0)
		n++;
	printf("%d threads of 64 KiB under RLIMIT_AS +512 MiB (then %s)\n", n,
	       err ? strerror(err) : "the cap");
	CHECK(err == 0 || err == EAGAIN);
	CHECK(n >= 500);
	pthread_mutex_lock(&lock);
	released = 1;
	pthread_cond_broadcast(&go);
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < n; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_OK(pthread_create(&t[0], &a, wait_go, NULL));
	CHECK_OK(pthread_join(t[0], NULL));
	CHECK_OK(pthread_attr_destroy(&a));
}

static void *nop(void *arg) { return arg; }

/* glibc's tst-create-detached: two creators with the default attributes
 * (which must be created), each creating detached threads with 16 MiB
 * stacks, failures ignored (the exited ones' stacks come back), until
 * DETACHED of them were created. */
#define DETACHED 20000
static _Atomic unsigned created;
static pthread_attr_t detached_attr;
static pthread_barrier_t start;

static void *creator(void *arg)
{
	pthread_barrier_wait(&start);
	while (created < DETACHED) {
		pthread_t t;
		if (pthread_create(&t, &detached_attr, nop, NULL) == 0)
			created++;
	}
	return arg;
}

static void create_detached(void)
{
	limit_as(800UL * 1024 * 1024);
	CHECK_OK(pthread_attr_init(&detached_attr));
	CHECK_OK(pthread_attr_setdetachstate(&detached_attr, PTHREAD_CREATE_DETACHED));
	CHECK_OK(pthread_attr_setstacksize(&detached_attr, 16 << 20));
	CHECK_OK(pthread_barrier_init(&start, NULL, 2));
	pthread_t c[2];
	for (int i = 0; i < 2; i++) {
		int err = pthread_create(&c[i], NULL, creator, NULL);
		if (err) {
			printf("creator %d under an 800 MiB RLIMIT_AS: %s\n", i, strerror(err));
			exit(1);
		}
	}
	for (int i = 0; i < 2; i++)
		CHECK_OK(pthread_join(c[i], NULL));
}

/* Where the deepest write landed (a global: the frame is gone after). */
static volatile uintptr_t reached;

static __attribute__((noinline)) void touch_down_to(char *target)
{
	volatile char *mem = (char *)&mem;
	mem = alloca((size_t)(mem - target));
	*mem = 42;
	reached = (uintptr_t)mem;
}

static void stack_top(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	pthread_attr_t a;
	void *addr;
	size_t size;
	CHECK_OK(pthread_getattr_np(pthread_self(), &a));
	CHECK_OK(pthread_attr_getstack(&a, &addr, &size));
	CHECK_OK(pthread_attr_destroy(&a));
	struct rlimit rl;
	CHECK(getrlimit(RLIMIT_STACK, &rl) == 0);
	size_t lower = size - page + 1;
	if (lower > 8192 * 1024 - 1)
		lower = 8192 * 1024 - 1;
	rl.rlim_cur = lower;
	CHECK(setrlimit(RLIMIT_STACK, &rl) == 0);
	CHECK_OK(pthread_getattr_np(pthread_self(), &a));
	CHECK_OK(pthread_attr_getstack(&a, &addr, &size));
	CHECK_OK(pthread_attr_destroy(&a));
	CHECK(size <= lower);
	touch_down_to((char *)addr + page / 2);
	CHECK((reached & ~(page - 1)) == ((uintptr_t)addr & ~(page - 1)));
}

#define READERS 1000
static int reader_pipe[2];
static atomic_int readers_in;

static void *reader(void *arg)
{
	char c;
	atomic_fetch_add(&readers_in, 1);
	CHECK(read(reader_pipe[0], &c, 1) == 1);
	return arg;
}

static void blocked_readers(void)
{
	alarm(30);
	CHECK(pipe(reader_pipe) == 0);
	limit_as((rlim_t)vm_size_kib() * 1024 + (1UL << 30));
	static pthread_t t[READERS];
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setstacksize(&a, 64 << 10));
	for (int i = 0; i < READERS; i++)
		CHECK_OK(pthread_create(&t[i], &a, reader, NULL));
	while (atomic_load(&readers_in) < READERS)
		usleep(1000);
	usleep(100 * 1000);   /* into read() */
	static char bytes[READERS];
	CHECK(write(reader_pipe[1], bytes, READERS) == READERS);
	for (int i = 0; i < READERS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_OK(pthread_attr_destroy(&a));
}

static void in_child(const char *name, void (*fn)(void), int with_thread)
{
	fflush(stdout);
	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0) {
		if (with_thread) {
			/* The runtime started before the limit. */
			pthread_t t;
			CHECK_OK(pthread_create(&t, NULL, nop, NULL));
			CHECK_OK(pthread_join(t, NULL));
		}
		fn();
		fflush(stdout);
		_exit(0);
	}
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		printf("%s%s: %s %d\n", name, with_thread ? " (after a thread)" : "",
		       WIFEXITED(st) ? "exit status" : "signal",
		       WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
		exit(1);
	}
}

int main(void)
{
	alarm(100);
	for (int w = 0; w < 2; w++) {
		in_child("stack top", stack_top, w);
		in_child("create detached", create_detached, w);
		in_child("many threads", many_threads, w);
		in_child("blocked readers", blocked_readers, w);
	}
	puts("addrlimit: ok");
	return 0;
}
