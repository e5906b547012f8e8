/* Process-directed standard and real-time signals (kill and sigqueue of
 * the process) while threads are parked in sem_wait, pthread_cond_wait,
 * nanosleep and read, each unblocking its own set of the signals, main
 * blocking them all (glibc's nptl/tst-signal3, generalised):
 *
 *  - every handler runs in a thread that unblocks its signal, with that
 *    thread's TLS (the thread's set is a __thread variable);
 *  - every instance of a real-time signal is delivered, once, with its
 *    si_value: sigqueue sends bursts of queued instances, kill sends a
 *    burst of SI_USER ones; standard ones may merge, but each kill is
 *    followed by its handler;
 *  - sem_wait and nanosleep fail with EINTR after a handler ran in them
 *    (never restarted, signal(7)); read on a pipe restarts (SA_RESTART)
 *    and returns only the byte written at the end.
 *
 * libppl used to run the handlers on whichever kernel thread took the
 * signal, in whatever user thread ran there (or none), and merged queued
 * real-time instances claimed by the process. */

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include "tp_util.h"

#define NRT 4            /* SIGRTMIN .. SIGRTMIN+3 */
#define BURST 24         /* instances queued at once per real-time signal */
#define ROUNDS 12
#define NVALUES (ROUNDS * BURST)
#define WAIT_NS 10000000000LL   /* everything handled within 10 s */

enum { T_SEM, T_COND, T_SLEEP, T_READ, NTHREADS };
static const char *const tname[NTHREADS] = { "sem_wait", "cond_wait", "nanosleep", "read" };

static int sig_of(int k)   /* k 0..NRT-1: real-time; NRT: SIGUSR1 */
{
	return k == NRT ? SIGUSR1 : SIGRTMIN + k;
}

/* Each thread's unblocked signals, as k bits; every signal has a taker. */
static const unsigned takes[NTHREADS] = {
	[T_SEM] = 1u << NRT | 1u << 0,
	[T_COND] = 1u << 1 | 1u << 2,
	[T_SLEEP] = 1u << 2 | 1u << 3,
	[T_READ] = 1u << 3 | 1u << 0 | 1u << NRT,
};

static __thread int my_index = -1;            /* -1: main */
static __thread atomic_int my_handled;
static atomic_int bad_thread;                 /* a handler ran where it is blocked */
static atomic_int count[NRT + 1];             /* instances handled per signal */
static atomic_int value_seen[NRT][NVALUES];   /* sigqueue's values, each once */
static atomic_int kill_seen[NRT];             /* SI_USER instances */
static atomic_int bad_value;
static atomic_int eintr_missing;              /* a handler ran, the call did not fail */
static atomic_int read_eintr;
static atomic_bool stop;
static sem_t sem;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int pipefd[2];

static void handler(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	int k = sig == SIGUSR1 ? NRT : sig - SIGRTMIN;
	if (my_index < 0 || !(takes[my_index] & (1u << k)))
		atomic_fetch_add(&bad_thread, 1);
	atomic_fetch_add(&my_handled, 1);
	if (k < NRT) {
		if (si->si_code == SI_QUEUE) {
			int v = si->si_value.sival_int;
			if (v < 0 || v >= NVALUES || atomic_fetch_add(&value_seen[k][v], 1) != 0)
				atomic_fetch_add(&bad_value, 1);
		} else if (si->si_code == SI_USER) {
			atomic_fetch_add(&kill_seen[k], 1);
		} else {
			atomic_fetch_add(&bad_value, 1);
		}
	}
	atomic_fetch_add(&count[k], 1);
}

static void set_mask(int idx)
{
	sigset_t s;
	sigemptyset(&s);
	for (int k = 0; k <= NRT; k++)
		if (takes[idx] & (1u << k))
			sigaddset(&s, sig_of(k));
	CHECK_OK(pthread_sigmask(SIG_UNBLOCK, &s, NULL));
}

static void *waiter(void *arg)
{
	my_index = (int)(long)arg;
	set_mask(my_index);
	while (!atomic_load(&stop)) {
		int before = atomic_load(&my_handled), r;
		switch (my_index) {
		case T_SEM:
			r = sem_wait(&sem);
			if (atomic_load(&my_handled) != before && !atomic_load(&stop) &&
			    !(r == -1 && errno == EINTR))
				atomic_fetch_add(&eintr_missing, 1);
			break;
		case T_COND:
			CHECK_OK(pthread_mutex_lock(&m));
			if (!atomic_load(&stop))
				CHECK_OK(pthread_cond_wait(&cv, &m));
			CHECK_OK(pthread_mutex_unlock(&m));
			break;
		case T_SLEEP: {
			struct timespec d = { 30, 0 };
			r = nanosleep(&d, NULL);
			if (atomic_load(&my_handled) != before && !(r == -1 && errno == EINTR))
				atomic_fetch_add(&eintr_missing, 1);
			break;
		}
		default: {
			char c;
			ssize_t n = read(pipefd[0], &c, 1);
			if (n == -1 && errno == EINTR)
				atomic_fetch_add(&read_eintr, 1);
			else
				CHECK(n == 1);
			break;
		}
		}
	}
	return NULL;
}

static int total_rt(void)
{
	int n = 0;
	for (int k = 0; k < NRT; k++)
		n += atomic_load(&count[k]);
	return n;
}

/* Until fn() reaches want, or fail after WAIT_NS. */
static void await(int (*fn)(void), int want, const char *what)
{
	long long t0 = tp_now_ns();
	while (fn() < want) {
		if (tp_now_ns() - t0 > WAIT_NS) {
			fprintf(stderr, "%s: %d of %d handled\n", what, fn(), want);
			exit(1);
		}
		struct timespec d = { 0, 1000000 };
		nanosleep(&d, NULL);
	}
}

static int usr1_count(void)
{
	return atomic_load(&count[NRT]);
}

int main(void)
{
	alarm(60);   /* the default action: a hang ends the test */
	sigset_t all;
	sigemptyset(&all);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (int k = 0; k <= NRT; k++) {
		sigaddset(&all, sig_of(k));
		CHECK(sigaction(sig_of(k), &sa, NULL) == 0);
	}
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &all, NULL));
	CHECK(sem_init(&sem, 0, 0) == 0);
	CHECK(pipe(pipefd) == 0);
	pthread_t th[NTHREADS];
	for (long i = 0; i < NTHREADS; i++)
		CHECK_OK(pthread_create(&th[i], NULL, waiter, (void *)i));
	struct timespec settle = { 0, 20000000 };
	nanosleep(&settle, NULL);

	pid_t me = getpid();
	int rt_sent = 0, usr1_sent = 0;
	for (int r = 0; r < ROUNDS; r++) {
		/* Queued instances, several of each pending at once. */
		for (int i = 0; i < BURST; i++)
			for (int k = 0; k < NRT; k++) {
				union sigval v = { .sival_int = r * BURST + i };
				CHECK(sigqueue(me, sig_of(k), v) == 0);
				rt_sent++;
			}
		/* kill: SI_USER instances, queued as well. */
		for (int k = 0; k < NRT; k++) {
			CHECK(kill(me, sig_of(k)) == 0);
			rt_sent++;
		}
		/* A standard one: may merge, but each is followed by a handler. */
		int before = usr1_count();
		CHECK(kill(me, SIGUSR1) == 0);
		usr1_sent++;
		await(usr1_count, before + 1, "SIGUSR1");
		await(total_rt, rt_sent, "real-time instances");
	}

	for (int k = 0; k < NRT; k++) {
		if (atomic_load(&kill_seen[k]) != ROUNDS) {
			fprintf(stderr, "SIGRTMIN+%d: %d kill() instances of %d\n", k,
				atomic_load(&kill_seen[k]), ROUNDS);
			return 1;
		}
		for (int v = 0; v < NVALUES; v++)
			if (atomic_load(&value_seen[k][v]) != 1) {
				fprintf(stderr, "SIGRTMIN+%d: value %d handled %d times\n", k, v,
					atomic_load(&value_seen[k][v]));
				return 1;
			}
	}
	if (total_rt() != rt_sent || atomic_load(&bad_value) != 0) {
		fprintf(stderr, "real-time: %d handled of %d sent, %d bad siginfos\n", total_rt(),
			rt_sent, atomic_load(&bad_value));
		return 1;
	}
	if (atomic_load(&bad_thread) != 0) {
		fprintf(stderr, "%d handlers ran in a thread that blocks the signal\n",
			atomic_load(&bad_thread));
		return 1;
	}
	if (atomic_load(&eintr_missing) != 0 || atomic_load(&read_eintr) != 0) {
		fprintf(stderr, "%d sem_wait/nanosleep not interrupted, %d reads failed with EINTR "
				"under SA_RESTART\n",
			atomic_load(&eintr_missing), atomic_load(&read_eintr));
		return 1;
	}

	/* Stop the waiters. */
	atomic_store(&stop, true);
	CHECK(sem_post(&sem) == 0);
	CHECK_OK(pthread_mutex_lock(&m));
	CHECK_OK(pthread_cond_broadcast(&cv));
	CHECK_OK(pthread_mutex_unlock(&m));
	CHECK(write(pipefd[1], "x", 1) == 1);
	CHECK_OK(pthread_kill(th[T_SLEEP], SIGRTMIN + 2));   /* ends its nanosleep */
	for (int i = 0; i < NTHREADS; i++)
		CHECK_OK(pthread_join(th[i], NULL));
	(void)tname;
	printf("ok: %d real-time instances, %d SIGUSR1 sent, %d handled\n", rt_sent, usr1_sent,
	       usr1_count());
	return 0;
}
