/* pthread_mutex_destroy of a robust mutex whose owner died holding it
 * (glibc's tst-robust-fork): glibc returns 0 for a robust kind whatever its
 * state.  Owners: a thread that returns holding it, and a forked child that
 * locks one in shared memory (private or process-shared) and _exits.  Each
 * destroy must return 0, and at once. */
#include <errno.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "tp_util.h"

static void robust_init(pthread_mutex_t *m, int pshared)
{
	pthread_mutexattr_t a;
	CHECK_OK(pthread_mutexattr_init(&a));
	CHECK_OK(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST));
	if (pshared)
		CHECK_OK(pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED));
	CHECK_OK(pthread_mutex_init(m, &a));
	CHECK_OK(pthread_mutexattr_destroy(&a));
}

static void *lock_and_return(void *arg)
{
	CHECK_OK(pthread_mutex_lock(arg));
	return NULL;
}

int main(void)
{
	alarm(30);
	pthread_mutex_t m;
	robust_init(&m, 0);
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, lock_and_return, &m));
	CHECK_OK(pthread_join(t, NULL));
	CHECK_OK(pthread_mutex_destroy(&m));

	pthread_mutex_t *sh = mmap(NULL, 2 * sizeof *sh, PROT_READ | PROT_WRITE,
				   MAP_ANONYMOUS | MAP_SHARED, -1, 0);
	CHECK(sh != MAP_FAILED);
	for (int pshared = 0; pshared < 2; pshared++) {
		robust_init(&sh[pshared], pshared);
		fflush(NULL);
		pid_t p = fork();
		CHECK(p >= 0);
		if (p == 0) {
			if (pthread_mutex_lock(&sh[pshared]) != 0)
				_exit(2);
			_exit(0);   /* holding it */
		}
		int st;
		CHECK(waitpid(p, &st, 0) == p);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		CHECK_OK(pthread_mutex_destroy(&sh[pshared]));
	}
	return 0;
}
