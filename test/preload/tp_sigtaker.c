/* Process-directed signals that only short-lived threads take
 * (pthread_join/6-3, pthread_detach/4-3): main blocks SIGUSR1 before it
 * creates any thread, two senders that block it too kill() the process
 * and wait for the handler's sem_post, and a worker that unblocks it
 * creates and joins threads (some bound, PTHREAD_SCOPE_SYSTEM) that only
 * yield.  Every kill() must run the handler once.  On 2 VPs libppl lost
 * one within the first few: VP 0's kernel thread kept the mask main had
 * when it became VP 0, while the VP recorded none, so no thread switch
 * there ever installed another and the signals for the threads running
 * there stayed blocked until those threads had exited; and a signal could
 * go to a thread that pthread_create was still setting up, whose pending
 * set was then cleared. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>

#include "tp_util.h"

#define ROUNDS 4000   /* per sender */
#define WAIT_S 5      /* for one handler: the loss is a hang */

static sem_t posted[2];
static atomic_int handled[2], done, finished;

static void on_sig(int sig)
{
	int i = sig == SIGUSR1 ? 0 : 1;
	atomic_fetch_add(&handled[i], 1);
	sem_post(&posted[i]);
}

static void *yielder(void *arg)
{
	(void)arg;
	sched_yield();
	return NULL;
}

static void *worker(void *arg)
{
	(void)arg;
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	sigaddset(&s, SIGUSR2);
	CHECK_OK(pthread_sigmask(SIG_UNBLOCK, &s, NULL));
	pthread_attr_t bound;
	CHECK_OK(pthread_attr_init(&bound));
	int has_bound = pthread_attr_setscope(&bound, PTHREAD_SCOPE_SYSTEM) == 0;
	for (unsigned n = 0; !atomic_load(&done); n++) {
		pthread_t t;
		CHECK_OK(pthread_create(&t, has_bound && n % 4 == 0 ? &bound : NULL, yielder, NULL));
		CHECK_OK(pthread_join(t, NULL));
	}
	CHECK_OK(pthread_attr_destroy(&bound));
	return NULL;
}

static void *sender(void *arg)
{
	int i = (int)(intptr_t)arg;
	for (int r = 0; r < ROUNDS; r++) {
		CHECK(kill(getpid(), i == 0 ? SIGUSR1 : SIGUSR2) == 0);
		struct timespec dl;
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += WAIT_S;
		int rc;
		while ((rc = sem_timedwait(&posted[i], &dl)) != 0 && errno == EINTR)
			;
		if (rc != 0) {
			fprintf(stderr, "sender %d: signal %d of %d never handled (%d handled)\n",
				i, r + 1, ROUNDS, atomic_load(&handled[i]));
			exit(1);
		}
	}
	atomic_fetch_add(&finished, 1);
	return NULL;
}

int main(void)
{
	alarm(60);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_sig;
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	CHECK(sigaction(SIGUSR2, &sa, NULL) == 0);
	/* Blocked before the first thread, so main (and the senders, which
	 * inherit it) never take them: only the worker's threads do. */
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	sigaddset(&s, SIGUSR2);
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &s, NULL));
	CHECK(sem_init(&posted[0], 0, 0) == 0);
	CHECK(sem_init(&posted[1], 0, 0) == 0);
	pthread_t w, snd[2];
	CHECK_OK(pthread_create(&w, NULL, worker, NULL));
	for (int i = 0; i < 2; i++)
		CHECK_OK(pthread_create(&snd[i], NULL, sender, (void *)(intptr_t)i));
	/* Busy meanwhile, as a program's main thread may be: its VP (0)
	 * never goes idle. */
	while (atomic_load(&finished) < 2)
		sched_yield();
	for (int i = 0; i < 2; i++)
		CHECK_OK(pthread_join(snd[i], NULL));
	atomic_store(&done, 1);
	CHECK_OK(pthread_join(w, NULL));
	for (int i = 0; i < 2; i++)
		CHECK(atomic_load(&handled[i]) == ROUNDS);
	printf("ok: %d signals, each handled once\n", 2 * ROUNDS);
	return 0;
}
