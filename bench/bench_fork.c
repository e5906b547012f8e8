/* bench_fork [N] [FORKS]: fork cost after a burst of threads.  N threads
 * (default 10000) are created, all alive at once, then joined; then the
 * process forks FORKS times (default 200), each child exiting at once and
 * reaped before the next fork.  Prints the median microseconds per
 * fork+exit+waitpid over five batches of FORKS/5.  fork copies the page
 * tables of every resident page: what a thread library keeps mapped after
 * its threads are gone (stacks, guards, TLS) is paid again at each fork. */
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int go;

static void *waiter(void *arg)
{
	BENCH_OK(pthread_mutex_lock(&m));
	while (!go)
		BENCH_OK(pthread_cond_wait(&c, &m));
	BENCH_OK(pthread_mutex_unlock(&m));
	return arg;
}

int main(int argc, char **argv)
{
	long n = bench_arg(argc, argv, 1, 10000);
	long forks = bench_arg(argc, argv, 2, 200);
	pthread_t *t = bench_alloc((size_t)n, sizeof *t);
	for (long i = 0; i < n; i++)
		BENCH_OK(pthread_create(&t[i], NULL, waiter, NULL));
	BENCH_OK(pthread_mutex_lock(&m));
	go = 1;
	BENCH_OK(pthread_cond_broadcast(&c));
	BENCH_OK(pthread_mutex_unlock(&m));
	for (long i = 0; i < n; i++)
		BENCH_OK(pthread_join(t[i], NULL));

	long batch = forks >= 5 ? forks / 5 : 1;
	double us[5];
	for (int b = 0; b < 5; b++) {
		long long t0 = bench_now_ns();
		for (long i = 0; i < batch; i++) {
			pid_t p = fork();
			if (p < 0) {
				perror("bench_fork: fork");
				return 1;
			}
			if (p == 0)
				_exit(0);
			if (waitpid(p, NULL, 0) != p) {
				perror("bench_fork: waitpid");
				return 1;
			}
		}
		us[b] = (double)(bench_now_ns() - t0) / 1000.0 / (double)batch;
	}
	printf("fork-after-%ld %.1f us/fork\n", n, bench_median(us, 5));
	return 0;
}
