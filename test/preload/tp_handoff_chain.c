/* A thread sleeping with its timer on a VP whose kernel thread then blocks
 * in a call, and whose stand-in blocks in turn: the timer must still fire.
 * Main sleeps (its timer on its VP), readers block in read one after the
 * other on that VP and on the spares standing in for it (VP -> spare ->
 * spare), short threads keep the hand-offs coming and exit, and everything
 * goes idle before main's timer is due.  libppl's last spare of such a
 * chain woke only for its own lender's timers, not for those further up,
 * and main slept for good (tp_retire hung so, about 1 run in 40 under
 * load).  Bounded by alarm(). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 3
#define NREADERS 4
#define NQUICK 4
#define SLEEP_MS 100

static int pfd[2];

static void *reader(void *arg)
{
	char c;
	if (read(pfd[0], &c, 1) != 1)
		return (void *)1;
	return arg;
}

static void *quick(void *arg)
{
	return arg;
}

static long ms_since(const struct timespec *a)
{
	struct timespec b;
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (b.tv_sec - a->tv_sec) * 1000L + (b.tv_nsec - a->tv_nsec) / 1000000L;
}

int main(void)
{
	alarm(10);
	if (pipe(pfd) != 0) {
		perror("pipe");
		return 1;
	}
	for (int k = 0; k < ROUNDS; k++) {
		pthread_t r[NREADERS], q[NQUICK];
		for (int i = 0; i < NREADERS; i++)
			if (pthread_create(&r[i], NULL, reader, (void *)(long)(i + 10)) != 0) {
				fprintf(stderr, "round %d: pthread_create failed\n", k);
				return 1;
			}
		for (int i = 0; i < NQUICK; i++)
			if (pthread_create(&q[i], NULL, quick, (void *)(long)(i + 20)) != 0) {
				fprintf(stderr, "round %d: pthread_create failed\n", k);
				return 1;
			}
		struct timespec a, ts = { 0, SLEEP_MS * 1000000L };
		clock_gettime(CLOCK_MONOTONIC, &a);
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
		long took = ms_since(&a);
		if (took < SLEEP_MS) {
			fprintf(stderr, "round %d: nanosleep returned after %ld ms\n", k, took);
			return 1;
		}
		if (write(pfd[1], "abcd", NREADERS) != NREADERS) {
			perror("write");
			return 1;
		}
		void *res;
		for (int i = 0; i < NREADERS; i++)
			if (pthread_join(r[i], &res) != 0 || res != (void *)(long)(i + 10)) {
				fprintf(stderr, "round %d: reader %d failed\n", k, i);
				return 1;
			}
		for (int i = 0; i < NQUICK; i++)
			if (pthread_join(q[i], &res) != 0 || res != (void *)(long)(i + 20)) {
				fprintf(stderr, "round %d: quick thread %d failed\n", k, i);
				return 1;
			}
	}
	puts("handoff-chain: ok");
	return 0;
}
