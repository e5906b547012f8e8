/* A thread blocked in read is cancelled, over and over, while the canceller
 * sleeps.  With libppl, the reader's VP is lent to a spare VP while read
 * blocks, the canceller moves to the spare, and the cancel takes the VP back:
 * the spare is retired, possibly while it spins looking for work, just as
 * the canceller's short sleep ends.  Every kernel thread of the process runs
 * on one CPU, so a spinning VP is often switched out by the kernel, which
 * widens that window.  A spare retired while it spun used to leave the
 * canceller's wake-up to nobody: every VP slept with the canceller queued
 * (before the fix, most runs of 300 rounds hung on one CPU). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

#include "tp_util.h"

#define ROUNDS 300

static atomic_int started;
static int fds[2];   /* a pipe nobody writes to */

static void *reader(void *arg)
{
	(void)arg;
	char c;
	atomic_store(&started, 1);
	(void)read(fds[0], &c, 1);
	return (void *)1;   /* the call returned: a failure */
}

/* Keep the process on the first CPU it may use (inherited by every kernel
 * thread made later). */
static void one_cpu(void)
{
	cpu_set_t set;
	CHECK(sched_getaffinity(0, sizeof set, &set) == 0);
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (CPU_ISSET(cpu, &set)) {
			CPU_ZERO(&set);
			CPU_SET(cpu, &set);
			CHECK(sched_setaffinity(0, sizeof set, &set) == 0);
			return;
		}
	}
}

int main(void)
{
	one_cpu();
	CHECK(pipe(fds) == 0);
	for (int i = 0; i < ROUNDS; i++) {
		atomic_store(&started, 0);
		pthread_t t;
		CHECK_OK(pthread_create(&t, NULL, reader, NULL));
		while (!atomic_load(&started))
			usleep(100);
		usleep(1000);   /* into the kernel */
		CHECK_OK(pthread_cancel(t));
		void *res;
		CHECK_OK(pthread_join(t, &res));
		if (res != PTHREAD_CANCELED) {
			fprintf(stderr, "round %d: result %p\n", i, res);
			return 1;
		}
	}
	puts("cancel-spare: ok");
	return 0;
}
