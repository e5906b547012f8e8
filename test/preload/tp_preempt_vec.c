/* Preemption keeps the whole register state: threads compute in vector
 * (SSE/NEON through GCC vector types, and AVX where the CPU has it) and
 * floating-point registers in tight loops and compare with a result
 * computed before any thread existed.  The threads first meet at a
 * barrier made of a spinning counter, so on one VP they only get past it
 * if they are preempted; then each loop runs for many time slices. */
/* Accumulators must live in registers even in a debug build. */
#pragma GCC optimize("O2")

#include <pthread.h>
#include <stdint.h>

#include "tp_util.h"

#define THREADS 4
#define ITERS 10000000L

typedef double v2d __attribute__((vector_size(16)));
typedef float v4f __attribute__((vector_size(16)));

static volatile int arrived;
static double expect_sse[THREADS], expect_avx[THREADS];
static int have_avx;

/* Keeps its accumulators in vector registers for the whole loop; the
 * result depends on every iteration, so a clobbered register shows. */
__attribute__((noinline)) static double sse_work(double seed, long iters)
{
	v2d a = { seed, seed + 1.0 }, b = { 1.0000001, 0.9999999 };
	v4f f = { (float)seed, 1.5f, 2.5f, 3.5f }, g = { 1.0000001f, 0.9999999f, 1.0f, 1.0f };
	double x = seed * 0.5;   /* scalar double: also an XMM register */
	for (long i = 0; i < iters; i++) {
		a = a * b + (v2d){ 1e-9, -1e-9 };
		f = f * g + (v4f){ 1e-7f, 0.0f, -1e-7f, 0.0f };
		x = x * 0.9999999 + 1e-7;
		__asm__ volatile("" : "+x"(a), "+x"(f), "+x"(x));
	}
	return a[0] + a[1] + f[0] + f[1] + f[2] + f[3] + x;
}

#if defined(__x86_64__)
typedef double v4d __attribute__((vector_size(32)));

__attribute__((noinline, target("avx"))) static double avx_work(double seed, long iters)
{
	v4d a = { seed, seed + 1.0, seed + 2.0, seed + 3.0 };
	v4d b = { 1.0000001, 0.9999999, 1.00000005, 0.99999995 };
	for (long i = 0; i < iters; i++) {
		a = a * b + (v4d){ 1e-9, -1e-9, 2e-9, -2e-9 };
		__asm__ volatile("" : "+x"(a));
	}
	return a[0] + a[1] + a[2] + a[3];
}

static int cpu_has_avx(void)
{
	return __builtin_cpu_supports("avx");
}
#else
static double avx_work(double seed, long iters)
{
	(void)seed;
	(void)iters;
	return 0;
}

static int cpu_has_avx(void)
{
	return 0;
}
#endif

static void *worker(void *arg)
{
	long i = (long)arg;
	__sync_fetch_and_add(&arrived, 1);
	while (arrived < THREADS)
		;   /* spins until every worker has run: needs preemption on one VP */
	double s = sse_work((double)i + 1.0, ITERS);
	CHECK(s == expect_sse[i]);
	if (have_avx) {
		double v = avx_work((double)i + 1.0, ITERS / 2);
		CHECK(v == expect_avx[i]);
	}
	return NULL;
}

int main(void)
{
	have_avx = cpu_has_avx();
	for (int i = 0; i < THREADS; i++) {
		expect_sse[i] = sse_work((double)i + 1.0, ITERS);
		if (have_avx)
			expect_avx[i] = avx_work((double)i + 1.0, ITERS / 2);
	}
	pthread_t t[THREADS];
	for (long i = 0; i < THREADS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, worker, (void *)i));
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	printf("%d threads computed the expected vector results (avx: %s)\n", THREADS,
	       have_avx ? "yes" : "no");
	return 0;
}
