/* Children made without fork from a thread that runs off the initial
 * kernel thread (docs/vpdep.md: with the process backend, another VP
 * process): posix_spawn and posix_spawnp, waited for by main with waitpid,
 * and popen then pclose (which reaps the child itself), as on NPTL. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp_util.h"

extern char **environ;
static pid_t initial_ktid;
static atomic_int busy_stop;

static void move_off_initial(void)
{
	long long end = tp_now_ns() + 1000000000LL;
	while (syscall(SYS_gettid) == initial_ktid && tp_now_ns() < end)
		sched_yield();
}

static void *busy(void *arg)
{
	(void)arg;
	long long end = tp_now_ns() + 2000000000LL;
	while (!atomic_load(&busy_stop) && tp_now_ns() < end)
		sched_yield();
	return NULL;
}

/* fn(arg) on a thread, with another that keeps the first kernel thread
 * busy so that fn's can move off it. */
static void *run_off_initial(void *(*fn)(void *), void *arg)
{
	pthread_t b, t;
	void *r;
	atomic_store(&busy_stop, 0);
	CHECK_OK(pthread_create(&b, NULL, busy, NULL));
	CHECK_OK(pthread_create(&t, NULL, fn, arg));
	CHECK_OK(pthread_join(t, &r));
	atomic_store(&busy_stop, 1);
	CHECK_OK(pthread_join(b, NULL));
	return r;
}

static void *spawn(void *arg)
{
	move_off_initial();
	char *argv[] = { "sh", "-c", arg, NULL };
	pid_t pid;
	CHECK_OK(posix_spawnp(&pid, "sh", NULL, NULL, argv, environ));
	return (void *)(intptr_t)pid;
}

static void *spawn_path(void *arg)
{
	(void)arg;
	move_off_initial();
	char *argv[] = { "sh", "-c", "exit 5", NULL };
	pid_t pid;
	CHECK_OK(posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ));
	return (void *)(intptr_t)pid;
}

static void *open_pipe(void *arg)
{
	(void)arg;
	move_off_initial();
	FILE *f = popen("echo hello", "r");
	CHECK(f != NULL);
	return f;
}

int main(void)
{
	initial_ktid = (pid_t)syscall(SYS_gettid);
	for (int round = 0; round < 3; round++) {
		int st;
		pid_t pid = (pid_t)(intptr_t)run_off_initial(spawn, "exit 7");
		CHECK(waitpid(pid, &st, 0) == pid);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7);
		pid = (pid_t)(intptr_t)run_off_initial(spawn_path, NULL);
		CHECK(waitpid(pid, &st, 0) == pid);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 5);
		FILE *f = run_off_initial(open_pipe, NULL);
		char line[32] = "";
		CHECK(fgets(line, sizeof line, f) != NULL && strcmp(line, "hello\n") == 0);
		st = pclose(f);
		CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	puts("ok");
	return 0;
}
