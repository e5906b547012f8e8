/* pthread_cond_* through <pthread.h>: producer/consumer, broadcast to many
 * waiters, signal waking one, timeouts (ETIMEDOUT with the mutex held) on
 * the attribute's clock and with clockwait, error codes as glibc 2.36, and
 * process-shared condition variables.  Must pass natively and on libppl. */
#include "api_util.h"

/* ---- producer / consumer ---------------------------------------------------------- */

#define NPROD 4
#define NCONS 4
#define NITEMS 10000     /* per producer */
#define QCAP 16

struct queue {
	pthread_mutex_t m;
	pthread_cond_t not_empty, not_full;
	long buf[QCAP];
	int head, len;
	long consumed_sum;
	long consumed_n;
	int producers_left;
};

static void *producer(void *arg)
{
	struct queue *q = arg;
	for (long i = 1; i <= NITEMS; i++) {
		pthread_mutex_lock(&q->m);
		while (q->len == QCAP)
			pthread_cond_wait(&q->not_full, &q->m);
		q->buf[(q->head + q->len) % QCAP] = i;
		q->len++;
		pthread_cond_signal(&q->not_empty);
		pthread_mutex_unlock(&q->m);
	}
	pthread_mutex_lock(&q->m);
	if (--q->producers_left == 0)
		pthread_cond_broadcast(&q->not_empty);
	pthread_mutex_unlock(&q->m);
	return NULL;
}

static void *consumer(void *arg)
{
	struct queue *q = arg;
	for (;;) {
		pthread_mutex_lock(&q->m);
		while (q->len == 0 && q->producers_left > 0)
			pthread_cond_wait(&q->not_empty, &q->m);
		if (q->len == 0) {
			pthread_mutex_unlock(&q->m);
			return NULL;
		}
		long v = q->buf[q->head];
		q->head = (q->head + 1) % QCAP;
		q->len--;
		q->consumed_sum += v;
		q->consumed_n++;
		pthread_cond_signal(&q->not_full);
		pthread_mutex_unlock(&q->m);
	}
}

static void run_producer_consumer(const pthread_condattr_t *ca, const pthread_mutexattr_t *ma)
{
	static struct queue q;
	pthread_t p[NPROD], c[NCONS];
	assert_int_equal(pthread_mutex_init(&q.m, ma), 0);
	assert_int_equal(pthread_cond_init(&q.not_empty, ca), 0);
	assert_int_equal(pthread_cond_init(&q.not_full, ca), 0);
	q.head = q.len = 0;
	q.consumed_sum = q.consumed_n = 0;
	q.producers_left = NPROD;
	for (int i = 0; i < NCONS; i++)
		assert_int_equal(pthread_create(&c[i], NULL, consumer, &q), 0);
	for (int i = 0; i < NPROD; i++)
		assert_int_equal(pthread_create(&p[i], NULL, producer, &q), 0);
	for (int i = 0; i < NPROD; i++)
		assert_int_equal(pthread_join(p[i], NULL), 0);
	for (int i = 0; i < NCONS; i++)
		assert_int_equal(pthread_join(c[i], NULL), 0);
	assert_int_equal(q.consumed_n, (long)NPROD * NITEMS);
	assert_int_equal(q.consumed_sum, (long)NPROD * NITEMS * (NITEMS + 1) / 2);
	assert_int_equal(pthread_cond_destroy(&q.not_empty), 0);
	assert_int_equal(pthread_cond_destroy(&q.not_full), 0);
	assert_int_equal(pthread_mutex_destroy(&q.m), 0);
}

static void test_producer_consumer(void **state)
{
	run_producer_consumer(NULL, NULL);
}

static void test_producer_consumer_pshared(void **state)
{
	pthread_condattr_t ca;
	pthread_mutexattr_t ma;
	assert_int_equal(pthread_condattr_init(&ca), 0);
	assert_int_equal(pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED), 0);
	assert_int_equal(pthread_mutexattr_init(&ma), 0);
	assert_int_equal(pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED), 0);
	run_producer_consumer(&ca, &ma);
}

/* ---- broadcast and signal ------------------------------------------------------------ */

#define NWAITERS 50

struct gate {
	pthread_mutex_t m;
	pthread_cond_t c;
	int open;
	atomic_int waiting;     /* entered the wait loop */
	atomic_int passed;
	int tickets;            /* signal test: waiters allowed through */
};

static void *gate_waiter(void *arg)
{
	struct gate *g = arg;
	pthread_mutex_lock(&g->m);
	atomic_fetch_add(&g->waiting, 1);
	while (!g->open && g->tickets == 0)
		pthread_cond_wait(&g->c, &g->m);
	if (!g->open)
		g->tickets--;
	pthread_mutex_unlock(&g->m);
	atomic_fetch_add(&g->passed, 1);
	return NULL;
}

static void test_broadcast_many(void **state)
{
	static struct gate g = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER };
	pthread_t t[NWAITERS];
	for (int round = 0; round < 3; round++) {
		g.open = 0;
		atomic_store(&g.waiting, 0);
		atomic_store(&g.passed, 0);
		for (int i = 0; i < NWAITERS; i++)
			assert_int_equal(pthread_create(&t[i], NULL, gate_waiter, &g), 0);
		assert_true(wait_for(&g.waiting, NWAITERS));
		usleep(20000);
		assert_int_equal(atomic_load(&g.passed), 0);
		pthread_mutex_lock(&g.m);
		g.open = 1;
		assert_int_equal(pthread_cond_broadcast(&g.c), 0);
		pthread_mutex_unlock(&g.m);
		for (int i = 0; i < NWAITERS; i++)
			assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(atomic_load(&g.passed), NWAITERS);
	}
	assert_int_equal(pthread_cond_destroy(&g.c), 0);
}

/* Each signal lets exactly one waiter through; one never wakes them all. */
static void test_signal_wakes_one(void **state)
{
	static struct gate g = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER };
	enum { N = 8 };
	pthread_t t[N];
	for (int i = 0; i < N; i++)
		assert_int_equal(pthread_create(&t[i], NULL, gate_waiter, &g), 0);
	assert_true(wait_for(&g.waiting, N));
	usleep(20000);
	for (int k = 1; k <= N; k++) {
		pthread_mutex_lock(&g.m);
		g.tickets++;
		assert_int_equal(pthread_cond_signal(&g.c), 0);
		pthread_mutex_unlock(&g.m);
		assert_true(wait_for(&g.passed, k));
		usleep(10000);
		assert_int_equal(atomic_load(&g.passed), k);
	}
	for (int i = 0; i < N; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	/* signal and broadcast with no waiter are no-ops */
	assert_int_equal(pthread_cond_signal(&g.c), 0);
	assert_int_equal(pthread_cond_broadcast(&g.c), 0);
}

/* ---- time-outs --------------------------------------------------------------------- */

static void check_timeout(pthread_cond_t *c, clockid_t clk, int use_clockwait)
{
	pthread_mutex_t m = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	struct timespec t0, ts;
	assert_int_equal(pthread_mutex_lock(&m), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);   /* before the deadline: see test_mutex.c */
	ts = in_ms(clk, 100);
	int err = use_clockwait ? pthread_cond_clockwait(c, &m, clk, &ts)
				: pthread_cond_timedwait(c, &m, &ts);
	long ms = ms_since(&t0);
	assert_int_equal(err, ETIMEDOUT);
	assert_true(ms >= 99);
	assert_true(ms < 5000);
	/* re-acquired: the errorcheck mutex is ours to unlock, once */
	assert_int_equal(pthread_mutex_lock(&m), EDEADLK);
	assert_int_equal(pthread_mutex_unlock(&m), 0);
	assert_int_equal(pthread_mutex_unlock(&m), EPERM);
}

static void test_timedwait_realtime(void **state)
{
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	check_timeout(&c, CLOCK_REALTIME, 0);
	check_timeout(&c, CLOCK_REALTIME, 1);
	check_timeout(&c, CLOCK_MONOTONIC, 1);
	assert_int_equal(pthread_cond_destroy(&c), 0);
}

/* A monotonic time read as a realtime one would be decades in the past. */
static void test_timedwait_monotonic_attr(void **state)
{
	pthread_condattr_t a;
	pthread_cond_t c;
	clockid_t clk;
	assert_int_equal(pthread_condattr_init(&a), 0);
	assert_int_equal(pthread_condattr_getclock(&a, &clk), 0);
	assert_int_equal(clk, CLOCK_REALTIME);
	assert_int_equal(pthread_condattr_setclock(&a, CLOCK_MONOTONIC), 0);
	assert_int_equal(pthread_condattr_getclock(&a, &clk), 0);
	assert_int_equal(clk, CLOCK_MONOTONIC);
	assert_int_equal(pthread_cond_init(&c, &a), 0);
	check_timeout(&c, CLOCK_MONOTONIC, 0);
	check_timeout(&c, CLOCK_REALTIME, 1);   /* clockwait overrides the attribute */
	assert_int_equal(pthread_cond_destroy(&c), 0);
	assert_int_equal(pthread_condattr_destroy(&a), 0);
}

static void test_timedwait_pshared(void **state)
{
	pthread_condattr_t a;
	pthread_cond_t c;
	assert_int_equal(pthread_condattr_init(&a), 0);
	assert_int_equal(pthread_condattr_setpshared(&a, PTHREAD_PROCESS_SHARED), 0);
	assert_int_equal(pthread_condattr_setclock(&a, CLOCK_MONOTONIC), 0);
	assert_int_equal(pthread_cond_init(&c, &a), 0);
	check_timeout(&c, CLOCK_MONOTONIC, 0);
	assert_int_equal(pthread_cond_destroy(&c), 0);
}

struct timed_wake {
	pthread_mutex_t m;
	pthread_cond_t c;
	int flag;
	int result;
};

static void *timed_waiter(void *arg)
{
	struct timed_wake *w = arg;
	struct timespec ts = in_ms(CLOCK_REALTIME, 10000);
	pthread_mutex_lock(&w->m);
	w->result = 0;
	while (!w->flag && w->result == 0)
		w->result = pthread_cond_timedwait(&w->c, &w->m, &ts);
	pthread_mutex_unlock(&w->m);
	return NULL;
}

static void test_timedwait_signalled_in_time(void **state)
{
	static struct timed_wake w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER };
	pthread_t t;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(pthread_create(&t, NULL, timed_waiter, &w), 0);
	usleep(50000);
	pthread_mutex_lock(&w.m);
	w.flag = 1;
	pthread_cond_signal(&w.c);
	pthread_mutex_unlock(&w.m);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(w.result, 0);
	assert_true(ms_since(&t0) < 5000);
}

/* ---- errors ---------------------------------------------------------------------------- */

static void test_errors(void **state)
{
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	pthread_mutex_t m = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	struct timespec bad = { 0, -1 }, bad2 = { 0, 1000000000L }, past = { -1, 0 };
	/* not owning an errorcheck mutex */
	assert_int_equal(pthread_cond_wait(&c, &m), EPERM);
	assert_int_equal(pthread_mutex_lock(&m), 0);
	assert_int_equal(pthread_cond_timedwait(&c, &m, &bad), EINVAL);
	assert_int_equal(pthread_cond_timedwait(&c, &m, &bad2), EINVAL);
	assert_int_equal(pthread_cond_clockwait(&c, &m, CLOCK_MONOTONIC_RAW, &past), EINVAL);
	assert_int_equal(pthread_cond_clockwait(&c, &m, CLOCK_PROCESS_CPUTIME_ID, &past), EINVAL);
	assert_int_equal(pthread_cond_timedwait(&c, &m, &past), ETIMEDOUT);
	assert_int_equal(pthread_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &past), ETIMEDOUT);
	/* still held after every one of them */
	assert_int_equal(pthread_mutex_unlock(&m), 0);
	assert_int_equal(pthread_cond_destroy(&c), 0);
}

static void test_attr(void **state)
{
	pthread_condattr_t a;
	int v;
	clockid_t clk;
	assert_int_equal(pthread_condattr_init(&a), 0);
	assert_int_equal(pthread_condattr_getpshared(&a, &v), 0);
	assert_int_equal(v, PTHREAD_PROCESS_PRIVATE);
	assert_int_equal(pthread_condattr_setpshared(&a, 2), EINVAL);
	assert_int_equal(pthread_condattr_setpshared(&a, PTHREAD_PROCESS_SHARED), 0);
	assert_int_equal(pthread_condattr_getpshared(&a, &v), 0);
	assert_int_equal(v, PTHREAD_PROCESS_SHARED);
	assert_int_equal(pthread_condattr_setclock(&a, CLOCK_PROCESS_CPUTIME_ID), EINVAL);
	assert_int_equal(pthread_condattr_setclock(&a, CLOCK_MONOTONIC_RAW), EINVAL);
	assert_int_equal(pthread_condattr_setclock(&a, 77), EINVAL);
	assert_int_equal(pthread_condattr_setclock(&a, CLOCK_MONOTONIC), 0);
	assert_int_equal(pthread_condattr_getclock(&a, &clk), 0);
	assert_int_equal(clk, CLOCK_MONOTONIC);
	assert_int_equal(pthread_condattr_getpshared(&a, &v), 0);
	assert_int_equal(v, PTHREAD_PROCESS_SHARED);
	assert_int_equal(pthread_condattr_setclock(&a, CLOCK_REALTIME), 0);
	assert_int_equal(pthread_condattr_getclock(&a, &clk), 0);
	assert_int_equal(clk, CLOCK_REALTIME);
	assert_int_equal(pthread_condattr_destroy(&a), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_producer_consumer),
		cmocka_unit_test(test_producer_consumer_pshared),
		cmocka_unit_test(test_broadcast_many),
		cmocka_unit_test(test_signal_wakes_one),
		cmocka_unit_test(test_timedwait_realtime),
		cmocka_unit_test(test_timedwait_monotonic_attr),
		cmocka_unit_test(test_timedwait_pshared),
		cmocka_unit_test(test_timedwait_signalled_in_time),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_attr),
	};
	return run_bound(tests, sizeof tests / sizeof tests[0]);
}
