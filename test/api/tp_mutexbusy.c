/* pthread_mutex_destroy says EBUSY while a thread waits in
 * pthread_cond_wait with the mutex (glibc's tst-mutex8 and tst-mutexpi8:
 * glibc counts such a waiter in __nusers), for every type, protocol and
 * pshared setting; and 0 once the waiter has left. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "tp_util.h"

static pthread_mutex_t m;
static pthread_cond_t c;
static int in_wait, go;

static void *waiter(void *arg)
{
	(void)arg;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 20;
	CHECK_OK(pthread_mutex_lock(&m));
	in_wait = 1;
	while (!go)
		CHECK_OK(pthread_cond_timedwait(&c, &m, &ts));
	CHECK_OK(pthread_mutex_unlock(&m));
	return NULL;
}

static void one(int type, int proto, int pshared)
{
	pthread_mutexattr_t ma;
	pthread_condattr_t ca;
	CHECK_OK(pthread_mutexattr_init(&ma));
	CHECK_OK(pthread_mutexattr_settype(&ma, type));
	CHECK_OK(pthread_mutexattr_setprotocol(&ma, proto));
	CHECK_OK(pthread_mutexattr_setpshared(&ma, pshared));
	CHECK_OK(pthread_mutex_init(&m, &ma));
	CHECK_OK(pthread_condattr_init(&ca));
	CHECK_OK(pthread_condattr_setpshared(&ca, pshared));
	CHECK_OK(pthread_cond_init(&c, &ca));
	in_wait = go = 0;

	CHECK_OK(pthread_mutex_lock(&m));
	CHECK(pthread_mutex_destroy(&m) == EBUSY);
	CHECK_OK(pthread_mutex_unlock(&m));

	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, waiter, NULL));
	/* Holding m with in_wait set: the waiter has released m in cond_wait. */
	for (;;) {
		CHECK_OK(pthread_mutex_lock(&m));
		int w = in_wait;
		CHECK_OK(pthread_mutex_unlock(&m));
		if (w)
			break;
		usleep(1000);
	}
	int err = pthread_mutex_destroy(&m);
	if (err != EBUSY) {
		fprintf(stderr, "type %d protocol %d pshared %d: mutex_destroy of condvar-used "
				"mutex returned %d\n", type, proto, pshared, err);
		exit(1);
	}
	CHECK_OK(pthread_mutex_lock(&m));
	go = 1;
	CHECK_OK(pthread_cond_signal(&c));
	CHECK_OK(pthread_mutex_unlock(&m));
	CHECK_OK(pthread_join(t, NULL));
	CHECK_OK(pthread_mutex_destroy(&m));
	CHECK_OK(pthread_cond_destroy(&c));
	CHECK_OK(pthread_condattr_destroy(&ca));
	CHECK_OK(pthread_mutexattr_destroy(&ma));
}

int main(void)
{
	alarm(60);
	static const int types[] = { PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_ERRORCHECK,
				     PTHREAD_MUTEX_RECURSIVE, PTHREAD_MUTEX_ADAPTIVE_NP };
	static const int protos[] = { PTHREAD_PRIO_NONE, PTHREAD_PRIO_INHERIT };
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 2; j++)
			for (int k = 0; k < 2; k++)
				one(types[i], protos[j],
				    k ? PTHREAD_PROCESS_SHARED : PTHREAD_PROCESS_PRIVATE);
	puts("ok");
	return 0;
}
