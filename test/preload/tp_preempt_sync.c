/* Preemption does not break libppl's locks: many threads on (ideally) one
 * VP, mostly inside critical sections, so that ticks land there.  A
 * preempted holder of a mutex or spin lock must run again and release it;
 * a waiter must not lose a wake-up.  Counters updated non-atomically
 * under the locks show any breach of mutual exclusion. */
#include <pthread.h>

#include "tp_util.h"

#define THREADS 48
#define ROUNDS 300
#define QCAP 8
#define ITEMS (THREADS / 2 * ROUNDS)

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_spinlock_t sl;
static volatile long counter, spin_counter;

/* bounded queue: producers and consumers with two condition variables */
static pthread_mutex_t qm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static long q[QCAP];
static int qhead, qlen;
static long consumed_sum;

static void busy(int n)
{
	for (volatile int i = 0; i < n; i++)
		;
}

static void *worker(void *arg)
{
	long id = (long)arg;
	/* Phase 1: no blocking unless a holder was preempted, so a thread
	 * runs for many slices and most ticks land inside a critical section. */
	for (int r = 0; r < ROUNDS; r++) {
		CHECK_OK(pthread_mutex_lock(&m));
		long c = counter;
		busy(40000);
		counter = c + 1;
		CHECK_OK(pthread_mutex_unlock(&m));

		CHECK_OK(pthread_spin_lock(&sl));
		long s = spin_counter;
		busy(20000);
		spin_counter = s + 1;
		CHECK_OK(pthread_spin_unlock(&sl));
		busy(5000);
	}
	/* Phase 2: producers and consumers park and wake each other. */
	for (int r = 0; r < ROUNDS; r++) {
		CHECK_OK(pthread_mutex_lock(&qm));
		if (id % 2 == 0) {
			while (qlen == QCAP)
				CHECK_OK(pthread_cond_wait(&not_full, &qm));
			q[(qhead + qlen++) % QCAP] = id * ROUNDS + r;
			CHECK_OK(pthread_cond_signal(&not_empty));
		} else {
			while (qlen == 0)
				CHECK_OK(pthread_cond_wait(&not_empty, &qm));
			consumed_sum += q[qhead];
			qhead = (qhead + 1) % QCAP;
			qlen--;
			CHECK_OK(pthread_cond_signal(&not_full));
		}
		busy(2000);   /* in the critical section */
		CHECK_OK(pthread_mutex_unlock(&qm));
	}
	return NULL;
}

int main(void)
{
	CHECK_OK(pthread_spin_init(&sl, PTHREAD_PROCESS_PRIVATE));
	pthread_t t[THREADS];
	for (long i = 0; i < THREADS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, worker, (void *)i));
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	long want_sum = 0;
	for (long id = 0; id < THREADS; id += 2)
		for (int r = 0; r < ROUNDS; r++)
			want_sum += id * ROUNDS + r;
	CHECK(counter == (long)THREADS * ROUNDS);
	CHECK(spin_counter == (long)THREADS * ROUNDS);
	CHECK(qlen == 0);
	CHECK(consumed_sum == want_sum);
	printf("%d threads x %d rounds: mutex, spin lock and queue consistent\n", THREADS, ROUNDS);
	return 0;
}
