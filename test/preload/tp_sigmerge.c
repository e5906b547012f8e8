/* pthread_kill to two threads that share a kernel thread (one VP) while
 * that kernel thread blocks the signal: each thread must still get its
 * own.  The kernel keeps one instance of a standard signal pending per
 * kernel thread, so libppl used to lose the second one: a thread waiting
 * for it waited forever (seen as pthread_cond_init/1-3 hanging now and
 * then, three threads signalled by a handler that blocked the signal).
 *
 * Here w1 runs a SIGUSR1 handler whose sa_mask blocks SIGUSR2 and, inside
 * it, yields to w2 (on one VP the kernel thread keeps the handler's mask).
 * A thread of its own (PTHREAD_SCOPE_SYSTEM: a VP of its own) sends
 * SIGUSR2 to w1 while w1 spins in the handler, then to w2 while w2 spins.
 * w1 gets its signal when its handler returns, w2 at once on NPTL and,
 * on libppl, when it next resumes.  The interesting runs are the ones on
 * one VP (PPL_VPS=1); the others must pass as well. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

#include "tp_util.h"

static pthread_t w1, w2;
static atomic_int phase, w2_spinning, got1, got2, got_other;

static void on_usr2(int sig)
{
	(void)sig;
	pthread_t me = pthread_self();
	if (pthread_equal(me, w1))
		atomic_fetch_add(&got1, 1);
	else if (pthread_equal(me, w2))
		atomic_fetch_add(&got2, 1);
	else
		atomic_fetch_add(&got_other, 1);
}

static void on_usr1(int sig)
{
	(void)sig;
	atomic_store(&phase, 1);
	while (atomic_load(&phase) < 2)
		;
	while (atomic_load(&phase) < 3)
		sched_yield();
}

static int both_or_late(long long t0)
{
	return (atomic_load(&got1) && atomic_load(&got2)) || tp_now_ns() - t0 > 5000000000LL;
}

static void *worker1(void *arg)
{
	(void)arg;
	long long t0 = tp_now_ns();
	while (!both_or_late(t0))
		sched_yield();
	return NULL;
}

static void *worker2(void *arg)
{
	(void)arg;
	while (atomic_load(&phase) < 2)
		sched_yield();
	atomic_store(&w2_spinning, 1);
	while (atomic_load(&phase) < 3)
		;
	long long t0 = tp_now_ns();
	while (!both_or_late(t0))
		sched_yield();
	return NULL;
}

static void *sender(void *arg)
{
	(void)arg;
	CHECK_OK(pthread_kill(w1, SIGUSR1));
	while (atomic_load(&phase) < 1)
		;
	CHECK_OK(pthread_kill(w1, SIGUSR2));   /* w1 spins in on_usr1, SIGUSR2 blocked */
	atomic_store(&phase, 2);
	while (!atomic_load(&w2_spinning))
		;
	CHECK_OK(pthread_kill(w2, SIGUSR2));   /* w2 spins where w1 yielded */
	atomic_store(&phase, 3);
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_usr2;
	CHECK(sigaction(SIGUSR2, &sa, NULL) == 0);
	sa.sa_handler = on_usr1;
	sigaddset(&sa.sa_mask, SIGUSR2);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);

	CHECK_OK(pthread_create(&w1, NULL, worker1, NULL));
	CHECK_OK(pthread_create(&w2, NULL, worker2, NULL));
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setscope(&a, PTHREAD_SCOPE_SYSTEM));
	pthread_t s;
	CHECK_OK(pthread_create(&s, &a, sender, NULL));
	CHECK_OK(pthread_join(s, NULL));
	CHECK_OK(pthread_join(w1, NULL));
	CHECK_OK(pthread_join(w2, NULL));
	if (atomic_load(&got1) != 1 || atomic_load(&got2) != 1 || atomic_load(&got_other) != 0) {
		fprintf(stderr, "SIGUSR2 handled: w1 %d, w2 %d, elsewhere %d (want 1, 1, 0)\n",
			atomic_load(&got1), atomic_load(&got2), atomic_load(&got_other));
		return 1;
	}
	puts("sigmerge: ok");
	return 0;
}
