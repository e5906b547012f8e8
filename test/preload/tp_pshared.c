/* Process-shared condition variables, mutexes and semaphores with many
 * waiters in each process.  On libppl one user thread per word waits in
 * the kernel and the others park behind it (src/vpindep/parklot.c), so
 * each phase aims at that hand-over: a wake-up from the other process
 * must reach every waiter of this one, whichever of them leads.
 *
 *  1. broadcast: NWAIT threads here and NWAIT in a child wait on one cond;
 *     the child's broadcast releases all of them.
 *  2. signal: NWAIT waiters take one token each; the other process adds a
 *     token and signals, NWAIT times: every waiter gets one (no wake-up is
 *     lost between a leader and its followers).
 *  3. time-out: the first waiter (the leader) times out after 50 ms, the
 *     others wait without a deadline; the child's broadcast after that
 *     must still release them (the leader passed its place on).
 *  4. cancel: a waiter in pthread_cond_wait, leader or follower, is
 *     cancelled: its cleanup handler runs with the mutex held, and the
 *     other waiters are released later as usual.
 *  5. semaphore: NWAIT threads in sem_wait, the child posts NWAIT times.
 *  6. mutex: threads of both processes increment a shared counter under a
 *     process-shared mutex; the count is exact.
 *
 * Every wait that should end ends before the test's time limit; a lost
 * wake-up shows as a hang (meson's timeout) or a failed check. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "tp_util.h"

#define NWAIT 100
#define NINC 2000

struct shm {
	pthread_mutex_t m;
	pthread_cond_t c;
	int waiting;            /* waiters in place (under m), both processes */
	int go;                 /* the predicate (under m) */
	int tokens;             /* phase 2 (under m) */
	sem_t s;                /* phase 5 */
	sem_t step;             /* the child's cue from the parent */
	sem_t done;             /* the parent's from the child: phase 1 is over */
	long count;             /* phase 6 (under m) */
};

static struct shm *shm;

static void lock(void)
{
	CHECK_OK(pthread_mutex_lock(&shm->m));
}

static void unlock(void)
{
	CHECK_OK(pthread_mutex_unlock(&shm->m));
}

/* Wait until `waiting` reaches n (threads of both processes). */
static void await_waiting(int n)
{
	lock();
	while (shm->waiting < n) {
		unlock();
		usleep(1000);
		lock();
	}
	unlock();
}

static void reset(void)
{
	lock();
	shm->waiting = 0;
	shm->go = 0;
	shm->tokens = 0;
	unlock();
}

/* ---- waiters ------------------------------------------------------------------ */

static void *wait_go(void *arg)
{
	(void)arg;
	lock();
	shm->waiting++;
	while (!shm->go)
		CHECK_OK(pthread_cond_wait(&shm->c, &shm->m));
	unlock();
	return NULL;
}

static void *take_token(void *arg)
{
	(void)arg;
	lock();
	shm->waiting++;
	while (shm->tokens == 0)
		CHECK_OK(pthread_cond_wait(&shm->c, &shm->m));
	shm->tokens--;
	unlock();
	return NULL;
}

/* Phase 3's leader: in place first, gives up after 50 ms. */
static void *wait_briefly(void *arg)
{
	(void)arg;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 50 * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	lock();
	shm->waiting++;
	int err = 0;
	while (!shm->go && err == 0)
		err = pthread_cond_timedwait(&shm->c, &shm->m, &ts);
	CHECK(err == ETIMEDOUT);
	CHECK(!shm->go);
	unlock();
	return NULL;
}

static _Atomic int cleanups;

static void cleanup(void *arg)
{
	(void)arg;
	/* The mutex is held again (an error-checking one says so). */
	CHECK_OK(pthread_mutex_unlock(&shm->m));
	atomic_fetch_add(&cleanups, 1);
}

static void *wait_cancellable(void *arg)
{
	(void)arg;
	lock();
	shm->waiting++;
	pthread_cleanup_push(cleanup, NULL);
	while (!shm->go)
		CHECK_OK(pthread_cond_wait(&shm->c, &shm->m));
	pthread_cleanup_pop(0);
	unlock();
	return NULL;
}

static void *sem_taker(void *arg)
{
	(void)arg;
	while (sem_wait(&shm->s) != 0)
		CHECK(errno == EINTR);
	return NULL;
}

static void *incrementer(void *arg)
{
	(void)arg;
	for (int i = 0; i < NINC; i++) {
		lock();
		shm->count++;
		unlock();
	}
	return NULL;
}

static void spawn(pthread_t *t, int n, void *(*fn)(void *))
{
	for (int i = 0; i < n; i++)
		CHECK_OK(pthread_create(&t[i], NULL, fn, NULL));
}

static void join(pthread_t *t, int n)
{
	for (int i = 0; i < n; i++)
		CHECK_OK(pthread_join(t[i], NULL));
}

static void release_all(void)
{
	lock();
	shm->go = 1;
	CHECK_OK(pthread_cond_broadcast(&shm->c));
	unlock();
}

static void step_wait(void)
{
	while (sem_wait(&shm->step) != 0)
		CHECK(errno == EINTR);
}

/* ---- the child: waiters in phase 1, the waker in 2, 3 and 5 ------------------- */

static void child(void)
{
	pthread_t t[NWAIT];
	/* 1: NWAIT waiters of its own, released by its own broadcast once the
	 * parent's are in place too. */
	spawn(t, NWAIT, wait_go);
	await_waiting(2 * NWAIT);
	release_all();
	join(t, NWAIT);
	CHECK(sem_post(&shm->done) == 0);

	/* 2: one token and one signal at a time. */
	step_wait();
	await_waiting(NWAIT);
	for (int i = 0; i < NWAIT; i++) {
		lock();
		shm->tokens++;
		CHECK_OK(pthread_cond_signal(&shm->c));
		unlock();
	}

	/* 3: the parent's leader has timed out: release the rest. */
	step_wait();
	release_all();

	/* 5: NWAIT posts. */
	step_wait();
	for (int i = 0; i < NWAIT; i++)
		CHECK(sem_post(&shm->s) == 0);

	/* 6: increments beside the parent's. */
	step_wait();
	spawn(t, 4, incrementer);
	join(t, 4);
	exit(0);
}

int main(void)
{
	shm = mmap(NULL, sizeof *shm, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(shm != MAP_FAILED);
	pthread_mutexattr_t ma;
	CHECK_OK(pthread_mutexattr_init(&ma));
	CHECK_OK(pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED));
	CHECK_OK(pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK));
	CHECK_OK(pthread_mutex_init(&shm->m, &ma));
	pthread_condattr_t ca;
	CHECK_OK(pthread_condattr_init(&ca));
	CHECK_OK(pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED));
	CHECK_OK(pthread_cond_init(&shm->c, &ca));
	CHECK(sem_init(&shm->s, 1, 0) == 0);
	CHECK(sem_init(&shm->step, 1, 0) == 0);
	CHECK(sem_init(&shm->done, 1, 0) == 0);

	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		child();
	}

	pthread_t t[NWAIT];
	/* 1 */
	spawn(t, NWAIT, wait_go);
	join(t, NWAIT);
	while (sem_wait(&shm->done) != 0)
		CHECK(errno == EINTR);
	reset();

	/* 2 */
	spawn(t, NWAIT, take_token);
	CHECK(sem_post(&shm->step) == 0);
	join(t, NWAIT);
	lock();
	CHECK(shm->tokens == 0);
	unlock();
	reset();

	/* 3: the leader first, then the others behind it. */
	spawn(t, 1, wait_briefly);
	await_waiting(1);
	spawn(t + 1, NWAIT - 1, wait_go);
	join(t, 1);   /* timed out; the others still wait */
	await_waiting(NWAIT);
	CHECK(sem_post(&shm->step) == 0);
	join(t + 1, NWAIT - 1);
	reset();

	/* 4: cancel the first waiter and one behind it, then the rest go. */
	spawn(t, 1, wait_cancellable);
	await_waiting(1);
	spawn(t + 1, 9, wait_cancellable);
	await_waiting(10);
	CHECK_OK(pthread_cancel(t[0]));
	CHECK_OK(pthread_cancel(t[5]));
	void *ret;
	CHECK_OK(pthread_join(t[0], &ret));
	CHECK(ret == PTHREAD_CANCELED);
	CHECK_OK(pthread_join(t[5], &ret));
	CHECK(ret == PTHREAD_CANCELED);
	CHECK(atomic_load(&cleanups) == 2);
	release_all();
	for (int i = 1; i < 10; i++) {
		if (i == 5)
			continue;
		CHECK_OK(pthread_join(t[i], &ret));
		CHECK(ret == NULL);
	}
	reset();

	/* 5 */
	spawn(t, NWAIT, sem_taker);
	CHECK(sem_post(&shm->step) == 0);
	join(t, NWAIT);
	int v;
	CHECK(sem_getvalue(&shm->s, &v) == 0 && v == 0);

	/* 6 */
	CHECK(sem_post(&shm->step) == 0);
	spawn(t, 4, incrementer);
	join(t, 4);
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(shm->count == 8L * NINC);
	printf("tp_pshared: ok\n");
	return 0;
}
