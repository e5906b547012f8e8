/* The exec family and system() from a thread that runs off the initial
 * kernel thread (with the process VP backend, another VP process;
 * docs/vpdep.md), as on NPTL: the new program is the process (its pid is
 * the process's, glibc's tst-exec3) with the calling thread's signal mask,
 * and nothing of the old program is left (a pipe it held closes); an exec
 * that fails returns to its thread, which goes on.  For each of execl,
 * execle, execlp, execv, execve, execvp, execvpe, fexecve, execveat and
 * system, in a child of its own.
 *
 * argv[1] "report": the exec'd program; prints its pid and whether
 * SIGUSR2 is blocked. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp_util.h"

extern char **environ;
static char self[4096];        /* this program's path */
static const char *fn_name;    /* the function under test */
static atomic_int busy_stop;

static void *busy(void *arg)
{
	(void)arg;
	while (!atomic_load(&busy_stop))
		sched_yield();
	return NULL;
}

/* Call the function under test on path (argv {name, "report"}); returns
 * only if it failed (or for system, with its status). */
static int call(const char *path)
{
	char *name = basename(self);
	char *argv[] = { name, "report", NULL };
	if (strcmp(fn_name, "execl") == 0)
		return execl(path, name, "report", (char *)NULL);
	if (strcmp(fn_name, "execle") == 0)
		return execle(path, name, "report", (char *)NULL, environ);
	if (strcmp(fn_name, "execlp") == 0)
		return execlp(path, name, "report", (char *)NULL);
	if (strcmp(fn_name, "execv") == 0)
		return execv(path, argv);
	if (strcmp(fn_name, "execve") == 0)
		return execve(path, argv, environ);
	if (strcmp(fn_name, "execvp") == 0)
		return execvp(path, argv);
	if (strcmp(fn_name, "execvpe") == 0)
		return execvpe(path, argv, environ);
	if (strcmp(fn_name, "execveat") == 0)
		return execveat(AT_FDCWD, path, argv, environ, 0);
	if (strcmp(fn_name, "fexecve") == 0) {
		int fd = open(path, O_RDONLY);
		if (fd < 0)
			return -1;
		int r = fexecve(fd, argv, environ);
		int e = errno;
		close(fd);
		errno = e;
		return r;
	}
	CHECK(strcmp(fn_name, "system") == 0);
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "exec '%s' report", path);
	return system(cmd);
}

/* The thread that calls: off the initial kernel thread if it gets there
 * within 300 ms (under libppl, on more than one VP of the process
 * backend), with SIGUSR2 blocked. */
static void *caller(void *arg)
{
	(void)arg;
	long long end = tp_now_ns() + (tp_expect_ult() ? 300000000LL : 0);
	while (tp_kernel_process() == (long)getpid() && tp_now_ns() < end)
		sched_yield();
	/* A failed call first: it returns, here. */
	errno = 0;
	CHECK(call("/nonexistent/tp_exec") == (strcmp(fn_name, "system") == 0 ? 127 << 8 : -1));
	CHECK(strcmp(fn_name, "system") == 0 || errno == ENOENT);
	sigset_t usr2;
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &usr2, NULL));
	/* The p variants search PATH: this program's directory. */
	char *dir = strdup(self);
	CHECK(setenv("PATH", dirname(dir), 1) == 0);
	bool search = strcmp(fn_name, "execlp") == 0 || strcmp(fn_name, "execvp") == 0 ||
		      strcmp(fn_name, "execvpe") == 0;
	int r = call(search ? basename(self) : self);
	if (strcmp(fn_name, "system") == 0) {
		CHECK(r == 0);
		exit(0);
	}
	fprintf(stderr, "%s: returned %d: %s\n", fn_name, r, strerror(errno));
	exit(1);
}

/* In the child: the call on its thread, another keeping VP 0 busy. */
static _Noreturn void child(void)
{
	pthread_t b, t;
	CHECK_OK(pthread_create(&b, NULL, busy, NULL));
	CHECK_OK(pthread_create(&t, NULL, caller, NULL));
	CHECK_OK(pthread_join(t, NULL));
	CHECK(!"the caller thread came back");
	exit(1);
}

static void one(const char *name)
{
	fn_name = name;
	int fd[2];
	CHECK(pipe(fd) == 0);
	fflush(stdout);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		alarm(30);
		CHECK(dup2(fd[1], STDOUT_FILENO) == STDOUT_FILENO);
		close(fd[0]);
		close(fd[1]);
		child();
	}
	close(fd[1]);
	/* Until every writer is gone: the old program too. */
	char buf[256];
	CHECK(tp_read_all(fd[0], buf, sizeof buf) == 0);
	close(fd[0]);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "%s: child status %#x, output \"%s\"\n", name, st, buf);
		exit(1);
	}
	long rpid = 0;
	int blocked = -1;
	if (sscanf(buf, "%ld %d", &rpid, &blocked) != 2) {
		fprintf(stderr, "%s: output \"%s\"\n", name, buf);
		exit(1);
	}
	/* system's command is a child of the child; an exec is the child. */
	if (strcmp(name, "system") != 0 && rpid != pid) {
		fprintf(stderr, "%s: exec'd program has pid %ld, the child %d\n", name, rpid, (int)pid);
		exit(1);
	}
	if (strcmp(name, "system") != 0 && blocked != 1) {
		fprintf(stderr, "%s: the calling thread's mask was lost\n", name);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "report") == 0) {
		sigset_t m;
		CHECK(sigprocmask(SIG_BLOCK, NULL, &m) == 0);
		printf("%ld %d\n", (long)getpid(), sigismember(&m, SIGUSR2));
		return 0;
	}
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	CHECK(n > 0);
	self[n] = 0;
	static const char *const fns[] = { "execl", "execle", "execlp", "execv", "execve", "execvp",
					   "execvpe", "fexecve", "execveat", "system" };
	for (int round = 0; round < 2; round++)
		for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
			one(fns[i]);
	puts("ok");
	return 0;
}
