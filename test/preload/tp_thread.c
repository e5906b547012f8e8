/* Create, join, detach, exit values, self/equal, threads creating threads,
 * and many threads alive at once. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include "tp_util.h"

#define MANY 1000

static void *ret_arg(void *arg)
{
	return (void *)((intptr_t)arg * 3 + 1);
}

static void exit_deep(int depth, intptr_t v)
{
	if (depth < 0)
		return;
	if (depth == 0)
		pthread_exit((void *)v);
	exit_deep(depth - 1, v + 1);
}

static void *call_exit(void *arg)
{
	exit_deep(10, (intptr_t)arg);
	return NULL; /* not reached */
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static int done;

static void *detached(void *arg)
{
	pthread_mutex_lock(&lock);
	done++;
	pthread_cond_signal(&done_cv);
	pthread_mutex_unlock(&lock);
	return arg;
}

struct self_slot {
	pthread_t self;
};

static void *store_self(void *arg)
{
	((struct self_slot *)arg)->self = pthread_self();
	return NULL;
}

/* A tree of threads: each creates `fanout` children and returns the size
 * of its subtree. */
static void *tree(void *arg)
{
	intptr_t depth = (intptr_t)arg;
	if (depth == 0)
		return (void *)1;
	pthread_t kids[4];
	for (int i = 0; i < 4; i++)
		CHECK_OK(pthread_create(&kids[i], NULL, tree, (void *)(depth - 1)));
	intptr_t sum = 1;
	for (int i = 0; i < 4; i++) {
		void *r;
		CHECK_OK(pthread_join(kids[i], &r));
		sum += (intptr_t)r;
	}
	return (void *)sum;
}

int main(void)
{
	static pthread_t t[MANY];

	/* Many threads at once, each with its own exit value. */
	for (intptr_t i = 0; i < MANY; i++)
		CHECK_OK(pthread_create(&t[i], NULL, ret_arg, (void *)i));
	for (intptr_t i = 0; i < MANY; i++) {
		void *r;
		CHECK_OK(pthread_join(t[i], &r));
		CHECK((intptr_t)r == i * 3 + 1);
	}

	/* pthread_exit from deep in the stack. */
	for (intptr_t i = 0; i < 50; i++) {
		void *r;
		CHECK_OK(pthread_create(&t[i], NULL, call_exit, (void *)(i * 100)));
		CHECK_OK(pthread_join(t[i], &r));
		CHECK((intptr_t)r == i * 100 + 10);
	}

	/* Detached: by attribute and by pthread_detach. */
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED));
	int ds;
	CHECK_OK(pthread_attr_getdetachstate(&a, &ds));
	CHECK(ds == PTHREAD_CREATE_DETACHED);
	for (int i = 0; i < 200; i++) {
		pthread_t d;
		if (i % 2) {
			CHECK_OK(pthread_create(&d, &a, detached, NULL));
		} else {
			CHECK_OK(pthread_create(&d, NULL, detached, NULL));
			CHECK_OK(pthread_detach(d));
		}
	}
	CHECK_OK(pthread_attr_destroy(&a));
	pthread_mutex_lock(&lock);
	while (done < 200)
		pthread_cond_wait(&done_cv, &lock);
	pthread_mutex_unlock(&lock);

	/* A detached thread that has ended: joining or detaching its id again
	 * is EINVAL, as glibc's descriptor still says detached (the Open POSIX
	 * pthread_attr_setdetachstate/2-1 relies on it), while nothing reused
	 * it; libppl's TCB keeps its flag until then. */
	for (int i = 0; i < 5; i++) {
		pthread_t d;
		CHECK_OK(pthread_attr_init(&a));
		CHECK_OK(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED));
		CHECK_OK(pthread_create(&d, &a, ret_arg, NULL));
		CHECK_OK(pthread_attr_destroy(&a));
		struct timespec nap = { 0, 20 * 1000 * 1000 };
		nanosleep(&nap, NULL);
		CHECK(pthread_join(d, NULL) == EINVAL);
		CHECK(pthread_detach(d) == EINVAL);
	}

	/* pthread_self in the thread is the id its creator got. */
	struct self_slot s;
	pthread_t id;
	CHECK_OK(pthread_create(&id, NULL, store_self, &s));
	CHECK_OK(pthread_join(id, NULL));
	CHECK(pthread_equal(id, s.self));
	CHECK(!pthread_equal(id, pthread_self()));
	CHECK(pthread_equal(pthread_self(), pthread_self()));

	/* Threads creating and joining threads: 1 + 4 + 16 + 64 + 256. */
	void *r;
	CHECK_OK(pthread_create(&id, NULL, tree, (void *)4));
	CHECK_OK(pthread_join(id, &r));
	CHECK((intptr_t)r == 341);

	/* Waves of create+join reuse whatever the implementation caches. */
	for (int wave = 0; wave < 20; wave++) {
		for (intptr_t i = 0; i < 100; i++)
			CHECK_OK(pthread_create(&t[i], NULL, ret_arg, (void *)i));
		for (intptr_t i = 0; i < 100; i++) {
			CHECK_OK(pthread_join(t[i], &r));
			CHECK((intptr_t)r == i * 3 + 1);
		}
	}
	puts("thread: ok");
	return 0;
}
