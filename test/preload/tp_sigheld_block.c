/* A signal that lands while its thread runs libppl's code waits for a point
 * where the thread may move (docs/posix.md, "Handlers that switch their
 * thread out").  The thread may instead block at once in a call libppl does
 * not announce (here a raw ppoll through syscall(2)), where no such point
 * comes and its VP's ticks stop (they count CPU time): the handler must
 * still run soon, as on NPTL, where it interrupts the call.
 *
 * The target alternates a burst of libppl calls (thread-specific data,
 * where signals land) with a raw ppoll of a pipe, for up to 1 s; main
 * signals it during a burst, waits for the handler, then writes to the
 * pipe.  Before the monitor took such signals back, one held in the burst
 * waited for the ppoll's timeout (or for good: libppl made the program's
 * syscall(2) from its own code, where the handler was held every time);
 * the bound is 500 ms per signal.
 *
 * Usage: tp_sigheld_block [signals] (default 60). */
#include <poll.h>
#include <stdatomic.h>
#include <sys/syscall.h>

#include "tp_util.h"

static atomic_long handled;
static atomic_bool stop;
static atomic_bool in_burst, sent;
static pthread_key_t key;
static int pipe_fds[2];

static void handler(int sig)
{
	(void)sig;
	atomic_fetch_add(&handled, 1);
}

static void *target(void *arg)
{
	(void)arg;
	long n = 0;
	while (!atomic_load(&stop)) {
		/* Calls until main has sent its signal, and a while after,
		 * so that it lands in one (main waits for in_burst). */
		atomic_store(&in_burst, true);
		for (int i = 0; i < 2000 || !atomic_load(&sent); i++) {
			CHECK_OK(pthread_setspecific(key, (void *)++n));
			CHECK(pthread_getspecific(key) == (void *)n);
			if (atomic_load(&stop))
				break;
		}
		atomic_store(&in_burst, false);
		atomic_store(&sent, false);
		struct pollfd p = { .fd = pipe_fds[0], .events = POLLIN };
		struct timespec ts = { 1, 0 };
		/* EINTR, main's byte or a timeout */
		if (syscall(SYS_ppoll, &p, 1, &ts, NULL, 8) == 1) {
			char c;
			CHECK(read(pipe_fds[0], &c, 1) == 1);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long signals = argc > 1 ? atol(argv[1]) : 60;
	tp_set_handler_flags(SIGUSR1, handler, SA_RESTART);
	CHECK_OK(pthread_key_create(&key, NULL));
	CHECK(pipe(pipe_fds) == 0);
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, target, NULL));
	long long worst = 0;
	for (long i = 0; i < signals; i++) {
		while (!atomic_load(&in_burst)) {
			struct timespec ts = { 0, 20 * 1000 };
			nanosleep(&ts, NULL);
		}
		long before = atomic_load(&handled);
		long long t0 = tp_now_ns();
		CHECK_OK(pthread_kill(t, SIGUSR1));
		atomic_store(&sent, true);
		while (atomic_load(&handled) == before) {
			CHECK(tp_now_ns() - t0 < 5000000000LL);   /* never, or very late */
			struct timespec ts = { 0, 20 * 1000 };
			nanosleep(&ts, NULL);
		}
		long long d = tp_now_ns() - t0;
		if (d > worst)
			worst = d;
		CHECK(write(pipe_fds[1], "x", 1) == 1);   /* the next burst */
	}
	atomic_store(&stop, true);
	CHECK(write(pipe_fds[1], "x", 1) == 1);
	CHECK_OK(pthread_join(t, NULL));
	printf("%ld signals, slowest handler after %lld us\n", signals, worst / 1000);
	CHECK(worst < 500 * 1000000LL);
	return 0;
}
