/* sched_order MODE: the order in which each built-in scheduler runs ready
 * threads, on one VP (PPL_VPS=1), and the fatal messages of a program's
 * scheduler that misbehaves.  Exit 0 and "ok" when the order is right.
 *   fifo|lifo|prio|timestamp  ppl_sched_use(MODE), then the order test
 *   env                       the scheduler PPL_SCHED chose
 *   sim                       timestamp: threads advance their own clocks
 *   bad-next | null-next      a scheduler whose next() misbehaves (fatal) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ppl.h"

enum { N = 8 };
static int order[4 * N], norder;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *record(void *arg)
{
	order[norder++] = (int)(long)arg;   /* one VP: no race */
	return NULL;
}

static int fail(const char *what)
{
	fprintf(stderr, "sched_order: %s:", what);
	for (int i = 0; i < norder; i++)
		fprintf(stderr, " %d", order[i]);
	fprintf(stderr, "\n");
	return 1;
}

/* Threads 0..N-1 made ready while main holds the VP, with keys
 * key[i]; main then joins them and they run in the scheduler's order. */
static const long long key[N] = { 3, 7, 1, 7, 5, 3, 9, 0 };

static int run_order(const char *name)
{
	pthread_t t[N];
	/* Started: the first create makes the VPs; main keeps VP 0 (1 VP). */
	for (int i = 0; i < N; i++) {
		if (pthread_create(&t[i], NULL, record, (void *)(long)i) != 0)
			return fail("create");
		if (ppl_sched_setkey(t[i], key[i]) != 0)
			return fail("setkey");
	}
	for (int i = 0; i < N; i++)
		pthread_join(t[i], NULL);
	if (norder != N)
		return fail("count");
	int want[N];
	for (int i = 0; i < N; i++)
		want[i] = i;
	if (strcmp(name, "lifo") == 0) {
		for (int i = 0; i < N; i++)
			want[i] = N - 1 - i;
	} else if (strcmp(name, "prio") == 0 || strcmp(name, "timestamp") == 0) {
		/* stable sort by key: descending (prio) or ascending */
		int sign = strcmp(name, "prio") == 0 ? -1 : 1;
		for (int i = 1; i < N; i++)
			for (int j = i; j > 0 && sign * (key[want[j - 1]] - key[want[j]]) > 0; j--) {
				int x = want[j];
				want[j] = want[j - 1];
				want[j - 1] = x;
			}
	}
	for (int i = 0; i < N; i++)
		if (order[i] != want[i])
			return fail(name);
	printf("sched_order %s: ok\n", name);
	return 0;
}

/* Discrete-event style: each thread advances its own clock by its own
 * step and yields; the time stamps the threads run at never go back. */
static long long last = -1;
static int backwards, events;

static void *clocked(void *arg)
{
	long long step = (long)arg, now = 0;
	for (int i = 0; i < 50; i++) {
		now += step;
		ppl_sched_setkey(pthread_self(), now);
		sched_yield();
		pthread_mutex_lock(&lock);
		if (now < last)
			backwards++;
		last = now;
		events++;
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

static int run_sim(void)
{
	pthread_t t[N];
	for (int i = 0; i < N; i++)
		pthread_create(&t[i], NULL, clocked, (void *)(long)(i * 3 + 2));
	for (int i = 0; i < N; i++)
		pthread_join(t[i], NULL);
	if (backwards || events != 50 * N) {
		fprintf(stderr, "sched_order sim: %d of %d events went back in time\n", backwards,
			events);
		return 1;
	}
	printf("sched_order sim: ok (%d events in time-stamp order)\n", events);
	return 0;
}

/* A program's scheduler that misbehaves: a one-slot-per-VP FIFO whose
 * next() returns a thread that is not ready (bad) or none (null). */
static pthread_t slots[64];
static int head[1024], tail[1024];
static int mode_null;
static pthread_t parked;

static void put(int vp, pthread_t t)
{
	(void)vp;
	slots[tail[0]++ % 64] = t;
}

static pthread_t next(int vp)
{
	(void)vp;
	if (head[0] == tail[0])
		return 0;
	if (mode_null && parked)
		return 0;   /* holds them for ever */
	if (!mode_null && parked)
		return parked;   /* not ready: it waits in pthread_join */
	return slots[head[0]++ % 64];
}

static void *joiner(void *arg)
{
	pthread_join(*(pthread_t *)arg, NULL);
	return NULL;
}

static void *spin_a_little(void *arg)
{
	usleep(1000);
	return arg;
}

static int run_bad(void)
{
	static const struct ppl_sched_ops ops = { .name = "broken", .put = put, .next = next };
	if (ppl_sched_install(&ops) != 0)
		return fail("install");
	static pthread_t a, b;
	pthread_create(&a, NULL, spin_a_little, NULL);
	pthread_create(&b, NULL, joiner, &a);
	usleep(20000);   /* b parks in its join */
	parked = b;
	pthread_t c;
	pthread_create(&c, NULL, record, NULL);
	pthread_join(c, NULL);
	fprintf(stderr, "sched_order: the broken scheduler was not caught\n");
	return 1;
}

int main(int argc, char **argv)
{
	alarm(20);
	const char *mode = argc > 1 ? argv[1] : "fifo";
	if (strcmp(mode, "bad-next") == 0 || strcmp(mode, "null-next") == 0) {
		mode_null = mode[0] == 'n';
		return run_bad();
	}
	if (strcmp(mode, "env") == 0) {
		mode = ppl_sched_name();
		/* PPL_SCHED chose already (fifo: nothing to install) */
		if (strcmp(mode, "fifo") != 0 && ppl_sched_use("lifo") != EBUSY)
			return fail("EBUSY");
	} else if (ppl_sched_use(mode) != 0) {
		return fail("ppl_sched_use");
	}
	if (ppl_sched_use("nonesuch") != EBUSY && ppl_sched_use("nonesuch") != EINVAL)
		return fail("unknown name");
	if (strcmp(mode, "timestamp") == 0 && argc > 2)
		return run_sim();
	int r = run_order(mode);
	/* Installed once threads exist: EBUSY. */
	if (r == 0 && ppl_sched_use("fifo") != EBUSY)
		return fail("EBUSY after start");
	return r;
}
