/* A process-directed signal that lands while the thread that takes it is
 * on its way into a blocking wait runs its handler during that wait, as on
 * NPTL.  The handler posts the process-shared semaphore the main thread
 * waits on, so a signal whose handler does not run leaves main waiting for
 * good.  Main is the only thread that takes SIGUSR1; a helper thread shares
 * its VP.  A child process sends SIGUSR1 to this process, each time after
 * the handler of the one before has run, and gives up after 5 s (posting
 * the semaphore once, so that main sees it gone).
 *
 * libppl before the fix: a signal that arrived while the wait held one of
 * libppl's own locks was put off (blocked on the kernel thread until the
 * unlock), and the unlock then read the blocked signal as one the thread
 * blocks and sent it back to the process, leaving it blocked on main's
 * kernel thread all through the wait.
 *
 * With "burst": SIGRTMIN, queued, sent twice each time.  A second instance
 * that lands while libppl holds the first (its handler came over libppl's
 * own code) is blocked on the kernel thread till the next release point;
 * before the fix, a thread that went on into its wait got none (9 runs of
 * 9 stopped, preloaded), so the second handler waited for its next
 * switch. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tp_util.h"

#define ROUNDS 20000

struct shared {
	sem_t wake;              /* main waits on it; the handler posts it */
	_Atomic long handled;    /* handler runs */
	_Atomic int done;
	_Atomic int gave_up;     /* the sender's */
};
static struct shared *sh;
static int sig = SIGUSR1, burst = 1;

static void on_signal(int s)
{
	(void)s;
	atomic_fetch_add(&sh->handled, 1);
	sem_post(&sh->wake);
}

static void *helper(void *arg)
{
	(void)arg;
	tp_sigmask_one(SIG_BLOCK, sig);
	while (!atomic_load(&sh->done))
		sched_yield();
	return NULL;
}

/* The child: one signal (or burst) to the parent at a time, each after
 * the handlers of the one before ran.  0, or 1 if a handler did not run
 * in 5 s. */
static int sender(pid_t parent)
{
	for (long i = 0; i < ROUNDS; i++) {
		for (int k = 0; k < burst; k++)
			CHECK(kill(parent, sig) == 0);
		long long end = tp_now_ns() + 5000000000LL;
		while (atomic_load(&sh->handled) < (i + 1) * burst) {
			if (tp_now_ns() > end) {
				fprintf(stderr, "signal %ld of %d: its handler did not run in 5 s\n",
					i + 1, ROUNDS);
				atomic_store(&sh->gave_up, 1);
				sem_post(&sh->wake);   /* main sees it */
				return 1;
			}
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "burst") == 0) {
		sig = SIGRTMIN;
		burst = 2;
	}
	sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(sh != MAP_FAILED);
	CHECK(sem_init(&sh->wake, 1, 0) == 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	CHECK(sigaction(sig, &sa, NULL) == 0);
	pthread_t h;
	CHECK_OK(pthread_create(&h, NULL, helper, NULL));
	pid_t parent = getpid();
	pid_t child = fork();
	CHECK(child >= 0);
	if (child == 0)
		_exit(sender(parent));
	/* Waits until the child has sent them all, or has given up. */
	int status;
	for (;;) {
		while (sem_wait(&sh->wake) != 0)
			CHECK(errno == EINTR);
		if (atomic_load(&sh->handled) >= (long)ROUNDS * burst)
			break;
		if (atomic_load(&sh->gave_up)) {
			fprintf(stderr, "the sender gave up after %ld handlers\n",
				atomic_load(&sh->handled));
			return 1;
		}
	}
	CHECK(waitpid(child, &status, 0) == child);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	atomic_store(&sh->done, 1);
	CHECK_OK(pthread_join(h, NULL));
	puts("ok");
	return 0;
}
