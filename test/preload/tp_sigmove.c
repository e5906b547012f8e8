/* A signal handler that switches its thread out (sleeps, yields, waits for
 * a mutex) lands while the thread is inside a blocking read, which libppl
 * wraps: it marks the VP "in a system call" and "in a cancellable call"
 * around the C library's read.  With user threads the handler's thread may
 * resume on another VP; the read must go on there as on NPTL, where a
 * thread never changes kernel threads: it returns its byte, no VP is left
 * marked for a thread that moved (a later pthread_cancel of a thread
 * blocked in read still reaches it), and nothing crashes.  Spinners that
 * never call libppl keep the VPs busy, so that the readers move.
 *
 * Before the fix, the read's return unmarked the VP it had started on,
 * which ran another thread or none by then: a SIGSEGV (its current thread
 * NULL) in 4 runs of 5, or another thread's cancellation mark wiped.
 *
 * Callers loop on libppl's own entry points (yield, an uncontended mutex,
 * thread-specific data, a spin lock), so the handler also lands inside
 * libppl's code, which keeps its VP in a variable: the handler runs there
 * only once the thread is at a point where it may move (a switch, or back
 * in the program's code).  Before, the thread resumed on another VP with
 * the old one in hand: a crash or a hang in 7 runs of 8.
 *
 * Usage: tp_sigmove [seconds [callers]] (default 2 seconds; `callers`: three
 * callers and no spinners, so that the callers run often). */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>

#include "tp_util.h"

#define READERS 4
#define MAX_OTHERS 3

static int spinners = 2, callers = 2;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool stop;
static atomic_long handled;

/* Switch out three ways: a timed sleep (the timer wakes it on any VP), a
 * yield, and a mutex main holds now and then. */
static void handler(int sig)
{
	(void)sig;
	int e = errno;
	struct timespec ts = { 0, 50 * 1000 };
	nanosleep(&ts, NULL);
	sched_yield();
	pthread_mutex_lock(&lock);
	pthread_mutex_unlock(&lock);
	atomic_fetch_add(&handled, 1);
	errno = e;
}

static int pipes[READERS][2];

static void *reader(void *arg)
{
	int fd = pipes[(long)arg][0];
	for (;;) {
		char c;
		ssize_t n = read(fd, &c, 1);
		if (n == -1 && errno == EINTR)
			continue;
		CHECK(n == 1);
		if (c == 'q')
			return NULL;
		CHECK(c == 'x');
	}
}

/* The program's own code only: preemption moves the others around it,
 * and its handler runs over code that keeps no VP. */
static void *spinner(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		;
	return NULL;
}

static pthread_key_t key;
static pthread_spinlock_t spin;

static void *caller(void *arg)
{
	(void)arg;
	pthread_mutex_t own = PTHREAD_MUTEX_INITIALIZER;
	long n = 0;
	while (!atomic_load(&stop)) {
		sched_yield();
		CHECK_OK(pthread_mutex_lock(&own));
		CHECK_OK(pthread_setspecific(key, (void *)++n));
		CHECK(pthread_getspecific(key) == (void *)n);
		CHECK_OK(pthread_mutex_unlock(&own));
		CHECK_OK(pthread_spin_lock(&spin));
		CHECK_OK(pthread_spin_unlock(&spin));
	}
	return NULL;
}

static void *blocked_reader(void *arg)
{
	char c;
	ssize_t n = read(*(int *)arg, &c, 1);   /* cancelled in it */
	CHECK(n == -2);   /* never reached */
	return NULL;
}

int main(int argc, char **argv)
{
	int seconds = argc > 1 ? atoi(argv[1]) : 2;
	if (argc > 2 && strcmp(argv[2], "callers") == 0) {
		spinners = 0;
		callers = 3;
	}
	tp_set_handler_flags(SIGUSR1, handler, SA_RESTART);

	CHECK_OK(pthread_key_create(&key, NULL));
	CHECK_OK(pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE));
	pthread_t r[READERS], y[MAX_OTHERS], c[MAX_OTHERS];
	for (long i = 0; i < READERS; i++) {
		CHECK(pipe(pipes[i]) == 0);
		CHECK_OK(pthread_create(&r[i], NULL, reader, (void *)i));
	}
	for (int i = 0; i < spinners; i++)
		CHECK_OK(pthread_create(&y[i], NULL, spinner, NULL));
	for (int i = 0; i < callers; i++)
		CHECK_OK(pthread_create(&c[i], NULL, caller, NULL));

	long long end = tp_now_ns() + seconds * 1000000000LL;
	long rounds = 0;
	while (tp_now_ns() < end) {
		for (int i = 0; i < READERS; i++)
			CHECK_OK(pthread_kill(r[i], SIGUSR1));
		for (int i = 0; i < spinners; i++)
			CHECK_OK(pthread_kill(y[i], SIGUSR1));
		for (int i = 0; i < callers; i++)
			CHECK_OK(pthread_kill(c[i], SIGUSR1));
		if (rounds % 4 == 0) {
			pthread_mutex_lock(&lock);
			struct timespec ts = { 0, 100 * 1000 };
			nanosleep(&ts, NULL);
			pthread_mutex_unlock(&lock);
		}
		for (int i = 0; i < READERS; i++)
			CHECK(write(pipes[i][1], "x", 1) == 1);
		struct timespec ts = { 0, 200 * 1000 };
		nanosleep(&ts, NULL);
		rounds++;
	}
	atomic_store(&stop, true);
	for (int i = 0; i < READERS; i++) {
		CHECK(write(pipes[i][1], "q", 1) == 1);
		CHECK_OK(pthread_join(r[i], NULL));
	}
	for (int i = 0; i < spinners; i++)
		CHECK_OK(pthread_join(y[i], NULL));
	for (int i = 0; i < callers; i++)
		CHECK_OK(pthread_join(c[i], NULL));

	/* Every VP's cancellation mark is its present thread's: a reader
	 * blocked in read on each is cancelled there. */
	int fds[2];
	CHECK(pipe(fds) == 0);
	pthread_t b[READERS];
	for (int i = 0; i < READERS; i++)
		CHECK_OK(pthread_create(&b[i], NULL, blocked_reader, &fds[0]));
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	for (int i = 0; i < READERS; i++) {
		void *res;
		CHECK_OK(pthread_cancel(b[i]));
		CHECK_OK(pthread_join(b[i], &res));
		CHECK(res == PTHREAD_CANCELED);
	}
	printf("%ld rounds, %ld handlers ran\n", rounds, atomic_load(&handled));
	CHECK(atomic_load(&handled) > 0);
	return 0;
}
