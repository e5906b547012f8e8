/* A process-directed signal whose action is the default one ends (or
 * stops) the process at once, as the kernel acts at delivery, even while
 * the thread chosen to take it cannot run: main parked in pthread_join and
 * every VP held by a thread that never yields (run with PPL_TIMESLICE_US=0,
 * so nothing takes a VP from them).  libppl had made the signal a claim
 * for main and woken it to take it: it never ran, and neither alarm(), a
 * shell's kill nor kill() from a thread that blocks the signal ended the
 * program (runtime/sched-global-lifo's alarm(30) in a CI run, and
 * `timeout` after it).  A signal every thread blocks stays pending. */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp_util.h"

enum { ALARM, TERM, SELF_KILL, ALL_BLOCK, STOP, CATCHER };

static _Atomic int spinning;
static int mode;
static pid_t kid;   /* the child running now, killed if a check fails */

static void kill_kid(void)
{
	if (kid > 0)
		kill(kid, SIGKILL);
}

static void on_usr2(int sig)
{
	(void)sig;
}

static void *spin(void *arg)
{
	(void)arg;
	if (mode == CATCHER)
		tp_sigmask_one(SIG_BLOCK, SIGTERM);   /* only main, parked, takes it */
	if (mode == SELF_KILL) {
		tp_sigmask_one(SIG_BLOCK, SIGUSR1);
		if (atomic_fetch_add(&spinning, 1) == 0)
			kill(getpid(), SIGUSR1);   /* main takes it: it does not block it */
	}
	for (;;)
		atomic_signal_fence(memory_order_seq_cst);
	return NULL;
}

/* The child: spinners on every VP and more, main joining the first. */
static void child(int ready)
{
	/* A group of its own, whose parent is in the session: not orphaned,
	 * so SIGTSTP stops it (meson runs a test in a session of its own). */
	CHECK(setpgid(0, 0) == 0);
	if (mode == ALARM)
		alarm(1);
	if (mode == CATCHER)   /* a handler: libppl's catcher thread takes what no VP does */
		signal(SIGUSR2, on_usr2);
	if (mode == ALL_BLOCK)
		tp_sigmask_one(SIG_BLOCK, SIGTERM);   /* the spinners inherit it */
	CHECK(write(ready, "r", 1) == 1);   /* before SELF_KILL's signal can end it */
	long n = sysconf(_SC_NPROCESSORS_ONLN) + 2;
	pthread_t t[18];
	for (long i = 0; i < n && i < 18; i++)
		CHECK_OK(pthread_create(&t[i], NULL, spin, NULL));
	pthread_join(t[0], NULL);
	_exit(3);   /* never: the spinners never end */
}

/* Waits up to ms for p to end or stop; its status, or -1 if it did not. */
static int wait_ms(pid_t p, int ms)
{
	int st;
	for (int i = 0; i < ms / 10; i++) {
		pid_t r = waitpid(p, &st, WNOHANG | WUNTRACED);
		CHECK(r >= 0);
		if (r == p)
			return st;
		usleep(10000);
	}
	return -1;
}

static void run(int m, const char *what)
{
	int fds[2];
	CHECK(pipe(fds) == 0);
	mode = m;
	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0) {
		kid = 0;
		close(fds[0]);
		child(fds[1]);
	}
	kid = p;
	close(fds[1]);
	char c;
	CHECK(read(fds[0], &c, 1) == 1);
	close(fds[0]);
	usleep(100000);   /* main parks in join, the spinners hold the VPs */
	int st;
	switch (m) {
	case ALARM:
		st = wait_ms(p, 10000);
		CHECK(st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM);
		break;
	case TERM:
	case CATCHER:
		CHECK(kill(p, SIGTERM) == 0);
		st = wait_ms(p, 10000);
		CHECK(st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
		break;
	case SELF_KILL:
		st = wait_ms(p, 10000);
		CHECK(st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGUSR1);
		break;
	case ALL_BLOCK:   /* pending: the process lives on */
		CHECK(kill(p, SIGTERM) == 0);
		CHECK(wait_ms(p, 300) == -1);
		break;
	case STOP:
		CHECK(kill(p, SIGTSTP) == 0);
		st = wait_ms(p, 10000);
		CHECK(st != -1 && WIFSTOPPED(st) && WSTOPSIG(st) == SIGTSTP);
		CHECK(kill(p, SIGCONT) == 0);
		break;
	}
	kill(p, SIGKILL);
	waitpid(p, &st, 0);
	kid = 0;
	printf("%s: as NPTL\n", what);
}

/* With an argument, only the case of that number (for a look at one). */
int main(int argc, char **argv)
{
	static const char *const what[] = {
		[ALARM] = "alarm() while main joins and every VP spins",
		[TERM] = "kill(pid, SIGTERM) from outside",
		[SELF_KILL] = "kill(getpid(), SIGUSR1) from a thread that blocks it",
		[ALL_BLOCK] = "SIGTERM every thread blocks: pending",
		[STOP] = "SIGTSTP stops the process",
		[CATCHER] = "kill(pid, SIGTERM) only parked main takes, a handler elsewhere",
	};
	alarm(120);
	atexit(kill_kid);
	for (int m = ALARM; m <= CATCHER; m++)
		if (argc < 2 || atoi(argv[1]) == m)
			run(m, what[m]);
	return 0;
}
