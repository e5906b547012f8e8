/* A private (default) condition variable in memory that a parent and its
 * forked child share, as the Open POSIX test pthread_cond_init/1-3 does.
 * Undefined behaviour by POSIX, but nothing may crash or corrupt: each
 * process only times out, returns spuriously or misses the other's
 * wake-ups.  libppl's queue of a private cond links the waiters' TCBs, so
 * a process that signalled the other's waiters used to follow pointers of
 * the other address space (the parent died of SIGSEGV in sched_wake).
 *
 * Phase A: a child thread waits (timed, in a loop) while the parent, which
 * has no thread of its own yet, signals and broadcasts.  Phase B: the
 * parent waits with a deadline on the same cond while the child's thread
 * waits there.  Phase C, the other way round: a parent thread created
 * after the fork waits on a second cond while the child signals it.
 * Every waiter uses timed waits, so that it also ends on NPTL, whose
 * private futex wake-ups do not cross processes either. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "tp_util.h"

struct shm {
	pthread_mutex_t m;      /* process-shared */
	pthread_cond_t c;       /* private: phases A and B */
	pthread_cond_t c2;      /* private: phase C */
	sem_t ready;            /* process-shared: a waiter is in place */
	sem_t go_c;             /* process-shared: the parent's phase C waiter is in place */
	_Atomic int stop;       /* the child's waiter leaves */
	_Atomic int stop2;      /* the parent's waiter leaves */
	_Atomic long waits;     /* the child's waiter's rounds */
};

static struct shm *shm;

static struct timespec in_ms(long ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (ms % 1000) * 1000000L;
	ts.tv_sec += ms / 1000 + ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	return ts;
}

/* Waits on *c in rounds of 20 ms until *stop is set; a spurious return
 * or a wake-up from the other process is just another round. */
static void wait_until(pthread_cond_t *c, _Atomic int *stop, sem_t *ready)
{
	if (pthread_mutex_lock(&shm->m) != 0)
		_exit(3);
	sem_post(ready);
	while (!atomic_load(stop)) {
		struct timespec ts = in_ms(20);
		int err = pthread_cond_timedwait(c, &shm->m, &ts);
		if (err != 0 && err != ETIMEDOUT)
			_exit(4);
		atomic_fetch_add(&shm->waits, 1);
	}
	if (pthread_mutex_unlock(&shm->m) != 0)
		_exit(5);
}

static void *child_waiter(void *arg)
{
	(void)arg;
	wait_until(&shm->c, &shm->stop, &shm->ready);
	return NULL;
}

static void *parent_waiter(void *arg)
{
	(void)arg;
	wait_until(&shm->c2, &shm->stop2, &shm->go_c);
	return NULL;
}

static void child(pid_t parent)
{
	/* Do not outlive a parent that crashed (the old bug): its test would
	 * wait for our end of the output pipe. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
		_exit(9);
	pthread_t t;
	if (pthread_create(&t, NULL, child_waiter, NULL) != 0)
		_exit(6);
	/* Phase C: signal the parent's waiter on c2 until it leaves. */
	while (sem_wait(&shm->go_c) != 0)
		;
	for (int i = 0; i < 200 && !atomic_load(&shm->stop2); i++) {
		if (pthread_cond_signal(&shm->c2) != 0 || pthread_cond_broadcast(&shm->c2) != 0)
			_exit(7);
		usleep(1000);
	}
	if (pthread_join(t, NULL) != 0)
		_exit(8);
	_exit(0);
}

int main(void)
{
	shm = mmap(NULL, sizeof *shm, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(shm != MAP_FAILED);
	pthread_mutexattr_t ma;
	CHECK_OK(pthread_mutexattr_init(&ma));
	CHECK_OK(pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED));
	CHECK_OK(pthread_mutex_init(&shm->m, &ma));
	CHECK_OK(pthread_cond_init(&shm->c, NULL));
	CHECK_OK(pthread_cond_init(&shm->c2, NULL));
	CHECK(sem_init(&shm->ready, 1, 0) == 0);
	CHECK(sem_init(&shm->go_c, 1, 0) == 0);

	pid_t parent = getpid();
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		child(parent);

	/* Phase A.  Once the parent holds the mutex after the child's thread
	 * took it, that thread is inside its wait. */
	CHECK(sem_wait(&shm->ready) == 0);
	for (int i = 0; i < 50; i++) {
		CHECK_OK(pthread_mutex_lock(&shm->m));
		CHECK_OK(pthread_cond_signal(&shm->c));
		CHECK_OK(pthread_cond_broadcast(&shm->c));
		CHECK_OK(pthread_mutex_unlock(&shm->m));
		usleep(1000);
	}

	/* Phase B: a deadline 100 ms ahead ends the parent's wait, whatever
	 * the child's waiter does meanwhile. */
	long long t0 = tp_now_ns();
	CHECK_OK(pthread_mutex_lock(&shm->m));
	struct timespec ts = in_ms(100);
	int err;
	while ((err = pthread_cond_timedwait(&shm->c, &shm->m, &ts)) == 0)
		CHECK(tp_now_ns() - t0 < 10000000000LL);
	CHECK(err == ETIMEDOUT);
	CHECK_OK(pthread_mutex_unlock(&shm->m));
	atomic_store(&shm->stop, 1);

	/* Phase C. */
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, parent_waiter, NULL));
	usleep(100000);
	atomic_store(&shm->stop2, 1);
	CHECK_OK(pthread_join(t, NULL));

	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "child: %s %d\n", WIFEXITED(st) ? "exit" : "signal",
			WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
		return 1;
	}
	CHECK(atomic_load(&shm->waits) > 0);
	CHECK_OK(pthread_cond_destroy(&shm->c));
	CHECK_OK(pthread_cond_destroy(&shm->c2));
	CHECK_OK(pthread_mutex_destroy(&shm->m));
	puts("condshare: ok");
	return 0;
}
