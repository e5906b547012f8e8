/* Where sched_push queues a thread made ready, with a VP of SCOPE_SYSTEM
 * threads in sight.  Such a VP runs whatever is on its queue; an unbound
 * thread queued there would run in place of the bound thread, and may
 * block the kernel thread as only a bound thread may (sem_wait).
 *
 * The state tested is the one another kernel thread can see while
 * ppl_bind_new_vp hands a spare bound VP to a new thread: bound_to still
 * NULL (the previous thread's exit cleared it) but `retired` already
 * cleared.  A signal handler in that VP's idle loop that wakes a thread
 * (sem_post) used to see it as a shared VP and queue the thread there
 * (pthread_join/6-3 of the Open POSIX suite hung, 1 run in 8). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pthread_impl.h"

static struct vproc v0, bvp;   /* VP 0, and a VP of SCOPE_SYSTEM threads */
static struct ult t;

static int setup(void **state)
{
	memset(&v0, 0, sizeof v0);
	memset(&bvp, 0, sizeof bvp);
	memset(&t, 0, sizeof t);
	atomic_store(&v0.next_deadline, INT64_MAX);
	atomic_store(&bvp.next_deadline, INT64_MAX);
	bvp.vp.id = PPL_MAX_VPS;
	bvp.dedicated = true;
	/* Half-way through ppl_bind_new_vp, as seen from another thread. */
	bvp.bound_to = NULL;
	atomic_store(&bvp.retired, false);
	ppl_rt.vps[0] = &v0;
	ppl_rt.nvps = ppl_rt.nvps_total = 1;
	return 0;
}

static void *push_as_bound_vp(void *arg)
{
	vp_adopt(&bvp.vp);   /* this kernel thread is the bound VP's */
	sched_push(&t);
	return arg;
}

/* A signal handler running in the bound VP's idle loop wakes an unbound
 * thread. */
static void test_wake_on_bound_vp(void **state)
{
	setup(state);
	t.vp = &v0;
	pthread_t k;
	assert_int_equal(pthread_create(&k, NULL, push_as_bound_vp, NULL), 0);
	assert_int_equal(pthread_join(k, NULL), 0);
	assert_ptr_equal(v0.rq_head, &t);
	assert_null(bvp.rq_head);
}

/* An unbound thread that last ran there (it got there before this fix) is
 * woken from elsewhere. */
static void test_wake_of_thread_last_there(void **state)
{
	setup(state);
	t.vp = &bvp;
	sched_push(&t);   /* the test's main thread is no VP */
	assert_ptr_equal(v0.rq_head, &t);
	assert_null(bvp.rq_head);
}

/* The bound thread itself goes to its own VP. */
static void test_bound_thread_goes_home(void **state)
{
	setup(state);
	t.vp = t.home = &bvp;
	sched_push(&t);
	assert_ptr_equal(bvp.rq_head, &t);
	assert_null(v0.rq_head);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wake_on_bound_vp),
		cmocka_unit_test(test_wake_of_thread_last_there),
		cmocka_unit_test(test_bound_thread_goes_home),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
