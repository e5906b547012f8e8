/* Read-write locks under a mixed load, checked for exclusion: 8 threads
 * take one lock 20,000 times each by every way there is (rdlock, tryrdlock,
 * timed and clock read locks, the same for writes, some with a deadline
 * already past), while a ninth thread sends them SIGUSR1 (a signal ends a
 * park, not the wait).  Inside, readers count themselves in one word and
 * writers add WRITER; a reader that sees a writer there, or a writer that
 * sees anybody, fails the test.  A writer also checks EDEADLK and EBUSY on
 * its own lock.  Run for the default kind, PREFER_WRITER_NONRECURSIVE, and
 * a process-shared lock taken by a forked child as well.  At the end the
 * lock must be free: a trywrlock takes it.  libppl's uncontended paths are
 * one compare-and-swap, its contended ones a spin lock and queues
 * (rwlock.c): this mixes both, on one VP and many.  The process-shared
 * runs failed before 4 of 4 ways (a reader beside a writer, EDEADLK for a
 * thread that held nothing, a hang): the forked child, running one
 * thread, took the lock's spin lock over whenever it found it held, as if
 * its holder were a thread fork left behind; in shared memory it is the
 * parent's (spinlock.h). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "tp_util.h"

#define THREADS 8
#define ROUNDS  20000
#define WRITER  1000000L

struct shared {
	pthread_rwlock_t rw;
	atomic_long inside;  /* readers, plus WRITER per writer */
	atomic_long reads, writes;
	atomic_bool stop;
	atomic_int finished;  /* workers done (not joined: pthread_kill stays valid) */
};

static struct shared *sh;
static pthread_t workers[THREADS];

static void on_usr1(int sig)
{
	(void)sig;
}

static void enter_read(void)
{
	long v = atomic_fetch_add(&sh->inside, 1) + 1;
	CHECK(v < WRITER);
	atomic_fetch_add(&sh->reads, 1);
	atomic_fetch_sub(&sh->inside, 1);
}

static void enter_write(void)
{
	long v = atomic_fetch_add(&sh->inside, WRITER) + WRITER;
	CHECK(v == WRITER);
	CHECK(pthread_rwlock_rdlock(&sh->rw) == EDEADLK);
	CHECK(pthread_rwlock_wrlock(&sh->rw) == EDEADLK);
	CHECK(pthread_rwlock_tryrdlock(&sh->rw) == EBUSY);
	CHECK(pthread_rwlock_trywrlock(&sh->rw) == EBUSY);
	atomic_fetch_add(&sh->writes, 1);
	atomic_fetch_sub(&sh->inside, WRITER);
}

/* One lock and unlock by way `how` (0-9); false if it did not get it
 * (try, or timed out), as the call allows. */
static bool one_round(unsigned how)
{
	struct timespec past = {.tv_sec = 0, .tv_nsec = 1};
	struct timespec soon;
	int err;
	switch (how) {
	case 0: case 1: case 2: case 3:
		CHECK_OK(pthread_rwlock_rdlock(&sh->rw));
		enter_read();
		break;
	case 4:
		err = pthread_rwlock_tryrdlock(&sh->rw);
		CHECK(err == 0 || err == EBUSY);
		if (err)
			return false;
		enter_read();
		break;
	case 5:
		soon = tp_in_ms(CLOCK_MONOTONIC, 1);
		err = pthread_rwlock_clockrdlock(&sh->rw, CLOCK_MONOTONIC, &soon);
		CHECK(err == 0 || err == ETIMEDOUT);
		if (err)
			return false;
		enter_read();
		break;
	case 6:
		CHECK_OK(pthread_rwlock_wrlock(&sh->rw));
		enter_write();
		break;
	case 7:
		err = pthread_rwlock_trywrlock(&sh->rw);
		CHECK(err == 0 || err == EBUSY);
		if (err)
			return false;
		enter_write();
		break;
	case 8:
		soon = tp_in_ms(CLOCK_REALTIME, 1);
		err = pthread_rwlock_timedwrlock(&sh->rw, &soon);
		CHECK(err == 0 || err == ETIMEDOUT);
		if (err)
			return false;
		enter_write();
		break;
	default:
		/* A deadline already past: the lock if free, else ETIMEDOUT. */
		err = (how & 1) ? pthread_rwlock_timedrdlock(&sh->rw, &past)
				: pthread_rwlock_timedwrlock(&sh->rw, &past);
		CHECK(err == 0 || err == ETIMEDOUT);
		if (err)
			return false;
		if (how & 1)
			enter_read();
		else
			enter_write();
		break;
	}
	CHECK_OK(pthread_rwlock_unlock(&sh->rw));
	return true;
}

static void work(unsigned seed)
{
	for (int i = 0; i < ROUNDS; i++) {
		seed = seed * 1103515245u + 12345u;
		one_round((seed >> 16) % 11);
		if (i % 512 == 0)
			sched_yield();
	}
}

static void *worker(void *arg)
{
	work((unsigned)(size_t)arg * 7919u + 1);
	atomic_fetch_add(&sh->finished, 1);
	return NULL;
}

static void *signaller(void *arg)
{
	(void)arg;
	unsigned i = 0;
	while (!atomic_load(&sh->stop)) {
		pthread_kill(workers[i++ % THREADS], SIGUSR1);
		struct timespec ts = {0, 200000};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void run(int kind, bool pshared)
{
	pthread_rwlockattr_t a;
	CHECK_OK(pthread_rwlockattr_init(&a));
	CHECK_OK(pthread_rwlockattr_setkind_np(&a, kind));
	if (pshared)
		CHECK_OK(pthread_rwlockattr_setpshared(&a, PTHREAD_PROCESS_SHARED));
	CHECK_OK(pthread_rwlock_init(&sh->rw, &a));
	atomic_store(&sh->reads, 0);
	atomic_store(&sh->writes, 0);
	atomic_store(&sh->stop, false);
	atomic_store(&sh->finished, 0);

	pid_t child = -1;
	if (pshared) {
		child = fork();
		CHECK(child >= 0);
		if (child == 0) {
			work(424242);
			_exit(0);
		}
	}
	for (long i = 0; i < THREADS; i++)
		CHECK_OK(pthread_create(&workers[i], NULL, worker, (void *)i));
	pthread_t sig;
	CHECK_OK(pthread_create(&sig, NULL, signaller, NULL));
	while (atomic_load(&sh->finished) < THREADS) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	atomic_store(&sh->stop, true);
	CHECK_OK(pthread_join(sig, NULL));
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(pthread_join(workers[i], NULL));
	if (pshared) {
		int status;
		CHECK(waitpid(child, &status, 0) == child);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}

	CHECK(atomic_load(&sh->inside) == 0);
	CHECK(atomic_load(&sh->reads) > 0 && atomic_load(&sh->writes) > 0);
	CHECK_OK(pthread_rwlock_trywrlock(&sh->rw));
	CHECK_OK(pthread_rwlock_unlock(&sh->rw));
	CHECK_OK(pthread_rwlock_tryrdlock(&sh->rw));
	CHECK_OK(pthread_rwlock_unlock(&sh->rw));
	CHECK_OK(pthread_rwlock_destroy(&sh->rw));
	printf("kind %d%s: %ld reads, %ld writes\n", kind, pshared ? ", process-shared" : "",
	       atomic_load(&sh->reads), atomic_load(&sh->writes));
}

int main(void)
{
	sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(sh != MAP_FAILED);
	struct sigaction sa = {.sa_handler = on_usr1};
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);

	run(PTHREAD_RWLOCK_PREFER_READER_NP, false);
	run(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP, false);
	run(PTHREAD_RWLOCK_PREFER_READER_NP, true);
	run(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP, true);
	return 0;
}
