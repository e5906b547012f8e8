/* A thread's alternate signal stack is its own: a signal another kernel
 * thread takes never writes there, also once the thread has moved to
 * another VP.  Here main has one (as CPython's faulthandler gives it) and
 * an SA_ONSTACK handler that fills and checks most of it; a child sends
 * the process SIGUSR1 every 300 us while main polls, yields and moves
 * between VPs among threads that sleep and spin, as CPython's
 * test_subprocess.test_communicate_eintr does in regrtest's worker.
 *
 * libppl left a thread's alternate stack installed on the kernel thread
 * of the VP it left: a signal landing there (idle, or before the next
 * thread's resume) ran the trampoline on it, which routed it to main and
 * poked main's VP, where main's handler wrote its frame at the same top of
 * the same stack: the first frame's sigreturn jumped into the stack
 * (SIGSEGV). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp_util.h"

#define SIGNALS 2000
#define NCHURN 3
#define FILL 6000   /* bytes of the alternate stack the handler checks */

static atomic_int handled, bad, stop;

static void handler(int sig)
{
	(void)sig;
	volatile unsigned char buf[FILL];
	unsigned char mark = (unsigned char)(atomic_load(&handled) * 7 + 1);
	for (size_t i = 0; i < FILL; i++)
		buf[i] = (unsigned char)(mark + i);
	for (volatile int spin = 0; spin < 2000; spin++)
		;   /* room for another frame to land on it */
	for (size_t i = 0; i < FILL; i++)
		if (buf[i] != (unsigned char)(mark + i)) {
			atomic_fetch_add(&bad, 1);
			break;
		}
	atomic_fetch_add(&handled, 1);
}

/* Sleeps and spins: VPs that go idle and come back, main moving between them. */
static void *churn(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		struct timespec ts = { 0, 200000 };
		nanosleep(&ts, NULL);
		for (volatile int i = 0; i < 20000; i++)
			;
	}
	return NULL;
}

int main(void)
{
	/* libppl: four VPs (NPTL: a hint it may ignore). */
	pthread_setconcurrency(NCHURN + 1);
	size_t size = SIGSTKSZ + getauxval(AT_MINSIGSTKSZ) + 8192;
	stack_t ss = { .ss_sp = malloc(size), .ss_size = size };
	CHECK(ss.ss_sp != NULL);
	CHECK(sigaltstack(&ss, NULL) == 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sa.sa_flags = SA_ONSTACK;
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	/* Only main takes it (NPTL: the leader, first). */
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &usr1, NULL));
	pthread_t t[NCHURN];
	for (int i = 0; i < NCHURN; i++)
		CHECK_OK(pthread_create(&t[i], NULL, churn, NULL));
	CHECK_OK(pthread_sigmask(SIG_UNBLOCK, &usr1, NULL));

	int p[2];
	CHECK(pipe(p) == 0);
	pid_t parent = getpid(), child = fork();
	CHECK(child >= 0);
	if (child == 0) {
		for (int i = 0; i < SIGNALS; i++) {
			kill(parent, SIGUSR1);
			struct timespec ts = { 0, 300000 };
			nanosleep(&ts, NULL);
		}
		_exit(0);
	}
	for (;;) {
		struct pollfd pf = { .fd = p[0], .events = POLLIN };
		poll(&pf, 1, 2);
		int st;
		pid_t w = waitpid(child, &st, WNOHANG);
		CHECK(w == 0 || w == child || errno == EINTR);
		if (w == child) {
			CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
			break;
		}
		sched_yield();
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < NCHURN; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	printf("handled %d of %d (standard signals merge), %d overwritten\n", atomic_load(&handled),
	       SIGNALS, atomic_load(&bad));
	CHECK(atomic_load(&handled) > 0);
	CHECK(atomic_load(&bad) == 0);
	return 0;
}
