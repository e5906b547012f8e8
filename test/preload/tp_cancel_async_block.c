/* Asynchronous cancellation of a thread blocked in a system call that
 * libppl does not announce (glibc's tst-cancel30: syscall(SYS_pause)).
 * The thread enables the asynchronous type, meets main (a barrier or a
 * mutex main hands over), then blocks in the kernel for good: raw pause,
 * rt_sigsuspend, futex and read of an empty pipe through syscall(), the
 * C library's pause and sigsuspend, and flock (which libppl announces to
 * its monitor, but which is no cancellation point).  Main cancels it as soon as they
 * have met and joins it: the request must act on the thread where it
 * blocks, whichever of the two arrived last (the thread is then woken
 * and not yet running when cancelled, or still running libppl's code on
 * its way out of the barrier), on one VP (main then runs on a spare the
 * monitor lent the VP to) and on many. */
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <linux/futex.h>

#include "tp_util.h"

#ifndef ROUNDS
#define ROUNDS 4
#endif
#ifndef HANG_S
#define HANG_S 20   /* one case this long: the request never acted */
#endif

enum call {
	RAW_PAUSE, RAW_SIGSUSPEND, RAW_FUTEX, RAW_READ, LIBC_PAUSE, LIBC_SIGSUSPEND, FLOCK, NCALLS
};
static const char *const call_name[NCALLS] = {
	"syscall(SYS_pause)", "syscall(SYS_rt_sigsuspend)", "syscall(SYS_futex)",
	"syscall(SYS_read) of a pipe", "pause()", "sigsuspend()", "flock() of a file main holds",
};
enum meet { BARRIER, MUTEX, NMEETS };
static const char *const meet_name[NMEETS] = { "barrier", "mutex" };

struct test_case {
	enum call call;
	enum meet meet;
	int thread_last;   /* the thread, not main, arrives last */
	pthread_mutex_t handed;   /* MUTEX: main holds it, then hands it over */
};

static pthread_barrier_t barrier;
static int pipe_fds[2];          /* nobody writes to it */
static int lock_fds[2];          /* one file: main holds flock on the first */
static atomic_uint never;        /* nobody wakes a futex wait on it */
static atomic_int cleaned;       /* the thread's cleanup handler ran */
static struct test_case *volatile running;

static void on_alarm(int sig)
{
	(void)sig;
	static char msg[160];
	struct test_case *c = running;
	int n = snprintf(msg, sizeof msg, "hang: asynchronous cancel of a thread in %s "
			 "(met by %s, %s last) did not act\n",
			 call_name[c->call], meet_name[c->meet], c->thread_last ? "thread" : "main");
	(void)!write(2, msg, (size_t)n);
	_exit(1);
}

static void cleanup(void *arg)
{
	(void)arg;
	atomic_fetch_add(&cleaned, 1);
}

/* Never returns: every wake-up by some other signal blocks again. */
static void block(enum call call)
{
	sigset_t none;
	sigemptyset(&none);
	char byte;
	for (;;) {
		switch (call) {
		case RAW_PAUSE:
			syscall(SYS_pause);
			break;
		case RAW_SIGSUSPEND:
			syscall(SYS_rt_sigsuspend, &none, (size_t)_NSIG / 8);
			break;
		case RAW_FUTEX:
			syscall(SYS_futex, &never, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
			break;
		case RAW_READ:
			syscall(SYS_read, pipe_fds[0], &byte, (size_t)1);
			break;
		case LIBC_PAUSE:
			pause();
			break;
		case LIBC_SIGSUSPEND:
			sigsuspend(&none);
			break;
		case FLOCK:   /* libppl announces it, but it is no cancellation point */
			(void)flock(lock_fds[1], LOCK_EX);
			break;
		default:
			abort();
		}
	}
}

static void *blocker(void *arg)
{
	struct test_case *c = arg;
	pthread_cleanup_push(cleanup, NULL);
	CHECK_OK(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL));
	if (c->thread_last)
		usleep(500);   /* main waits first: the thread runs on after meeting */
	if (c->meet == BARRIER)
		(void)pthread_barrier_wait(&barrier);
	else
		pthread_mutex_lock(&c->handed);   /* never unlocked: the thread is unwound */
	block(c->call);
	pthread_cleanup_pop(0);
	return NULL;
}

static void run(struct test_case *c)
{
	running = c;
	alarm(HANG_S);
	int before = atomic_load(&cleaned);
	CHECK_OK(pthread_mutex_init(&c->handed, NULL));
	if (c->meet == MUTEX)
		CHECK_OK(pthread_mutex_lock(&c->handed));
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, blocker, (void *)c));
	if (!c->thread_last)
		usleep(500);   /* the thread waits first: it is woken and cancelled at once */
	if (c->meet == BARRIER)
		(void)pthread_barrier_wait(&barrier);
	else
		CHECK_OK(pthread_mutex_unlock(&c->handed));
	CHECK_OK(pthread_cancel(t));
	void *res;
	CHECK_OK(pthread_join(t, &res));
	CHECK(res == PTHREAD_CANCELED);
	CHECK(atomic_load(&cleaned) == before + 1);
	alarm(0);
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
	CHECK(pipe(pipe_fds) == 0);
	char path[] = "/tmp/tp_cancel_async_block.XXXXXX";
	CHECK((lock_fds[0] = mkstemp(path)) >= 0);
	CHECK((lock_fds[1] = open(path, O_RDWR)) >= 0);
	CHECK(unlink(path) == 0);
	CHECK(flock(lock_fds[0], LOCK_EX) == 0);
	CHECK_OK(pthread_barrier_init(&barrier, NULL, 2));
	int n = 0;
	for (int r = 0; r < ROUNDS; r++)
		for (int call = 0; call < NCALLS; call++)
			for (int meet = 0; meet < NMEETS; meet++)
				for (int last = 0; last < 2; last++) {
					struct test_case c = { .call = call, .meet = meet,
							       .thread_last = last };
					run(&c);
					n++;
				}
	printf("%d asynchronous cancels of threads blocked in the kernel\n", n);
	return 0;
}
