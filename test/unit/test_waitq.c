/* Wait queues: FIFO order, removal from any position, membership marker. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "pthread_impl.h"

static void test_fifo(void **state)
{
	struct waitq q = { 0 };
	struct ult t[4] = { 0 };
	assert_true(waitq_empty(&q));
	for (int i = 0; i < 4; i++)
		waitq_push(&q, &t[i]);
	for (int i = 0; i < 4; i++) {
		assert_ptr_equal(t[i].wait_q, &q);
		assert_ptr_equal(waitq_pop(&q), &t[i]);
		assert_null(t[i].wait_q);
	}
	assert_null(waitq_pop(&q));
	assert_true(waitq_empty(&q));
}

static void test_remove(void **state)
{
	struct waitq q = { 0 }, other = { 0 };
	struct ult t[5] = { 0 };
	for (int i = 0; i < 5; i++)
		waitq_push(&q, &t[i]);
	assert_true(waitq_remove(&q, &t[2]));      /* middle */
	assert_false(waitq_remove(&q, &t[2]));     /* not twice */
	assert_false(waitq_remove(&other, &t[1])); /* not on that queue */
	assert_true(waitq_remove(&q, &t[0]));      /* head */
	assert_true(waitq_remove(&q, &t[4]));      /* tail */
	assert_ptr_equal(waitq_pop(&q), &t[1]);
	assert_ptr_equal(waitq_pop(&q), &t[3]);
	assert_true(waitq_empty(&q));
	assert_null(q.tail);
	waitq_push(&q, &t[0]);                     /* usable again */
	assert_ptr_equal(q.head, &t[0]);
	assert_ptr_equal(q.tail, &t[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fifo),
		cmocka_unit_test(test_remove),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
