/* C11 threads: thrd_create/join/detach/exit, plain, recursive and timed
 * mutexes, condition variables, tss with a destructor, call_once, and the
 * C11 return codes. */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <threads.h>

#include "tp_util.h"

#define WORKERS 8
#define INCS 2000

static mtx_t lock;
static cnd_t cond;
static long counter;
static int ready;

static int worker(void *arg)
{
	for (int i = 0; i < INCS; i++) {
		CHECK(mtx_lock(&lock) == thrd_success);
		counter++;
		if (i % 100 == 0)
			thrd_yield();
		CHECK(mtx_unlock(&lock) == thrd_success);
	}
	return (int)(intptr_t)arg + 100;
}

static int exiter(void *arg)
{
	(void)arg;
	thrd_exit(-7);
}

static void threads_and_mutex(void)
{
	CHECK(mtx_init(&lock, mtx_plain) == thrd_success);
	thrd_t t[WORKERS];
	for (int i = 0; i < WORKERS; i++)
		CHECK(thrd_create(&t[i], worker, (void *)(intptr_t)i) == thrd_success);
	for (int i = 0; i < WORKERS; i++) {
		int res = 0;
		CHECK(thrd_join(t[i], &res) == thrd_success);
		CHECK(res == i + 100);
	}
	CHECK(counter == (long)WORKERS * INCS);
	thrd_t e;
	CHECK(thrd_create(&e, exiter, NULL) == thrd_success);
	int res = 0;
	CHECK(thrd_join(e, &res) == thrd_success && res == -7);
	CHECK(thrd_equal(thrd_current(), thrd_current()));
	CHECK(!thrd_equal(thrd_current(), e));
	mtx_destroy(&lock);
}

static int holder(void *arg)
{
	mtx_t *m = arg;
	CHECK(mtx_lock(m) == thrd_success);
	struct timespec d = { 0, 100 * 1000000L };
	CHECK(thrd_sleep(&d, NULL) == 0);
	CHECK(mtx_unlock(m) == thrd_success);
	return 0;
}

static void timed_and_recursive(void)
{
	mtx_t m;
	CHECK(mtx_init(&m, mtx_timed) == thrd_success);
	CHECK(mtx_lock(&m) == thrd_success);
	CHECK(mtx_trylock(&m) == thrd_busy);
	struct timespec ts;
	timespec_get(&ts, TIME_UTC);
	ts.tv_nsec += 30 * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	CHECK(mtx_timedlock(&m, &ts) == thrd_timedout);
	CHECK(mtx_unlock(&m) == thrd_success);

	/* Another thread holds it for 100 ms: a 10 s deadline is met. */
	thrd_t h;
	CHECK(thrd_create(&h, holder, &m) == thrd_success);
	struct timespec d = { 0, 20 * 1000000L };
	CHECK(thrd_sleep(&d, NULL) == 0);
	timespec_get(&ts, TIME_UTC);
	ts.tv_sec += 10;
	CHECK(mtx_timedlock(&m, &ts) == thrd_success);
	CHECK(mtx_unlock(&m) == thrd_success);
	CHECK(thrd_join(h, NULL) == thrd_success);
	mtx_destroy(&m);

	CHECK(mtx_init(&m, mtx_plain | mtx_recursive) == thrd_success);
	CHECK(mtx_lock(&m) == thrd_success);
	CHECK(mtx_lock(&m) == thrd_success);
	CHECK(mtx_trylock(&m) == thrd_success);
	CHECK(mtx_unlock(&m) == thrd_success);
	CHECK(mtx_unlock(&m) == thrd_success);
	CHECK(mtx_unlock(&m) == thrd_success);
	mtx_destroy(&m);

	/* C11's error for a bad sleep: a negative value other than -1. */
	struct timespec bad = { 0, 1000000000L };
	CHECK(thrd_sleep(&bad, NULL) < -1);
}

static int waiter(void *arg)
{
	(void)arg;
	CHECK(mtx_lock(&lock) == thrd_success);
	while (!ready)
		CHECK(cnd_wait(&cond, &lock) == thrd_success);
	ready++;
	CHECK(mtx_unlock(&lock) == thrd_success);
	return 0;
}

static void condvars(void)
{
	CHECK(mtx_init(&lock, mtx_plain) == thrd_success);
	CHECK(cnd_init(&cond) == thrd_success);
	thrd_t t[16];
	for (int i = 0; i < 16; i++)
		CHECK(thrd_create(&t[i], waiter, NULL) == thrd_success);
	struct timespec d = { 0, 20 * 1000000L };
	thrd_sleep(&d, NULL);
	/* On libppl the C11 threads are user-level threads too. */
	tp_check_kernel_threads(16);
	CHECK(mtx_lock(&lock) == thrd_success);
	ready = 1;
	CHECK(cnd_broadcast(&cond) == thrd_success);
	CHECK(mtx_unlock(&lock) == thrd_success);
	for (int i = 0; i < 16; i++)
		CHECK(thrd_join(t[i], NULL) == thrd_success);
	CHECK(ready == 17);

	/* Nobody signals: the timed wait times out. */
	struct timespec ts;
	timespec_get(&ts, TIME_UTC);
	ts.tv_nsec += 30 * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	CHECK(mtx_lock(&lock) == thrd_success);
	CHECK(cnd_timedwait(&cond, &lock, &ts) == thrd_timedout);
	CHECK(cnd_signal(&cond) == thrd_success);
	CHECK(mtx_unlock(&lock) == thrd_success);
	cnd_destroy(&cond);
	mtx_destroy(&lock);
}

static tss_t key;
static atomic_int destroyed;

static void dtor(void *p)
{
	CHECK(*(int *)p >= 0);
	atomic_fetch_add(&destroyed, 1);
}

static int tss_user(void *arg)
{
	CHECK(tss_get(key) == NULL);
	CHECK(tss_set(key, arg) == thrd_success);
	CHECK(tss_get(key) == arg);
	return 0;
}

static once_flag once = ONCE_FLAG_INIT;
static atomic_int once_runs;

static void init_once(void)
{
	atomic_fetch_add(&once_runs, 1);
}

static int onceer(void *arg)
{
	(void)arg;
	call_once(&once, init_once);
	CHECK(atomic_load(&once_runs) == 1);
	return 0;
}

static void tss_and_once(void)
{
	CHECK(tss_create(&key, dtor) == thrd_success);
	int vals[4] = { 0, 1, 2, 3 };
	thrd_t t[4];
	for (int i = 0; i < 4; i++)
		CHECK(thrd_create(&t[i], tss_user, &vals[i]) == thrd_success);
	for (int i = 0; i < 4; i++)
		CHECK(thrd_join(t[i], NULL) == thrd_success);
	CHECK(atomic_load(&destroyed) == 4);
	tss_delete(key);

	for (int i = 0; i < 4; i++)
		CHECK(thrd_create(&t[i], onceer, NULL) == thrd_success);
	for (int i = 0; i < 4; i++)
		CHECK(thrd_join(t[i], NULL) == thrd_success);
	CHECK(atomic_load(&once_runs) == 1);

	/* A detached thread, still running when main exits through thrd_exit. */
	thrd_t d;
	CHECK(thrd_create(&d, onceer, NULL) == thrd_success);
	CHECK(thrd_detach(d) == thrd_success);
}

int main(void)
{
	threads_and_mutex();
	timed_and_recursive();
	condvars();
	tss_and_once();
	printf("c11 threads ok\n");
	thrd_exit(0);
}
