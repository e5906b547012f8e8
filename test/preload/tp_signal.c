/* Per-thread signals: pthread_kill to oneself, to a thread blocked on a
 * barrier (its handler runs, the wait goes on), to a thread parked in a
 * barrier, mutex, rwlock, cond or join wait (the handler runs in that
 * thread, and the wait goes on) or in nanosleep/sleep (EINTR with the time
 * left), to a thread that blocks the
 * signal (pending until it unblocks, in that thread); pthread_sigmask is per
 * thread and inherited by new threads; error codes. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "tp_util.h"

static atomic_int usr1, usr2;
static _Atomic(pthread_t) usr2_thread;
static pthread_barrier_t bar;
static atomic_int phase;

static void on_usr1(int sig)
{
	atomic_fetch_add(&usr1, 1);
}

static void on_usr2(int sig)
{
	atomic_store(&usr2_thread, pthread_self());
	atomic_fetch_add(&usr2, 1);
}

static void wait_for(atomic_int *v, int want)
{
	for (int i = 0; i < 5000 && atomic_load(v) < want; i++)
		usleep(1000);
	CHECK(atomic_load(v) >= want);
}

static void *barrier_waiter(void *arg)
{
	atomic_store(&phase, 1);
	int r = pthread_barrier_wait(&bar);
	CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
	atomic_store(&phase, 2);
	return NULL;
}

static void *masker(void *arg)
{
	sigset_t s, cur;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &s, NULL));
	atomic_store(&phase, 1);
	/* Switch a lot while main sends SIGUSR2: it must stay pending. */
	while (atomic_load(&phase) < 2)
		sched_yield();
	for (int i = 0; i < 200; i++)
		sched_yield();
	CHECK(atomic_load(&usr2) == 0);
	CHECK_OK(pthread_sigmask(SIG_SETMASK, NULL, &cur));
	CHECK(sigismember(&cur, SIGUSR2));
	CHECK_OK(pthread_sigmask(SIG_UNBLOCK, &s, NULL));
	/* Delivered to this thread by the time pthread_sigmask returns. */
	CHECK(atomic_load(&usr2) == 1);
	CHECK(pthread_equal(atomic_load(&usr2_thread), pthread_self()));
	return NULL;
}

static void *inherits(void *arg)
{
	sigset_t cur;
	CHECK_OK(pthread_sigmask(SIG_BLOCK, NULL, &cur));
	CHECK(sigismember(&cur, SIGUSR1));
	CHECK(!sigismember(&cur, SIGUSR2));
	return NULL;
}

/* ---- a signal for a parked thread runs its handler in that thread ---- */

enum { W_BARRIER, W_MUTEX, W_RDLOCK, W_WRLOCK, W_COND, W_JOIN, W_NANOSLEEP, W_SLEEP, W_SEM, W_N };
static const char *const w_name[W_N] = { "barrier", "mutex", "rdlock", "wrlock",
					 "cond", "join", "nanosleep", "sleep", "sem_wait" };
static sem_t psem;

static atomic_int hup;
static _Atomic(pthread_t) hup_thread;
static pthread_barrier_t pbar;
static pthread_mutex_t pm = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t prw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_cond_t pc = PTHREAD_COND_INITIALIZER;
static int cond_go;                  /* under pm */
static pthread_t join_target;
static int join_token;               /* join_target's result */
static atomic_int release_target, pstage;

static void on_hup(int sig)
{
	atomic_store(&hup_thread, pthread_self());
	atomic_fetch_add(&hup, 1);
}

static void *join_me(void *arg)
{
	while (!atomic_load(&release_target))
		usleep(1000);
	return arg;
}

static void *parker(void *arg)
{
	int kind = (int)(intptr_t)arg, r;
	struct timespec req = { 5, 0 }, rem = { 0, 0 };
	void *res;
	atomic_store(&pstage, 1);
	switch (kind) {
	case W_BARRIER:
		r = pthread_barrier_wait(&pbar);
		CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
		break;
	case W_MUTEX:
		CHECK_OK(pthread_mutex_lock(&pm));
		CHECK_OK(pthread_mutex_unlock(&pm));
		break;
	case W_RDLOCK:
		CHECK_OK(pthread_rwlock_rdlock(&prw));
		CHECK_OK(pthread_rwlock_unlock(&prw));
		break;
	case W_WRLOCK:
		CHECK_OK(pthread_rwlock_wrlock(&prw));
		CHECK_OK(pthread_rwlock_unlock(&prw));
		break;
	case W_COND:
		CHECK_OK(pthread_mutex_lock(&pm));
		while (!cond_go)
			CHECK_OK(pthread_cond_wait(&pc, &pm));
		CHECK_OK(pthread_mutex_unlock(&pm));
		break;
	case W_JOIN:
		CHECK_OK(pthread_join(join_target, &res));
		CHECK(res == &join_token);
		break;
	case W_NANOSLEEP:
		errno = 0;
		CHECK(nanosleep(&req, &rem) == -1);
		CHECK(errno == EINTR);
		CHECK(rem.tv_sec < 5 || (rem.tv_sec == 5 && rem.tv_nsec == 0));
		CHECK(rem.tv_sec > 0 || rem.tv_nsec > 0);
		CHECK(rem.tv_nsec >= 0 && rem.tv_nsec < 1000000000L);
		break;
	case W_SLEEP:
		r = (int)sleep(5);
		CHECK(r > 0 && r <= 5);
		break;
	case W_SEM:
		/* The handler has no SA_RESTART: sem_wait fails with EINTR. */
		errno = 0;
		CHECK(sem_wait(&psem) == -1);
		CHECK(errno == EINTR);
		break;
	}
	/* Woken by the handler only where the call returns early. */
	CHECK(atomic_load(&hup) > 0);
	atomic_store(&pstage, 2);
	return NULL;
}

static void signal_parked(int kind)
{
	pthread_t t;
	atomic_store(&pstage, 0);
	atomic_store(&release_target, 0);
	switch (kind) {
	case W_BARRIER:
		CHECK_OK(pthread_barrier_init(&pbar, NULL, 2));
		break;
	case W_MUTEX:
	case W_COND:
		CHECK_OK(pthread_mutex_lock(&pm));
		cond_go = 0;
		if (kind == W_COND)
			CHECK_OK(pthread_mutex_unlock(&pm));
		break;
	case W_RDLOCK:
	case W_WRLOCK:
		CHECK_OK(pthread_rwlock_wrlock(&prw));
		break;
	case W_JOIN:
		CHECK_OK(pthread_create(&join_target, NULL, join_me, &join_token));
		break;
	case W_SEM:
		CHECK(sem_init(&psem, 0, 0) == 0);
		break;
	}
	atomic_store(&hup, 0);
	CHECK_OK(pthread_create(&t, NULL, parker, (void *)(intptr_t)kind));
	wait_for(&pstage, 1);
	usleep(20000);                      /* let it park */
	CHECK_OK(pthread_kill(t, SIGHUP));
	wait_for(&hup, 1);
	if (!pthread_equal(atomic_load(&hup_thread), t))
		fprintf(stderr, "signal: handler for a thread in %s ran elsewhere\n", w_name[kind]);
	CHECK(pthread_equal(atomic_load(&hup_thread), t));
	if (kind != W_NANOSLEEP && kind != W_SLEEP && kind != W_SEM) {
		usleep(20000);
		CHECK(atomic_load(&pstage) == 1);   /* still waiting */
	}
	switch (kind) {
	case W_BARRIER:
		pthread_barrier_wait(&pbar);
		break;
	case W_MUTEX:
		CHECK_OK(pthread_mutex_unlock(&pm));
		break;
	case W_COND:
		CHECK_OK(pthread_mutex_lock(&pm));
		cond_go = 1;
		CHECK_OK(pthread_cond_signal(&pc));
		CHECK_OK(pthread_mutex_unlock(&pm));
		break;
	case W_RDLOCK:
	case W_WRLOCK:
		CHECK_OK(pthread_rwlock_unlock(&prw));
		break;
	case W_JOIN:
		atomic_store(&release_target, 1);
		break;
	}
	CHECK_OK(pthread_join(t, NULL));
	CHECK(atomic_load(&pstage) == 2);
	CHECK(atomic_load(&hup) == 1);
	if (kind == W_BARRIER)
		CHECK_OK(pthread_barrier_destroy(&pbar));
	if (kind == W_SEM) {
		/* The interrupted waiter left no trace: a post is taken at once. */
		int v = -1;
		CHECK(sem_getvalue(&psem, &v) == 0 && v == 0);
		CHECK(sem_post(&psem) == 0);
		CHECK(sem_trywait(&psem) == 0);
		CHECK(sem_destroy(&psem) == 0);
	}
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	sa.sa_handler = on_usr2;
	CHECK(sigaction(SIGUSR2, &sa, NULL) == 0);

	/* To oneself: handled before pthread_kill returns. */
	CHECK_OK(pthread_kill(pthread_self(), SIGUSR1));
	CHECK(atomic_load(&usr1) == 1);
	CHECK(pthread_kill(pthread_self(), 0) == 0);
	CHECK(pthread_kill(pthread_self(), -1) == EINVAL);
	CHECK(pthread_kill(pthread_self(), 65) == EINVAL);
	CHECK(pthread_sigmask(12345, NULL, NULL) == 0);   /* how is ignored without a set */
	sigset_t none;
	sigemptyset(&none);
	CHECK(pthread_sigmask(12345, &none, NULL) == EINVAL);

	/* To a thread blocked on a barrier: the handler runs, the wait goes on. */
	pthread_t t;
	CHECK_OK(pthread_barrier_init(&bar, NULL, 2));
	CHECK_OK(pthread_create(&t, NULL, barrier_waiter, NULL));
	wait_for(&phase, 1);
	usleep(20000);
	CHECK_OK(pthread_kill(t, SIGUSR1));
	wait_for(&usr1, 2);
	usleep(20000);
	CHECK(atomic_load(&phase) == 1);
	int r = pthread_barrier_wait(&bar);
	CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
	CHECK_OK(pthread_join(t, NULL));
	CHECK(atomic_load(&phase) == 2);
	CHECK_OK(pthread_barrier_destroy(&bar));

	/* A blocked signal stays pending on its thread until unblocked. */
	atomic_store(&phase, 0);
	CHECK_OK(pthread_create(&t, NULL, masker, NULL));
	wait_for(&phase, 1);
	CHECK_OK(pthread_kill(t, SIGUSR2));
	atomic_store(&phase, 2);
	CHECK_OK(pthread_join(t, NULL));
	CHECK(atomic_load(&usr2) == 1);

	/* Masks are inherited by new threads, and main's own is its own. */
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &s, NULL));
	CHECK_OK(pthread_create(&t, NULL, inherits, NULL));
	CHECK_OK(pthread_join(t, NULL));
	CHECK_OK(pthread_kill(pthread_self(), SIGUSR1));
	CHECK(atomic_load(&usr1) == 2);
	CHECK_OK(pthread_sigmask(SIG_UNBLOCK, &s, NULL));
	CHECK(atomic_load(&usr1) == 3);

	sa.sa_handler = on_hup;
	CHECK(sigaction(SIGHUP, &sa, NULL) == 0);
	for (int k = 0; k < W_N; k++)
		signal_parked(k);
	puts("signal: ok");
	return 0;
}
