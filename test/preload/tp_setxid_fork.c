/* fork while other threads are inside setuid's family (their broadcast to
 * every kernel thread under way): the child, whose only thread is the
 * forker, must be able to change its own credentials.  Before libppl reset
 * its setxid state in the child, the child inherited the broadcast's locks
 * held by threads it does not have, and its seteuid hung (killed by the
 * child's alarm).  seteuid(geteuid()) and setegid(getegid()) are allowed
 * to any user, so this runs without root. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp_util.h"

#define CHURNERS 3
#define FORKS 300

static atomic_bool stop;
static atomic_long calls;

static void *churn(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		CHECK(seteuid(geteuid()) == 0);
		CHECK(setegid(getegid()) == 0);
		atomic_fetch_add(&calls, 1);
	}
	return NULL;
}

int main(void)
{
	alarm(120);
	pthread_t t[CHURNERS];
	for (int i = 0; i < CHURNERS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, churn, NULL));
	while (atomic_load(&calls) < 10)
		sched_yield();
	for (int i = 0; i < FORKS; i++) {
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			alarm(10);
			if (seteuid(geteuid()) != 0 || setegid(getegid()) != 0)
				_exit(2);
			_exit(0);
		}
		int st;
		CHECK(waitpid(pid, &st, 0) == pid);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "fork %d: child %s %d\n", i,
				WIFSIGNALED(st) ? "killed by signal" : "exited", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
			return 1;
		}
	}
	atomic_store(&stop, true);
	for (int i = 0; i < CHURNERS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	printf("%d forks beside %ld credential calls: every child changed its own\n", FORKS,
	       atomic_load(&calls));
	return 0;
}
