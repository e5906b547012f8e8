/* When the last thread ends with pthread_exit, the process exits with
 * status 0, and that thread runs exit's handlers: a default-action signal
 * the process sends itself from an atexit handler then ends it, as under
 * NPTL (glibc's tst-basic3 and tst-basic4).  libppl, which routes
 * default-action signals to a user thread that takes them, had counted
 * the ending thread out and left the signal pending: exit status 0.
 * Three ways, each in a child process: the forker's child thread exits
 * (tst-basic4), main exits while a thread lives on and ends last, and a
 * signal with a handler from the same place runs the handler. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp_util.h"

static void send_usr1(void)
{
	kill(getpid(), SIGUSR1);
}

static void handled(int sig)
{
	(void)sig;
	_exit(42);
}

static void *last_exits(void *arg)
{
	(void)arg;
	atexit(send_usr1);
	pthread_exit(NULL);
}

static void *nap_then_exit(void *arg)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	return arg;
}

/* Runs `how` in a child; its wait status. */
static int in_child(int how)
{
	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0) {
		alarm(10);
		pthread_t t;
		if (how == 0) {   /* tst-basic4: a thread's fork, whose child thread exits */
			CHECK_OK(pthread_create(&t, NULL, nap_then_exit, NULL));
			CHECK_OK(pthread_join(t, NULL));
			last_exits(NULL);
		}
		if (how == 2)
			signal(SIGUSR1, handled);
		atexit(send_usr1);
		CHECK_OK(pthread_create(&t, NULL, nap_then_exit, NULL));
		pthread_exit(NULL);   /* main first; the thread ends last */
	}
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	return st;
}

int main(void)
{
	alarm(60);
	for (int round = 0; round < 5; round++) {
		int st = in_child(0);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGUSR1);
		st = in_child(1);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGUSR1);
		st = in_child(2);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 42);
	}
	printf("the last thread's atexit handlers took the process's signals, 5 rounds\n");
	return 0;
}
