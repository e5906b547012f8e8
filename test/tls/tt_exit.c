/* exit() and fork() called by a user thread that is not the main thread.
 * Each case runs in a child process (made before any thread exists), so the
 * parent can check its exit status and output. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp_util.h"

static int pipefd[2];

static void at_exit_handler(void)
{
	if (write(pipefd[1], "A", 1) != 1)
		_exit(99);
}

static _Noreturn void *exit_thread(void *arg);
static void *exit_thread(void *arg)
{
	for (int i = 0; i < 10; i++)
		sched_yield();
	exit(3);   /* atexit handlers run on this thread; pointer guard needed */
}

static void *fork_thread(void *arg)
{
	sched_yield();
	pid_t p = fork();
	if (p == 0) {
		/* The child: only this thread, on its own TLS block. */
		char *m = malloc(1000);
		CHECK(m != NULL);
		snprintf(m, 1000, "%s", strerror(22222));
		CHECK(strstr(m, "22222") != NULL);
		free(m);
		fflush(stdout);
		_exit(7);
	}
	int st;
	CHECK(p > 0);
	CHECK(waitpid(p, &st, 0) == p);
	return (void *)(long)(WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st));
}

static _Noreturn void *idle_thread(void *arg);
static void *idle_thread(void *arg)
{
	for (;;)
		sched_yield();
}

static int run_child(int which)
{
	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0) {
		atexit(at_exit_handler);
		pthread_t t, u;
		CHECK_OK(pthread_create(&u, NULL, idle_thread, NULL));
		CHECK_OK(pthread_create(&t, NULL, which == 0 ? exit_thread : fork_thread, NULL));
		void *r;
		CHECK_OK(pthread_join(t, &r));
		/* fork case: report the grandchild's status */
		exit((int)(long)r);
	}
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	if (!WIFEXITED(st)) {
		fprintf(stderr, "case %d: killed by signal %d\n", which, WTERMSIG(st));
		return -1;
	}
	return WEXITSTATUS(st);
}

int main(void)
{
	CHECK(pipe(pipefd) == 0);
	int rc = run_child(0);
	char c = 0;
	CHECK(rc == 3);
	CHECK(read(pipefd[0], &c, 1) == 1 && c == 'A');   /* the atexit handler ran */
	rc = run_child(1);
	CHECK(rc == 7);
	CHECK(read(pipefd[0], &c, 1) == 1 && c == 'A');   /* and the child's main exited */
	puts("ok");
	return 0;
}
