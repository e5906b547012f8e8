/* Preemption: a thread that spins on a flag another thread sets later
 * terminates.  On libppl with one VP the setter can only run if the
 * spinner is preempted; a compute thread also must not starve a main that
 * sleeps and prints in between. */
#include <limits.h>
#include <pthread.h>

#include "tp_util.h"

#define SPINNERS 4

static volatile int flag;
static volatile unsigned long spins[SPINNERS];

static void *spinner(void *arg)
{
	long i = (long)arg;
	/* Some stack in use: the last spinner has a PTHREAD_STACK_MIN stack,
	 * and every tick pushes a signal frame below this buffer. */
	volatile char buf[4096];
	for (size_t k = 0; k < sizeof buf; k += 64)
		buf[k] = (char)k;
	while (!flag)
		spins[i]++;
	return (void *)(long)buf[64];
}

static void *setter(void *arg)
{
	(void)arg;
	/* Every spinner has spun (on one VP the setter runs only when one is
	 * preempted), then a sleep, so that they all spin when the flag
	 * comes.  Waiting for them, not a fixed time: on a loaded machine a
	 * native spinner may start after 50 ms. */
	struct timespec ts = { 0, 1000000L };
	for (int i = 0; i < SPINNERS; i++)
		while (spins[i] == 0)
			nanosleep(&ts, NULL);
	ts.tv_nsec = 50 * 1000000L;
	nanosleep(&ts, NULL);
	flag = 1;
	return NULL;
}

int main(void)
{
	alarm(60);   /* a spinner that never runs: the setter waits for ever */
	pthread_t sp[SPINNERS], st;
	pthread_attr_t small;
	CHECK_OK(pthread_attr_init(&small));
	CHECK_OK(pthread_attr_setstacksize(&small, PTHREAD_STACK_MIN));
	for (long i = 0; i < SPINNERS; i++)
		CHECK_OK(pthread_create(&sp[i], i == SPINNERS - 1 ? &small : NULL, spinner, (void *)i));
	CHECK_OK(pthread_attr_destroy(&small));
	CHECK_OK(pthread_create(&st, NULL, setter, NULL));

	/* main sleeps and prints while the spinners compute: it is woken on
	 * time, within a few slices, even though they never block. */
	for (int k = 0; k < 5; k++) {
		long long t0 = tp_now_ns();
		CHECK(usleep(10000) == 0);
		long long late = tp_now_ns() - t0 - 10000000LL;
		printf("main awake, %lld us late\n", late / 1000);
		CHECK(late < 20000000000LL);   /* starving: never woken at all (loose: loaded machines) */
	}
	CHECK_OK(pthread_join(st, NULL));
	for (int i = 0; i < SPINNERS; i++)
		CHECK_OK(pthread_join(sp[i], NULL));
	for (int i = 0; i < SPINNERS; i++)
		CHECK(spins[i] > 0);
	printf("all spinners saw the flag\n");
	return 0;
}
