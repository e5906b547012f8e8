/* Preemption: a thread that spins on a flag another thread sets later
 * terminates.  On libppl with one VP the setter can only run if the
 * spinner is preempted; a compute thread also must not starve a main that
 * sleeps and prints in between. */
#include <pthread.h>
#include <stdatomic.h>

#include "tp_util.h"

#define SPINNERS 4

static volatile int flag;
static volatile unsigned long spins[SPINNERS];

static void *spinner(void *arg)
{
	long i = (long)arg;
	while (!flag)
		spins[i]++;
	return NULL;
}

static void *setter(void *arg)
{
	(void)arg;
	/* Sleeps first, so every spinner is running (and owns a VP) by then. */
	struct timespec ts = { 0, 50 * 1000000L };
	nanosleep(&ts, NULL);
	flag = 1;
	return NULL;
}

int main(void)
{
	pthread_t sp[SPINNERS], st;
	for (long i = 0; i < SPINNERS; i++)
		CHECK_OK(pthread_create(&sp[i], NULL, spinner, (void *)i));
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
