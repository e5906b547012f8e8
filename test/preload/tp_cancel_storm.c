/* A cancel storm: 120 threads, 20 each blocked in pthread_cond_wait, read
 * on a pipe, sem_wait, sleep, pthread_cond_timedwait and poll, each with a
 * cleanup handler; main cancels them all, then joins each with a timed
 * join.  Every cleanup handler must run exactly once and every thread end
 * PTHREAD_CANCELED.  With libppl, a thread blocked in read or poll holds its
 * VP's kernel thread in the kernel while the others (main among them) are
 * queued there: the monitor lends the VP to a spare, and the cancel of that
 * thread takes it back.  Before the fix, main never returned from cancelling
 * the first reader in about half the runs (ROUNDS storms per run). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

#include "tp_util.h"

#define PER_KIND 20
#define KINDS 6
#define NTHREADS (PER_KIND * KINDS)
#define ROUNDS 5

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static sem_t sem;
static int fds[2];   /* a pipe nobody writes to */
static atomic_int cleaned[NTHREADS];
static atomic_int started;

static void cleanup(void *arg)
{
	atomic_fetch_add(&cleaned[(long)arg], 1);
}

static void unlock_mu(void *arg)
{
	(void)arg;
	pthread_mutex_unlock(&mu);
}

static void cond_wait_forever(bool timed)
{
	pthread_mutex_lock(&mu);
	pthread_cleanup_push(unlock_mu, NULL);
	for (;;) {
		if (!timed) {
			pthread_cond_wait(&cv, &mu);
			continue;
		}
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 100;
		pthread_cond_timedwait(&cv, &mu, &ts);
	}
	pthread_cleanup_pop(1);
}

static void block_forever(long kind)
{
	char c;
	struct pollfd p = { .fd = fds[0], .events = POLLIN };
	for (;;) {
		switch (kind) {
		case 0: cond_wait_forever(false); break;
		case 1: (void)read(fds[0], &c, 1); break;
		case 2: sem_wait(&sem); break;
		case 3: sleep(100); break;
		case 4: cond_wait_forever(true); break;
		default: (void)poll(&p, 1, -1); break;
		}
	}
}

static void *worker(void *arg)
{
	pthread_cleanup_push(cleanup, arg);
	atomic_fetch_add(&started, 1);
	block_forever((long)arg % KINDS);
	pthread_cleanup_pop(0);
	return NULL;
}

static void storm(int round)
{
	pthread_t t[NTHREADS];
	atomic_store(&started, 0);
	for (long i = 0; i < NTHREADS; i++) {
		atomic_store(&cleaned[i], 0);
		CHECK_OK(pthread_create(&t[i], NULL, worker, (void *)i));
	}
	while (atomic_load(&started) < NTHREADS)
		usleep(1000);
	usleep(20000);   /* into their waits */
	for (int i = 0; i < NTHREADS; i++)
		CHECK_OK(pthread_cancel(t[i]));
	for (int i = 0; i < NTHREADS; i++) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 10;
		void *res;
		int err = pthread_timedjoin_np(t[i], &res, &ts);
		if (err != 0) {
			fprintf(stderr, "round %d: join of thread %d (kind %d): %s\n", round, i,
				i % KINDS, strerror(err));
			exit(1);
		}
		CHECK(res == PTHREAD_CANCELED);
		CHECK(atomic_load(&cleaned[i]) == 1);
	}
}

int main(void)
{
	alarm(100);
	CHECK(pipe(fds) == 0);
	CHECK(sem_init(&sem, 0, 0) == 0);
	for (int r = 0; r < ROUNDS; r++)
		storm(r);
	puts("cancel-storm: ok");
	return 0;
}
