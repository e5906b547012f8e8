/* bench_vpstart [N] [REPS]: the cost of starting N virtual processors
 * (default 8; 11 repetitions).  Each repetition forks a fresh process that
 * has no thread yet and times, from its first pthread_create, until a thread
 * has run on each of N kernel threads: on libppl (PPL_VPS=N) on each VP, as
 * libppl's ppl_current_vp tells (found with dlsym, so the program stays
 * plain POSIX); natively on each of N new kernel threads.  The threads
 * yield until all N are seen, so that idle VPs find work to steal.  Median
 * ns per kernel thread started. */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define MAX_VPS 256

struct shared {
	atomic_int seen[MAX_VPS];
	atomic_int count;
	long long t0, t1;
};

static struct shared *sh;
static long nvps;
static int (*current_vp)(void);

static void *runner(void *arg)
{
	int me = (int)(size_t)arg;
	while (atomic_load(&sh->count) < nvps) {
		int v = current_vp ? current_vp() : me;
		if (v >= 0 && v < nvps && atomic_exchange(&sh->seen[v], 1) == 0 &&
		    atomic_fetch_add(&sh->count, 1) + 1 == nvps)
			sh->t1 = bench_now_ns();
		sched_yield();
	}
	return NULL;
}

static void one_start(void)
{
	pthread_t t[MAX_VPS];
	alarm(30); /* a VP that never runs a thread must not hang the run */
	sh->t0 = bench_now_ns();
	for (long i = 0; i < nvps; i++)
		BENCH_OK(pthread_create(&t[i], NULL, runner, (void *)(size_t)i));
	for (long i = 0; i < nvps; i++)
		BENCH_OK(pthread_join(t[i], NULL));
	_exit(0);
}

int main(int argc, char **argv)
{
	nvps = bench_arg(argc, argv, 1, 8);
	long reps = bench_arg(argc, argv, 2, 11);
	if (nvps > MAX_VPS) {
		fprintf(stderr, "%s: at most %d\n", argv[0], MAX_VPS);
		return 2;
	}
	current_vp = (int (*)(void))dlsym(RTLD_DEFAULT, "ppl_current_vp");
	sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	BENCH_OK(sh == MAP_FAILED ? errno : 0);
	double *ns = bench_alloc(reps, sizeof *ns);
	for (long r = 0; r < reps; r++) {
		memset(sh, 0, sizeof *sh);
		fflush(stdout);
		pid_t pid = fork();
		BENCH_OK(pid < 0 ? errno : 0);
		if (pid == 0)
			one_start();
		int status;
		BENCH_OK(waitpid(pid, &status, 0) < 0 ? errno : 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || sh->count != nvps) {
			fprintf(stderr, "%s: repetition %ld: status %#x, %d of %ld kernel threads seen\n",
				argv[0], r, status, (int)sh->count, nvps);
			return 1;
		}
		ns[r] = (double)(sh->t1 - sh->t0) / nvps;
	}
	printf("vpstart %.1f ns/op n=%ld reps=%ld\n", bench_median(ns, reps), nvps, reps);
	return 0;
}
