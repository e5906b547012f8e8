/* fork while other threads are inside calls that take a process-wide lock
 * of the threads library: setuid's family (its broadcast to every kernel
 * thread: under libppl a mutex and a futex lock), pthread_setaffinity_np
 * and pthread_setattr_default_np (spin locks, which a forked child takes
 * over: spin_orphans).  The child, whose only thread is the forker, must
 * be able to make each call, from itself and from a new thread.  Before,
 * under libppl, it inherited the setuid locks held by threads it does not
 * have, and its seteuid hung (killed by the child's alarm).
 * seteuid(geteuid()) and setegid(getegid()) are allowed to any user. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp_util.h"

#define FORKS 300

static atomic_bool stop;
static atomic_long calls[3];
static cpu_set_t cpus;   /* the process's: setting it narrows nothing */

static void credentials(void)
{
	CHECK(seteuid(geteuid()) == 0);
	CHECK(setegid(getegid()) == 0);
}

static void affinity(void)
{
	CHECK_OK(pthread_setaffinity_np(pthread_self(), sizeof cpus, &cpus));
}

static void default_attr(void)
{
	pthread_attr_t a;
	CHECK_OK(pthread_getattr_default_np(&a));
	CHECK_OK(pthread_setattr_default_np(&a));
	CHECK_OK(pthread_attr_destroy(&a));
}

static void (*const family[3])(void) = { credentials, affinity, default_attr };

static void *churn(void *arg)
{
	long i = (long)arg;
	while (!atomic_load(&stop)) {
		family[i]();
		atomic_fetch_add(&calls[i], 1);
		/* A loop that never leaves the library's code is preempted
		 * late under libppl (docs/preemption.md): let the forker run. */
		sched_yield();
	}
	return NULL;
}

static void *each(void *arg)
{
	for (int i = 0; i < 3; i++)
		family[i]();
	return arg;
}

/* Each call from the forker, then from a new thread.  The alarm catches a
 * child that hangs.  It is generous because the kernel alone can hold a
 * fork child for seconds under load: on a 2-vCPU guest (Linux 6.18), one
 * plain NPTL child in about 11,000 forks of this test was still in
 * exit_group 5 s after its _exit (in exit_mmap, waiting for a file
 * mapping's lock), and on libppl's process backend about as many stayed
 * zombies that their parent's wait4 did not report for over 5 s.  With a
 * 10 s alarm, about one child in 10,000 was killed on that backend (a
 * cause in libppl was not found: 30,000 forks watched by a 5 s probe
 * showed no child still running). */
static int child(void)
{
	alarm(60);
	each(NULL);
	pthread_t t;
	void *r;
	CHECK_OK(pthread_create(&t, NULL, each, &cpus));
	CHECK_OK(pthread_join(t, &r));
	return r == &cpus ? 0 : 2;
}

int main(void)
{
	alarm(120);
	CHECK(sched_getaffinity(0, sizeof cpus, &cpus) == 0);
	pthread_t t[3];
	for (long i = 0; i < 3; i++)
		CHECK_OK(pthread_create(&t[i], NULL, churn, (void *)i));
	for (int i = 0; i < 3; i++)
		while (atomic_load(&calls[i]) < 10)
			sched_yield();
	for (int i = 0; i < FORKS; i++) {
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0)
			_exit(child());
		int st;
		CHECK(waitpid(pid, &st, 0) == pid);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "fork %d: child %s %d\n", i,
				WIFSIGNALED(st) ? "killed by signal" : "exited",
				WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
			return 1;
		}
	}
	atomic_store(&stop, true);
	for (int i = 0; i < 3; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	printf("%d forks beside %ld credential, %ld affinity and %ld default-attribute calls\n",
	       FORKS, atomic_load(&calls[0]), atomic_load(&calls[1]), atomic_load(&calls[2]));
	return 0;
}
