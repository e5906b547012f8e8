/* A stand-in that blocks in the kernel, unannounced, with work still queued
 * behind it.  Main blocks in a raw futex wait (libppl cannot announce it)
 * with two threads queued on its VP: a sleeper that naps in raw nanosleep
 * until told to stop, and the waker that main waits for.  With one VP the
 * monitor lends main's VP to a spare, the spare takes the sleeper and
 * blocks in turn, and only a second hand-off runs the waker.  libppl's
 * monitor skipped a VP still marked asleep, as a freshly woken spare is
 * until it runs, and then slept for good: nobody kicks it when a woken VP
 * blocks (td_tsan under ThreadSanitizer hung so on 1 VP, about 1 run in
 * 25 under load).  Busy child processes keep the CPUs loaded so that a
 * woken spare is slow to run.  Bounded by alarm(). */
#define _GNU_SOURCE 1
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "tp_util.h"

#define ROUNDS 30
#define SPINNERS 4

static _Atomic int stop, done;

static void *sleeper(void *arg)
{
	struct timespec nap = { 0, 5 * 1000 * 1000 };
	while (!atomic_load(&stop))
		syscall(SYS_nanosleep, &nap, NULL);
	return arg;
}

static void *waker(void *arg)
{
	atomic_store(&done, 1);
	syscall(SYS_futex, &done, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	return arg;
}

int main(void)
{
	alarm(30);
	pid_t spin[SPINNERS];
	for (int i = 0; i < SPINNERS; i++) {
		spin[i] = fork();
		CHECK(spin[i] >= 0);
		if (spin[i] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (;;)
				;
		}
	}
	for (int k = 0; k < ROUNDS; k++) {
		atomic_store(&stop, 0);
		atomic_store(&done, 0);
		pthread_t s, w;
		CHECK_OK(pthread_create(&s, NULL, sleeper, NULL));
		CHECK_OK(pthread_create(&w, NULL, waker, NULL));
		while (!atomic_load(&done))
			syscall(SYS_futex, &done, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
		atomic_store(&stop, 1);
		CHECK_OK(pthread_join(w, NULL));
		CHECK_OK(pthread_join(s, NULL));
	}
	for (int i = 0; i < SPINNERS; i++) {
		kill(spin[i], SIGKILL);
		waitpid(spin[i], NULL, 0);
	}
	puts("ok");
	return 0;
}
