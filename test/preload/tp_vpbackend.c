/* What a program sees of the kernel threads its threads run on, whichever
 * VP backend made them (PPL_VP_BACKEND; docs/vpdep.md), as on NPTL:
 *  - the C library's per-thread state works in every thread while others
 *    run on other VPs: errno, malloc from one arena by the main thread and
 *    by threads at once (glibc skips the arena lock on a thread whose
 *    descriptor says it is alone), characters written by many threads to
 *    one FILE with putc, none lost (glibc locks putc only once it has
 *    marked the process multi-threaded), ctype;
 *  - fork in a thread while others run: the child makes threads that run
 *    and join, forks again, and its exit status comes back;
 *  - exit from a thread that is not the initial one while others compute:
 *    the process ends with that status, the atexit handler ran once;
 *  - _exit from such a thread, and abort: the status says so.
 * Credentials on every kernel thread: tp_setxid.  Bounded by alarm().
 * With argument "shared" (libppl's PPL_TLS=shared, where user threads run
 * on their VP's own block and descriptor: the C library's state there is
 * per VP, docs/tls.md), errno is not checked across a switch nor the
 * characters counted (glibc's FILE lock takes every thread of one VP for
 * its owner). */
#include <ctype.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp_util.h"

#define THREADS 6
#define LINES 3000
#define LINE_LEN 60

static atomic_int stop;
static int shared;

static void *spin(void *arg)
{
	volatile unsigned long x = 0;
	while (!atomic_load(&stop))
		x++;
	return arg;
}

/* Lines of one letter each to f; errno and ctype on the way. */
static void *writer(void *arg)
{
	FILE *f = arg;
	static atomic_int next;
	char c = (char)('a' + atomic_fetch_add(&next, 1) % 26);
	char line[LINE_LEN + 1];
	memset(line, c, LINE_LEN);
	line[LINE_LEN] = '\0';
	for (int i = 0; i < LINES; i++) {
		errno = 1000 + c;
		/* putc locks only in a process glibc knows is threaded. */
		for (int k = 0; k < LINE_LEN; k++)
			CHECK(putc(line[k], f) == line[k]);
		CHECK(putc('\n', f) == '\n');
		/* Above the tcache's sizes: from the one arena (main). */
		void *p = malloc(2048 + (size_t)(i % 4096));
		CHECK(p != NULL);
		memset(p, c, 64);
		free(p);
		if (i % 100 == 0)
			sched_yield();
		CHECK(shared || errno == 1000 + c);
		CHECK(isalpha((unsigned char)c) && toupper(c) == c - 'a' + 'A');
	}
	return NULL;
}

static void libc_state(void)
{
	/* One arena for every thread: glibc must lock it on each. */
	CHECK(mallopt(M_ARENA_MAX, 1) == 1);
	FILE *f = tmpfile();
	CHECK(f != NULL);
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, writer, f));
	/* The main thread allocates at the same time. */
	for (int i = 0; i < 200000; i++) {
		void *p = malloc(2048 + (size_t)(i % 4096));
		CHECK(p != NULL);
		free(p);
	}
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	/* Lines of different threads may interleave (putc by putc), but
	 * every character written must be there once. */
	rewind(f);
	long count[256] = { 0 }, total = 0;
	int ch;
	while ((ch = getc(f)) != EOF) {
		count[ch]++;
		total++;
	}
	if (!shared) {
		CHECK(total == (long)THREADS * LINES * (LINE_LEN + 1));
		CHECK(count['\n'] == (long)THREADS * LINES);
		for (int i = 0; i < THREADS; i++)
			CHECK(count['a' + i] == (long)LINES * LINE_LEN);
	}
	fclose(f);
}

static void *child_thread(void *arg)
{
	return (void *)((long)arg * 2);
}

/* In a forked child: threads that run and join, then a grandchild. */
static int child_threads(void)
{
	pthread_t t[4];
	for (long i = 0; i < 4; i++)
		CHECK_OK(pthread_create(&t[i], NULL, child_thread, (void *)i));
	for (long i = 0; i < 4; i++) {
		void *r;
		CHECK_OK(pthread_join(t[i], &r));
		CHECK((long)r == 2 * i);
	}
	pid_t g = fork();
	CHECK(g >= 0);
	if (g == 0) {
		pthread_t x;
		void *r;
		CHECK_OK(pthread_create(&x, NULL, child_thread, (void *)21));
		CHECK_OK(pthread_join(x, &r));
		_exit((long)r == 42 ? 9 : 1);
	}
	int st;
	CHECK(waitpid(g, &st, 0) == g);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 9);
	return 7;
}

static void *forker(void *arg)
{
	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0)
		_exit(child_threads());
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7);
	return arg;
}

static void fork_with_threads(void)
{
	pthread_t s[2], f;
	atomic_store(&stop, 0);
	for (int i = 0; i < 2; i++)
		CHECK_OK(pthread_create(&s[i], NULL, spin, NULL));
	CHECK_OK(pthread_create(&f, NULL, forker, NULL));
	CHECK_OK(pthread_join(f, NULL));
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		CHECK_OK(pthread_join(s[i], NULL));
}

static int ender_how;   /* 0 exit, 1 _exit, 2 abort */

static void at_exit(void)
{
	static atomic_int once;
	/* Written to stdout: the parent counts the lines. */
	printf("atexit %d\n", atomic_fetch_add(&once, 1));
	fflush(stdout);
}

static void *ender(void *arg)
{
	usleep(20000);   /* the spinners are running */
	if (ender_how == 0)
		exit(5);
	if (ender_how == 1)
		_exit(6);
	abort();
}

/* A child whose non-initial thread ends the process while others spin and
 * main waits in join. */
static void end_from_thread(int how, int want_status, int want_sig, int want_lines)
{
	int fds[2];
	CHECK(pipe(fds) == 0);
	fflush(stdout);
	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0) {
		CHECK(dup2(fds[1], 1) == 1);
		close(fds[0]);
		signal(SIGABRT, SIG_DFL);
		struct rlimit nocore = { 0, 0 };
		CHECK(setrlimit(RLIMIT_CORE, &nocore) == 0);
		atexit(at_exit);
		ender_how = how;
		pthread_t s[3], e;
		for (int i = 0; i < 3; i++)
			CHECK_OK(pthread_create(&s[i], NULL, spin, NULL));
		CHECK_OK(pthread_create(&e, NULL, ender, NULL));
		pthread_join(e, NULL);
		_exit(1);   /* not reached */
	}
	close(fds[1]);
	char buf[256];
	(void)tp_read_all(fds[0], buf, sizeof buf);
	close(fds[0]);
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	if (want_sig)
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == want_sig);
	else
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == want_status);
	int lines = 0;
	for (char *q = buf; (q = strstr(q, "atexit ")) != NULL; q++)
		lines++;
	CHECK(lines == want_lines);
	if (want_lines)
		CHECK(strcmp(buf, "atexit 0\n") == 0);
}

int main(int argc, char **argv)
{
	shared = argc > 1 && strcmp(argv[1], "shared") == 0;
	alarm(60);
	libc_state();
	fork_with_threads();
	end_from_thread(0, 5, 0, 1);
	end_from_thread(1, 6, 0, 0);
	end_from_thread(2, 0, SIGABRT, 0);
	puts("vpbackend: ok");
	return 0;
}
