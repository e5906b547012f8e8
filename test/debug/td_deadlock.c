/* Two threads take two mutexes in opposite orders and deadlock; main
 * joins the first.  gdb must show each parked in pthread_mutex_lock
 * called from take_both.  PPL_DEADLOCK=off keeps libppl from aborting. */
#include <pthread.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <unistd.h>

static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t bar;

static __attribute__((noinline)) void take_both(pthread_mutex_t *first, pthread_mutex_t *second)
{
	pthread_mutex_lock(first);
	pthread_barrier_wait(&bar);
	pthread_mutex_lock(second);
	pthread_mutex_unlock(second);
	pthread_mutex_unlock(first);
}

static void *ab(void *arg)
{
	take_both(&a, &b);
	return arg;
}

static void *ba(void *arg)
{
	take_both(&b, &a);
	return arg;
}

int main(void)
{
	alarm(60);
	/* A debugger that is not our parent may attach (Yama ptrace_scope 1). */
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	pthread_t t1, t2;
	pthread_barrier_init(&bar, NULL, 2);
	pthread_create(&t1, NULL, ab, NULL);
	pthread_create(&t2, NULL, ba, NULL);
	pthread_setname_np(t1, "ab");
	pthread_setname_np(t2, "ba");
	printf("started\n");
	fflush(stdout);
	pthread_join(t1, NULL);
	return 0;
}
