/* bench_alive [N]: N threads (default 10000) alive at once, each on a
 * 64 KiB stack and blocked on a condition variable.  Reports the time to
 * create them all (ns per thread) and the peak resident memory (VmHWM).
 * If pthread_create fails, says at which thread and why, and exits 1 after
 * releasing the threads it made. */
#include <pthread.h>

#include "bench.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t started_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t release_cv = PTHREAD_COND_INITIALIZER;
static long started, target;
static int released;

static void *worker(void *arg)
{
	BENCH_OK(pthread_mutex_lock(&m));
	if (++started == target)
		BENCH_OK(pthread_cond_signal(&started_cv));
	while (!released)
		BENCH_OK(pthread_cond_wait(&release_cv, &m));
	BENCH_OK(pthread_mutex_unlock(&m));
	return arg;
}

static long vmhwm_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (f == NULL)
		return -1;
	char line[256];
	long kb = -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static void release_and_join(pthread_t *t, long n)
{
	BENCH_OK(pthread_mutex_lock(&m));
	released = 1;
	BENCH_OK(pthread_cond_broadcast(&release_cv));
	BENCH_OK(pthread_mutex_unlock(&m));
	for (long i = 0; i < n; i++)
		BENCH_OK(pthread_join(t[i], NULL));
}

int main(int argc, char **argv)
{
	long n = bench_arg(argc, argv, 1, 10000);
	target = n;
	pthread_t *t = calloc((size_t)n, sizeof *t);
	if (t == NULL) {
		perror("calloc");
		return 1;
	}
	pthread_attr_t a;
	BENCH_OK(pthread_attr_init(&a));
	BENCH_OK(pthread_attr_setstacksize(&a, 64 * 1024));
	long long t0 = bench_now_ns();
	for (long i = 0; i < n; i++) {
		int err = pthread_create(&t[i], &a, worker, NULL);
		if (err != 0) {
			printf("alive-%ld failed at thread %ld: pthread_create: %s\n", n, i,
			       strerror(err));
			release_and_join(t, i);
			return 1;
		}
	}
	long long t1 = bench_now_ns();
	BENCH_OK(pthread_mutex_lock(&m));
	while (started < n)
		BENCH_OK(pthread_cond_wait(&started_cv, &m));
	BENCH_OK(pthread_mutex_unlock(&m));
	long long t2 = bench_now_ns();
	long hwm = vmhwm_kb();
	release_and_join(t, n);
	BENCH_OK(pthread_attr_destroy(&a));
	printf("alive-%ld %.1f ns/op vmhwm_kb=%ld all_started_ms=%.1f\n", n, (double)(t1 - t0) / n,
	       hwm, (t2 - t0) / 1e6);
	free(t);
	return 0;
}
