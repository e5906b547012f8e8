/* Deferred cancellation at each blocking cancellation point (cond_wait with
 * the mutex held again in the handler, join, sleep, nanosleep, testcancel),
 * the disabled state, cleanup handler order, pthread_exit running the
 * handlers, and the error cases. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "tp_util.h"

static atomic_int started, order[8], norder;
static pthread_mutex_t m;          /* error-checking: unlock tells who owns it */
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static atomic_int unlock_result = -1;

static void record(void *arg)
{
	int i = atomic_fetch_add(&norder, 1);
	if (i < 8)
		atomic_store(&order[i], (int)(intptr_t)arg);
}

static void reset(void)
{
	atomic_store(&started, 0);
	atomic_store(&norder, 0);
	for (int i = 0; i < 8; i++)
		atomic_store(&order[i], 0);
}

static void wait_started(void)
{
	while (!atomic_load(&started))
		usleep(1000);
}

/* Cancel t once it is (about to be) blocked, join it, expect PTHREAD_CANCELED. */
static void cancel_and_join(pthread_t t)
{
	void *res;
	wait_started();
	usleep(20000);    /* let it reach the blocking call */
	CHECK_OK(pthread_cancel(t));
	CHECK_OK(pthread_join(t, &res));
	CHECK(res == PTHREAD_CANCELED);
}

/* ---- cond_wait: the handler runs with the mutex held ---------------------- */

static void cond_handler(void *arg)
{
	atomic_store(&unlock_result, pthread_mutex_unlock(&m));
}

static void *cond_waiter(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&m));
	pthread_cleanup_push(cond_handler, NULL);
	atomic_store(&started, 1);
	for (;;)
		pthread_cond_wait(&c, &m);
	pthread_cleanup_pop(0);
	return NULL;
}

static void *cond_timed_waiter(void *arg)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 60;
	CHECK_OK(pthread_mutex_lock(&m));
	pthread_cleanup_push(cond_handler, NULL);
	atomic_store(&started, 1);
	for (;;)
		pthread_cond_timedwait(&c, &m, &ts);
	pthread_cleanup_pop(0);
	return NULL;
}

/* ---- join, sleep, nanosleep, testcancel ------------------------------------ */

static void *forever(void *arg)
{
	for (;;)
		sleep(1);
	return NULL;
}

static void *joiner(void *arg)
{
	pthread_cleanup_push(record, (void *)1);
	atomic_store(&started, 1);
	pthread_join(*(pthread_t *)arg, NULL);
	pthread_cleanup_pop(0);
	return NULL;
}

static void *sleeper(void *arg)
{
	pthread_cleanup_push(record, (void *)2);
	atomic_store(&started, 1);
	sleep(100);
	pthread_cleanup_pop(0);
	return NULL;
}

static void *nanosleeper(void *arg)
{
	struct timespec ts = { 100, 0 };
	pthread_cleanup_push(record, (void *)3);
	atomic_store(&started, 1);
	nanosleep(&ts, NULL);
	pthread_cleanup_pop(0);
	return NULL;
}

/* Handlers run innermost first; a popped one does not run; one popped with
 * a nonzero argument runs at the pop. */
static void *poller(void *arg)
{
	pthread_cleanup_push(record, (void *)1);
	pthread_cleanup_push(record, (void *)2);
	pthread_cleanup_push(record, (void *)9);
	pthread_cleanup_pop(0);
	pthread_cleanup_push(record, (void *)3);
	pthread_cleanup_pop(1);
	pthread_cleanup_push(record, (void *)4);
	atomic_store(&started, 1);
	for (;;)
		pthread_testcancel();
	pthread_cleanup_pop(0);
	pthread_cleanup_pop(0);
	pthread_cleanup_pop(0);
	return NULL;
}

/* ---- disabled, then enabled ------------------------------------------------- */

static atomic_int may_enable, survived;

static void *disabled(void *arg)
{
	int old;
	CHECK_OK(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old));
	CHECK(old == PTHREAD_CANCEL_ENABLE);
	atomic_store(&started, 1);
	while (!atomic_load(&may_enable))
		usleep(1000);          /* cancellation points, all ignored */
	pthread_testcancel();
	atomic_store(&survived, 1);
	CHECK_OK(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old));
	CHECK(old == PTHREAD_CANCEL_DISABLE);
	pthread_testcancel();
	atomic_store(&survived, 2);
	return NULL;
}

/* ---- pthread_exit ------------------------------------------------------------- */

static void *exiter(void *arg)
{
	pthread_cleanup_push(record, (void *)1);
	pthread_cleanup_push(record, (void *)2);
	pthread_exit((void *)42);
	pthread_cleanup_pop(0);
	pthread_cleanup_pop(0);
	return NULL;
}

static void *returner(void *arg)
{
	return (void *)7;
}

static void check_order(int n, const int *want)
{
	CHECK(atomic_load(&norder) == n);
	for (int i = 0; i < n; i++)
		CHECK(atomic_load(&order[i]) == want[i]);
}

int main(void)
{
	pthread_t t, u;
	void *res;
	pthread_mutexattr_t ma;
	CHECK_OK(pthread_mutexattr_init(&ma));
	CHECK_OK(pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK));
	CHECK_OK(pthread_mutex_init(&m, &ma));

	/* Bad values, and the state and type defaults. */
	int old = -1;
	CHECK(pthread_setcancelstate(7, &old) == EINVAL);
	CHECK(pthread_setcanceltype(-1, &old) == EINVAL);
	CHECK_OK(pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &old));
	CHECK(old == PTHREAD_CANCEL_DEFERRED);
	CHECK_OK(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old));
	CHECK(old == PTHREAD_CANCEL_ENABLE);
	CHECK_OK(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL));

	/* cond_wait and cond_timedwait. */
	for (int k = 0; k < 2; k++) {
		reset();
		atomic_store(&unlock_result, -1);
		CHECK_OK(pthread_create(&t, NULL, k ? cond_timed_waiter : cond_waiter, NULL));
		cancel_and_join(t);
		CHECK(atomic_load(&unlock_result) == 0);
	}

	/* join: the cancelled joiner leaves its target joinable. */
	reset();
	CHECK_OK(pthread_create(&u, NULL, forever, NULL));
	CHECK_OK(pthread_create(&t, NULL, joiner, &u));
	cancel_and_join(t);
	check_order(1, (int[]){ 1 });
	CHECK_OK(pthread_cancel(u));
	CHECK_OK(pthread_join(u, &res));
	CHECK(res == PTHREAD_CANCELED);

	reset();
	CHECK_OK(pthread_create(&t, NULL, sleeper, NULL));
	cancel_and_join(t);
	check_order(1, (int[]){ 2 });

	reset();
	CHECK_OK(pthread_create(&t, NULL, nanosleeper, NULL));
	cancel_and_join(t);
	check_order(1, (int[]){ 3 });

	reset();
	CHECK_OK(pthread_create(&t, NULL, poller, NULL));
	cancel_and_join(t);
	check_order(4, (int[]){ 3, 4, 2, 1 });

	/* Disabled: the request waits until the thread enables it. */
	reset();
	CHECK_OK(pthread_create(&t, NULL, disabled, NULL));
	wait_started();
	CHECK_OK(pthread_cancel(t));
	CHECK_OK(pthread_cancel(t));    /* a second request is no error */
	usleep(20000);
	atomic_store(&may_enable, 1);
	CHECK_OK(pthread_join(t, &res));
	CHECK(res == PTHREAD_CANCELED);
	CHECK(atomic_load(&survived) == 1);

	/* pthread_exit runs the handlers, innermost first. */
	reset();
	CHECK_OK(pthread_create(&t, NULL, exiter, NULL));
	CHECK_OK(pthread_join(t, &res));
	CHECK(res == (void *)42);
	check_order(2, (int[]){ 2, 1 });

	/* A thread that has returned but is not joined: glibc 2.34 and later
	 * accept the request (ESRCH is for a handle that names nothing). */
	CHECK_OK(pthread_create(&t, NULL, returner, NULL));
	usleep(20000);
	CHECK_OK(pthread_cancel(t));
	CHECK_OK(pthread_join(t, &res));
	CHECK(res == (void *)7);

	CHECK_OK(pthread_mutex_destroy(&m));
	return 0;
}
