/* A child of fork owns none of the PI or PP mutexes its parent's thread
 * held, and may unmap the memory of one (glibc's tst-robust-fork does,
 * with a private PI mutex in a shared mapping): locking
 * a PI mutex of its own must not look at them.  libppl kept the parent's
 * list of held PI/PP mutexes in the child, and the child's next PI lock
 * computed its priority from the unmapped mutex's waiters: SIGSEGV in
 * mutex_top_waiter.
 * (PTHREAD_PRIO_PROTECT is left out: NPTL refuses to lock one from a
 * SCHED_OTHER thread, docs/sync.md.) */
#include <errno.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "tp_util.h"

static void init(pthread_mutex_t *m, int protocol, int shared)
{
	pthread_mutexattr_t a;
	CHECK_OK(pthread_mutexattr_init(&a));
	CHECK_OK(pthread_mutexattr_setprotocol(&a, protocol));
	CHECK_OK(pthread_mutexattr_setpshared(&a, shared));
	CHECK_OK(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK));
	CHECK_OK(pthread_mutex_init(m, &a));
	CHECK_OK(pthread_mutexattr_destroy(&a));
}

static void *nop(void *arg)
{
	return arg;
}

static void one(int protocol)
{
	pthread_mutex_t *shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE,
				       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(shared != MAP_FAILED);
	init(shared, protocol, PTHREAD_PROCESS_PRIVATE);   /* in shared memory all the same */
	CHECK_OK(pthread_mutex_lock(shared));
	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0) {
		CHECK(munmap(shared, sizeof *shared) == 0);
		pthread_mutex_t own;
		init(&own, protocol, PTHREAD_PROCESS_PRIVATE);
		CHECK_OK(pthread_mutex_lock(&own));
		CHECK_OK(pthread_mutex_unlock(&own));
		pthread_t t;   /* and the runtime restarts in the child */
		CHECK_OK(pthread_create(&t, NULL, nop, NULL));
		CHECK_OK(pthread_join(t, NULL));
		_exit(0);
	}
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "child (protocol %d): %s %d\n", protocol,
			WIFEXITED(st) ? "exit status" : "signal",
			WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
		exit(1);
	}
	CHECK_OK(pthread_mutex_unlock(shared));
	CHECK_OK(pthread_mutex_destroy(shared));
	CHECK(munmap(shared, sizeof *shared) == 0);
}

int main(void)
{
	alarm(30);
	/* The runtime runs before the fork, as in a threaded program. */
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, nop, NULL));
	CHECK_OK(pthread_join(t, NULL));
	one(PTHREAD_PRIO_INHERIT);
	one(PTHREAD_PRIO_NONE);
	puts("prio-fork: ok");
	return 0;
}
