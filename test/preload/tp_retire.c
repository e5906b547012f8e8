/* Back to one thread, a program sees one kernel thread in /proc/self/task,
 * as under NPTL (glibc's support_wait_for_thread_exit waits for that):
 * libppl's helper kernel threads (its VPs but the initial one, the
 * monitor, the spares of handed-off calls) end, and start again at the
 * next pthread_create.  Several cycles of: threads that block in read
 * (a hand-off), sleep, and spin until another one lets them go (needs
 * preemption on one VP); join; wait (bounded) for one task; check sleep
 * and fork still work on the thread left. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CYCLES 5
#define NREADERS 2

static int pfd[2];
static atomic_int go;

static int tasks(void)
{
	DIR *d = opendir("/proc/self/task");
	if (d == NULL) {
		perror("opendir /proc/self/task");
		exit(1);
	}
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void *reader(void *arg)
{
	char c;
	if (read(pfd[0], &c, 1) != 1)
		return (void *)1;
	return arg;
}

static void *spinner(void *arg)
{
	while (!atomic_load(&go))
		;
	return arg;
}

static void *releaser(void *arg)
{
	nap_ms(2);
	atomic_store(&go, 1);
	return arg;
}

static void cycle(int k)
{
	pthread_t r[NREADERS], s, l;
	atomic_store(&go, 0);
	for (int i = 0; i < NREADERS; i++)
		if (pthread_create(&r[i], NULL, reader, (void *)(long)(i + 10)) != 0) {
			fprintf(stderr, "cycle %d: pthread_create failed\n", k);
			exit(1);
		}
	if (pthread_create(&s, NULL, spinner, (void *)20L) != 0 ||
	    pthread_create(&l, NULL, releaser, (void *)21L) != 0) {
		fprintf(stderr, "cycle %d: pthread_create failed\n", k);
		exit(1);
	}
	nap_ms(5);   /* the readers block in read: hand-offs */
	if (write(pfd[1], "xy", NREADERS) != NREADERS) {
		perror("write");
		exit(1);
	}
	void *res;
	for (int i = 0; i < NREADERS; i++)
		if (pthread_join(r[i], &res) != 0 || res != (void *)(long)(i + 10)) {
			fprintf(stderr, "cycle %d: reader %d failed\n", k, i);
			exit(1);
		}
	if (pthread_join(s, &res) != 0 || res != (void *)20L ||
	    pthread_join(l, &res) != 0 || res != (void *)21L) {
		fprintf(stderr, "cycle %d: spinner or releaser failed\n", k);
		exit(1);
	}
	/* Wait for one task, as support_wait_for_thread_exit does. */
	int n = 0;
	for (int i = 0; i < 1000 && (n = tasks()) != 1; i++)
		nap_ms(5);
	if (n != 1) {
		fprintf(stderr, "cycle %d: /proc/self/task still lists %d tasks after 5 s\n", k, n);
		exit(1);
	}
	/* The thread left still sleeps and forks. */
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	nap_ms(3);
	clock_gettime(CLOCK_MONOTONIC, &b);
	if ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 3000000L) {
		fprintf(stderr, "cycle %d: nanosleep returned early\n", k);
		exit(1);
	}
	pid_t p = fork();
	if (p < 0) {
		perror("fork");
		exit(1);
	}
	if (p == 0) {
		pthread_t t;
		if (pthread_create(&t, NULL, releaser, (void *)21L) != 0 ||
		    pthread_join(t, &res) != 0 || res != (void *)21L)
			_exit(1);
		_exit(0);
	}
	int st;
	if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "cycle %d: forked child failed\n", k);
		exit(1);
	}
}

int main(void)
{
	alarm(20);
	if (pipe(pfd) != 0) {
		perror("pipe");
		return 1;
	}
	for (int k = 0; k < CYCLES; k++)
		cycle(k);
	puts("retire: ok");
	return 0;
}
