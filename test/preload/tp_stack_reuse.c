/* After a burst of threads, threads that come and go a few at a time get
 * stacks that are still mapped and touched: libppl keeps a few freed stacks
 * hot (stack.c) behind its TCB cache (thread.c), and a burst's many freed
 * stacks, which go cold, must not hide them.  When they did, every thread
 * beyond the TCB cache's four 8 MiB stacks mapped and faulted in a stack of
 * its own (a quicksort with a thread per partition spent as long on that
 * as on sorting).  Counted in stacks, not time: waves of WAVE threads alive
 * at once after a burst of BURST, each of which looks whether the page
 * TOUCH bytes below its frame is resident (mincore) before it writes the
 * TOUCH bytes below its frame: on a stack a thread of an earlier wave used,
 * it is.  (Page fault
 * counts would not do: with VP processes, getrusage sees one process.)
 * NPTL keeps 40 MiB of stacks, four of the default size: its extra stacks
 * are mapped anew, so the bound holds on libppl only (the native run
 * prints its figure for reference). */
#include <pthread.h>
#include <stdint.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "tp_util.h"

#define BURST 200
#define WAVE 10     /* more than the TCB cache's 4, fewer than 4 + 8 hot */
#define WAVES 50
#define TOUCH 8192

static pthread_barrier_t wave_barrier;
static atomic_int fresh_stacks;

/* A frame of its own (a frame this big is probed page by page as it is
 * made, with gcc's -fstack-clash-protection: the look comes before). */
static __attribute__((noinline)) int dig(void)
{
	volatile char buf[TOUCH];
	memset((char *)buf, 1, sizeof buf);
	return buf[TOUCH / 2];
}

static void *touch(void *arg)
{
	char here;
	long page = sysconf(_SC_PAGESIZE);
	unsigned char in = 0;
	uintptr_t deep = ((uintptr_t)&here - TOUCH) & ~(uintptr_t)(page - 1);
	CHECK(mincore((void *)deep, 1, &in) == 0);
	if (!(in & 1))
		atomic_fetch_add(&fresh_stacks, 1);
	int v = dig();
	int r = pthread_barrier_wait(&wave_barrier);
	CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
	return (void *)(uintptr_t)v;
}

static void *nothing(void *arg)
{
	return arg;
}

int main(void)
{
	alarm(60);
	static pthread_t t[BURST];
	for (int i = 0; i < BURST; i++)
		CHECK_OK(pthread_create(&t[i], NULL, nothing, NULL));
	for (int i = 0; i < BURST; i++)
		CHECK_OK(pthread_join(t[i], NULL));

	CHECK_OK(pthread_barrier_init(&wave_barrier, NULL, WAVE));
	/* One wave first, whose stacks are new on either library. */
	for (int w = 0; w <= WAVES; w++) {
		if (w == 1)
			atomic_store(&fresh_stacks, 0);
		for (int i = 0; i < WAVE; i++)
			CHECK_OK(pthread_create(&t[i], NULL, touch, NULL));
		for (int i = 0; i < WAVE; i++)
			CHECK_OK(pthread_join(t[i], NULL));
	}
	int fresh = atomic_load(&fresh_stacks);
	printf("%d of %d threads in waves of %d after a burst of %d had a fresh stack\n", fresh,
	       WAVES * WAVE, WAVE, BURST);
	if (tp_expect_ult())
		CHECK(fresh == 0);
	CHECK_OK(pthread_barrier_destroy(&wave_barrier));
	puts("PASS");
	return 0;
}
