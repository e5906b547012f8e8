/* A small program whose scheduler trace (PPL_TRACE) shows every kind of
 * event on one VP: creates and exits, a park on a mutex and the wake that
 * ends it, a thread named "worker", a hand-off to a spare kernel thread
 * (a reader blocked in read() on a pipe that only another thread writes),
 * a time-slice preemption (a thread computing while another waits), and
 * finally exit() called from a thread other than main, or _exit() with
 * the argument "_exit"; with "spawn CMD" it also runs CMD with system()
 * while its own trace is being written (test/schedhooks/check_trace.py). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int fds[2];
static volatile int spin_done;
static int use_underscore_exit;

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *locker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&m);   /* main holds it: a park, then a wake */
	pthread_mutex_unlock(&m);
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	char c;
	return read(fds[0], &c, 1) == 1 ? NULL : (void *)1;
}

static void *spinner(void *arg)
{
	(void)arg;
	double start = cpu_ms();
	/* Preempted while `waiter` is ready.  It computes between clock reads,
	 * so that the tick finds it in its own code (a tick inside libppl's
	 * clock_gettime is taken at its end, as a deferred preemption). */
	while (!spin_done && cpu_ms() - start < 2000)
		for (volatile int i = 0; i < 100000; i++)
			;
	return NULL;
}

static void *waiter(void *arg)
{
	(void)arg;
	spin_done = 1;
	return NULL;
}

static void *ender(void *arg)
{
	(void)arg;
	fflush(stdout);
	if (use_underscore_exit)
		_exit(0);
	exit(0);
}

static void run(void *(*fn)(void *), const char *name)
{
	pthread_t t;
	if (pthread_create(&t, NULL, fn, NULL) != 0)
		exit(2);
	if (name)
		pthread_setname_np(t, name);
	if (pthread_join(t, NULL) != 0)
		exit(2);
}

int main(int argc, char **argv)
{
	alarm(20);
	use_underscore_exit = argc > 1 && strcmp(argv[1], "_exit") == 0;
	if (pipe(fds) != 0)
		return 2;
	if (argc > 2 && strcmp(argv[1], "spawn") == 0) {
		run(waiter, NULL);   /* the runtime has started: the file is ours */
		if (system(argv[2]) != 0)
			return 4;
	}

	pthread_t t;
	pthread_mutex_lock(&m);
	pthread_create(&t, NULL, locker, NULL);
	pthread_setname_np(t, "worker");
	sched_yield();                       /* it parks on m */
	pthread_mutex_unlock(&m);
	pthread_join(t, NULL);

	pthread_create(&t, NULL, reader, NULL);
	sched_yield();                       /* it blocks in read(): a hand-off lets main on */
	usleep(20000);
	if (write(fds[1], "x", 1) != 1)
		return 2;
	pthread_join(t, NULL);

	pthread_t s, w;
	pthread_create(&s, NULL, spinner, NULL);
	pthread_create(&w, NULL, waiter, NULL);
	pthread_join(s, NULL);
	pthread_join(w, NULL);

	run(ender, NULL);
	return 3;   /* not reached */
}
