/* 100 threads parked on a condition variable, main parked in
 * pthread_join: gdb (check_gdb.sh) must list them all and show the frames
 * where each waits.  Bounded: alarm. */
#include <pthread.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define N 100

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int parked, go;

static __attribute__((noinline)) void wait_for_go(void)
{
	pthread_mutex_lock(&m);
	parked++;
	while (!go)
		pthread_cond_wait(&c, &m);
	pthread_mutex_unlock(&m);
}

static void *worker(void *arg)
{
	wait_for_go();
	return arg;
}

int main(void)
{
	alarm(60);
	/* A debugger that is not our parent may attach (Yama ptrace_scope 1). */
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	pthread_t t[N];
	for (int i = 0; i < N; i++) {
		char name[16];
		if (pthread_create(&t[i], NULL, worker, NULL) != 0)
			abort();
		snprintf(name, sizeof name, "worker-%d", i);
		pthread_setname_np(t[i], name);
	}
	/* Let them all park, then say so: the debugger attaches now. */
	for (;;) {
		pthread_mutex_lock(&m);
		int n = parked;
		pthread_mutex_unlock(&m);
		if (n == N)
			break;
		usleep(1000);
	}
	printf("parked\n");
	fflush(stdout);
	/* Until a debugger or the alarm ends it. */
	pthread_join(t[0], NULL);
	return 0;
}
