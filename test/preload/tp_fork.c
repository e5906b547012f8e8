/* fork from a threaded process: from a thread other than main while
 * other threads run and block; the child has exactly one thread, can lock
 * mutexes the handlers used and create threads again; pthread_atfork
 * handlers run in POSIX order; posix_spawn, system and popen work from a
 * thread. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/wait.h>

#include "tp_util.h"

extern char **environ;

/* ---- atfork order: prepare in reverse, parent and child in order ------- */

static char trace[64];
static int ntrace;
static pthread_mutex_t handler_lock = PTHREAD_MUTEX_INITIALIZER;

static void note(char c)
{
	if (ntrace < (int)sizeof trace - 1)
		trace[ntrace++] = c;
}

static void prep1(void) { note('a'); }
static void prep2(void) { note('b'); }
/* The last registered prepare runs first: it takes a mutex the parent and
 * child handlers release, so no other thread holds it across fork. */
static void prep3(void) { CHECK_OK(pthread_mutex_lock(&handler_lock)); note('c'); }
static void par1(void) { note('1'); }
static void par2(void) { note('2'); }
static void par3(void) { note('3'); CHECK_OK(pthread_mutex_unlock(&handler_lock)); }
static void chi1(void) { note('x'); }
static void chi2(void) { note('y'); }
static void chi3(void) { note('z'); CHECK_OK(pthread_mutex_unlock(&handler_lock)); }

/* ---- background threads alive across fork -------------------------------- */

static atomic_int stop;
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static long work;

static void *busy(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		CHECK_OK(pthread_mutex_lock(&shared_lock));
		work++;
		CHECK_OK(pthread_mutex_unlock(&shared_lock));
		sched_yield();
	}
	return NULL;
}

static void *blocked(void *arg)
{
	(void)arg;
	CHECK_OK(pthread_mutex_lock(&shared_lock));
	while (!atomic_load(&stop))
		CHECK_OK(pthread_cond_wait(&never, &shared_lock));
	CHECK_OK(pthread_mutex_unlock(&shared_lock));
	return NULL;
}

static void *sleeper(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		usleep(1000);
	return NULL;
}

static void *child_worker(void *arg)
{
	long *n = arg;
	for (int i = 0; i < 1000; i++) {
		CHECK_OK(pthread_mutex_lock(&shared_lock));
		(*n)++;
		CHECK_OK(pthread_mutex_unlock(&shared_lock));
		if (i % 50 == 0)
			sched_yield();
	}
	return NULL;
}

/* In the child: one thread; its locks usable; new threads work. */
static int child_main(pthread_t forker)
{
	if (strcmp(trace, "cbaxyz") != 0) {
		fprintf(stderr, "child: handler order %s\n", trace);
		return 2;
	}
	if (!pthread_equal(pthread_self(), forker))
		return 3;
	int k = tp_kernel_threads();
	if (k != 1) {
		fprintf(stderr, "child: %d kernel threads\n", k);
		return 4;
	}
	/* handler_lock was released by chi3; shared_lock is free unless a
	 * dead thread held it: the parent held it across fork to be sure. */
	CHECK_OK(pthread_mutex_lock(&handler_lock));
	CHECK_OK(pthread_mutex_unlock(&handler_lock));
	CHECK_OK(pthread_mutex_unlock(&shared_lock));
	long n = 0;
	pthread_t t[8];
	for (int i = 0; i < 8; i++)
		CHECK_OK(pthread_create(&t[i], NULL, child_worker, &n));
	for (int i = 0; i < 8; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	if (n != 8000)
		return 5;
	/* Sleeping and a second generation of fork work in the child too. */
	usleep(1000);
	pid_t g = fork();
	if (g == 0)
		_exit(pthread_equal(pthread_self(), forker) ? 0 : 9);
	int st;
	CHECK(waitpid(g, &st, 0) == g);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 6;
	return 0;
}

static void *forker(void *arg)
{
	(void)arg;
	/* Hold shared_lock across fork: the child then knows its state. */
	CHECK_OK(pthread_mutex_lock(&shared_lock));
	ntrace = 0;
	memset(trace, 0, sizeof trace);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		trace[ntrace] = '\0';
		_exit(child_main(pthread_self()));
	}
	CHECK_OK(pthread_mutex_unlock(&shared_lock));
	CHECK(strcmp(trace, "cba123") == 0);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "child status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		exit(1);
	}
	return NULL;
}

/* ---- processes started from a thread ------------------------------------- */

static void *spawner(void *arg)
{
	(void)arg;
	char *argv[] = { "sh", "-c", "exit 7", NULL };
	pid_t pid;
	CHECK_OK(posix_spawnp(&pid, "sh", NULL, NULL, argv, environ));
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7);

	st = system("exit 3");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 3);

	FILE *p = popen("echo hello-from-popen", "r");
	CHECK(p != NULL);
	char line[64] = "";
	CHECK(fgets(line, sizeof line, p) != NULL);
	CHECK(strcmp(line, "hello-from-popen\n") == 0);
	CHECK(pclose(p) == 0);
	return NULL;
}

int main(void)
{
	CHECK_OK(pthread_atfork(prep1, par1, chi1));
	CHECK_OK(pthread_atfork(prep2, par2, chi2));
	CHECK_OK(pthread_atfork(prep3, par3, chi3));

	pthread_t bg[6];
	CHECK_OK(pthread_create(&bg[0], NULL, busy, NULL));
	CHECK_OK(pthread_create(&bg[1], NULL, busy, NULL));
	CHECK_OK(pthread_create(&bg[2], NULL, blocked, NULL));
	CHECK_OK(pthread_create(&bg[3], NULL, blocked, NULL));
	CHECK_OK(pthread_create(&bg[4], NULL, sleeper, NULL));
	CHECK_OK(pthread_create(&bg[5], NULL, sleeper, NULL));

	for (int round = 0; round < 5; round++) {
		pthread_t f;
		CHECK_OK(pthread_create(&f, NULL, forker, NULL));
		CHECK_OK(pthread_join(f, NULL));
	}
	/* And from the main thread. */
	forker(NULL);

	pthread_t s;
	CHECK_OK(pthread_create(&s, NULL, spawner, NULL));
	CHECK_OK(pthread_join(s, NULL));

	atomic_store(&stop, 1);
	CHECK_OK(pthread_mutex_lock(&shared_lock));
	CHECK_OK(pthread_cond_broadcast(&never));
	CHECK_OK(pthread_mutex_unlock(&shared_lock));
	for (int i = 0; i < 6; i++)
		CHECK_OK(pthread_join(bg[i], NULL));
	printf("fork ok (%ld units of background work)\n", work);
	return 0;
}
