/* Semaphores shared between processes: an unnamed process-shared one in
 * a shared mapping, ping-pong between a parent thread and a forked child,
 * and a named one (sem_open) shared with a child that runs this program
 * again with `child NAME`.  Run preloaded, that child runs on plain NPTL
 * (LD_PRELOAD removed): the two libraries must agree on the futex word. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "tp_util.h"

#define ROUNDS 2000

struct shm {
	sem_t ping, pong;
	long ball;
};

static struct shm *shm;

static void *pinger(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		CHECK(shm->ball == 2 * i);
		shm->ball++;
		CHECK(sem_post(&shm->ping) == 0);
		CHECK(sem_wait(&shm->pong) == 0);
	}
	return NULL;
}

static void unnamed(void)
{
	shm = mmap(NULL, sizeof *shm, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(shm != MAP_FAILED);
	CHECK(sem_init(&shm->ping, 1, 0) == 0);
	CHECK(sem_init(&shm->pong, 1, 0) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		for (int i = 0; i < ROUNDS; i++) {
			if (sem_wait(&shm->ping) != 0 || shm->ball != 2 * i + 1)
				_exit(2);
			shm->ball++;
			sem_post(&shm->pong);
		}
		_exit(0);
	}
	/* The parent plays from a thread, with another thread around. */
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, pinger, NULL));
	CHECK_OK(pthread_join(t, NULL));
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(shm->ball == 2 * ROUNDS);
}

static int child_named(const char *name)
{
	sem_t *s = sem_open(name, 0);
	if (s == SEM_FAILED)
		return 3;
	char done_name[80];
	snprintf(done_name, sizeof done_name, "%s_done", name);
	sem_t *done = sem_open(done_name, 0);
	if (done == SEM_FAILED)
		return 3;
	/* Take all the tokens the parent posts, blocking for most of them. */
	for (int i = 0; i < ROUNDS; i++)
		if (sem_wait(s) != 0)
			return 4;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 20000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	if (sem_timedwait(s, &ts) != -1 || errno != ETIMEDOUT)
		return 5;
	if (sem_post(done) != 0)
		return 6;
	sem_close(s);
	sem_close(done);
	return 0;
}

static void *poster(void *arg)
{
	sem_t *s = arg;
	for (int i = 0; i < ROUNDS; i++) {
		CHECK(sem_post(s) == 0);
		if (i % 16 == 0)
			usleep(100);
	}
	return NULL;
}

static void named(const char *self)
{
	char name[64], done_name[80];
	snprintf(name, sizeof name, "/tp_semshare_%d", (int)getpid());
	snprintf(done_name, sizeof done_name, "%s_done", name);
	sem_t *s = sem_open(name, O_CREAT | O_EXCL, 0600, 0);
	CHECK(s != SEM_FAILED);
	sem_t *done = sem_open(done_name, O_CREAT | O_EXCL, 0600, 0);
	CHECK(done != SEM_FAILED);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		/* A fresh program: on plain NPTL when the parent was preloaded. */
		unsetenv("LD_PRELOAD");
		execl(self, self, "child", name, (char *)NULL);
		_exit(127);
	}
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, poster, s));
	CHECK_OK(pthread_join(t, NULL));
	CHECK(sem_wait(done) == 0);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	int v;
	CHECK(sem_getvalue(s, &v) == 0 && v == 0);
	CHECK(sem_close(s) == 0 && sem_close(done) == 0);
	CHECK(sem_unlink(name) == 0);
	CHECK(sem_unlink(done_name) == 0);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "child") == 0)
		return child_named(argv[2]);
	unnamed();
	named(argv[0]);
	printf("shared semaphores ok\n");
	return 0;
}
