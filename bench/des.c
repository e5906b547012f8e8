/* des: a discrete-event simulation in Ariadne's style, using libppl's own
 * interface (ppl.h): a closed network of S FIFO servers, a thread per
 * customer, each customer migrating to the VP that owns the server it
 * visits (ppl_pin), servers' events in time-stamp order (PPL_SCHED
 * timestamp, keys from ppl_sched_setkey).  The result is checked against a
 * sequential run of the same model.
 *
 *   des [CUSTOMERS [VISITS [SERVERS [WORK]]]]     (default 200 50 16 20000)
 *
 * Each customer has its own route and service times (drawn from its own
 * seed).  A visit: arrive at server s at time a, start at max(a, the time
 * s is free), leave after the service time, reach the next server after a
 * transit of at least LOOKAHEAD.  Every event also computes WORK loop
 * iterations (the model's own work, which the VPs share).
 *
 * Parallel run: time goes in windows of LOOKAHEAD.  Once every customer
 * waits at its next server, main opens the next window that has arrivals:
 * those customers are served in it, and none can arrive later in it (every
 * arrival is at least LOOKAHEAD after an event of an earlier window).  They
 * are woken onto their servers' VPs (they are pinned there) and wait until
 * all are queued; then each VP serves its own in time-stamp order, which is
 * what the sequential run does per server.  Output:
 *   des-C-V-S ms=T vps=N events=E end=SIMTIME ok */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ppl.h"

#define LOOKAHEAD 400

static int ncust = 200, nvisits = 50, nserv = 16;
static long work = 20000;
static int nvps;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static unsigned long long rnd(unsigned long long *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return *s >> 33;
}

static volatile unsigned long sink;

static void compute(void)
{
	unsigned long x = 0;
	for (long i = 0; i < work; i++)
		x += (unsigned long)i * i;
	sink = x;
}

/* A customer's k-th visit: server, service time, transit after it. */
struct visit {
	int server;
	long long service, transit;
};

static struct visit *route;   /* ncust * nvisits */

static void make_routes(void)
{
	route = malloc(sizeof *route * (size_t)ncust * (size_t)nvisits);
	for (int c = 0; c < ncust; c++) {
		unsigned long long s = 12345 + (unsigned long long)c * 977;
		for (int k = 0; k < nvisits; k++) {
			struct visit *v = &route[c * nvisits + k];
			v->server = (int)(rnd(&s) % (unsigned)nserv);
			v->service = 1 + (long long)(rnd(&s) % 100);
			v->transit = LOOKAHEAD + (long long)(rnd(&s) % 50);
		}
	}
}

/* ---- the sequential reference ---------------------------------------------- */

static long long *seq_done;   /* each customer's completion time */

static void sequential(void)
{
	long long *free_at = calloc((size_t)nserv, sizeof *free_at);
	long long *arrive = malloc(sizeof *arrive * (size_t)ncust);
	int *step = calloc((size_t)ncust, sizeof *step);
	seq_done = malloc(sizeof *seq_done * (size_t)ncust);
	for (int c = 0; c < ncust; c++)
		arrive[c] = c % 7;   /* staggered start */
	/* Events in (arrival, customer) order: a linear scan is enough here. */
	for (long e = 0; e < (long)ncust * nvisits; e++) {
		int best = -1;
		for (int c = 0; c < ncust; c++)
			if (step[c] < nvisits &&
			    (best < 0 || arrive[c] < arrive[best]))
				best = c;
		struct visit *v = &route[best * nvisits + step[best]];
		long long start = arrive[best] > free_at[v->server] ? arrive[best] : free_at[v->server];
		long long leave = start + v->service;
		free_at[v->server] = leave;
		compute();
		if (++step[best] == nvisits)
			seq_done[best] = leave;
		arrive[best] = leave + v->transit;
	}
	free(free_at);
	free(arrive);
	free(step);
}

/* ---- the parallel run --------------------------------------------------------- */

static long long *free_at;     /* per server: touched only on its owner VP */
static long long *par_done;
static long long *waiting;     /* per customer: the arrival it waits to be served at, or -1 */
static long long win_end;      /* arrivals before it are served in this window */
static atomic_int generation;  /* windows opened */
static sem_t *go;              /* per customer: served in this window */
static int eligible, served;   /* this window's customers, and those done */
static int left;               /* customers not finished */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cond = PTHREAD_COND_INITIALIZER;  /* a window's customers done */
static atomic_int released;    /* windows whose customers are all queued */
static atomic_long events, misplaced;

static int owner(int server)
{
	return server % nvps;
}

/* Keys: arrival time then customer, so that equal times keep one order. */
static long long key_of(long long t, int c)
{
	return t * 4096 + c;
}

static void *customer(void *arg)
{
	int c = (int)(long)arg;
	long long arrive = c % 7, leave = 0;
	for (int k = 0; k < nvisits; k++) {
		struct visit *v = &route[c * nvisits + k];
		ppl_pin(pthread_self(), owner(v->server));   /* returns on that VP */
		ppl_sched_setkey(pthread_self(), key_of(arrive, c));
		pthread_mutex_lock(&lock);
		waiting[c] = arrive;
		pthread_cond_signal(&done_cond);   /* main counts the waiters */
		pthread_mutex_unlock(&lock);
		while (sem_wait(&go[c]) != 0)
			;
		int gen = atomic_load(&generation);
		/* The window's customers are being woken onto their VPs (each
		 * sem_post queues its customer there): once all are, yield, and
		 * the lowest time stamp goes first. */
		while (atomic_load(&released) < gen)
			sched_yield();
		sched_yield();
		if (ppl_current_vp() != owner(v->server))
			atomic_fetch_add(&misplaced, 1);
		long long start = arrive > free_at[v->server] ? arrive : free_at[v->server];
		leave = start + v->service;
		free_at[v->server] = leave;
		compute();
		atomic_fetch_add(&events, 1);
		arrive = leave + v->transit;
		pthread_mutex_lock(&lock);
		if (++served == eligible)
			pthread_cond_signal(&done_cond);
		pthread_mutex_unlock(&lock);
	}
	par_done[c] = leave;
	pthread_mutex_lock(&lock);
	left--;
	pthread_cond_signal(&done_cond);
	pthread_mutex_unlock(&lock);
	return NULL;
}

static double parallel(void)
{
	free_at = calloc((size_t)nserv, sizeof *free_at);
	par_done = calloc((size_t)ncust, sizeof *par_done);
	waiting = malloc(sizeof *waiting * (size_t)ncust);
	go = malloc(sizeof *go * (size_t)ncust);
	for (int c = 0; c < ncust; c++) {
		waiting[c] = -1;
		sem_init(&go[c], 0, 0);
	}
	/* Main opens the windows from VP 0, first among the ready threads
	 * there while it wakes a window's customers. */
	ppl_pin(pthread_self(), 0);
	ppl_sched_setkey(pthread_self(), LLONG_MIN);
	pthread_t *t = malloc(sizeof *t * (size_t)ncust);
	double t0 = now_ms();
	pthread_mutex_lock(&lock);
	left = ncust;
	win_end = 0;
	pthread_mutex_unlock(&lock);
	for (int c = 0; c < ncust; c++)
		pthread_create(&t[c], NULL, customer, (void *)(long)c);
	pthread_mutex_lock(&lock);
	for (;;) {
		/* Everyone not finished waits for a window: open the next one
		 * that has customers. */
		int nwait = 0;
		long long first = LLONG_MAX;
		for (int c = 0; c < ncust; c++)
			if (waiting[c] >= 0) {
				nwait++;
				if (waiting[c] < first)
					first = waiting[c];
			}
		if (left == 0)
			break;
		if (nwait < left) {
			pthread_cond_wait(&done_cond, &lock);   /* some still on their way */
			continue;
		}
		win_end = (first / LOOKAHEAD + 1) * LOOKAHEAD;
		eligible = served = 0;
		int gen = atomic_fetch_add(&generation, 1) + 1;
		for (int c = 0; c < ncust; c++)
			if (waiting[c] >= 0 && waiting[c] < win_end) {
				eligible++;
				waiting[c] = -1;
				sem_post(&go[c]);
			}
		atomic_store(&released, gen);
		while (served < eligible)
			pthread_cond_wait(&done_cond, &lock);
	}
	pthread_mutex_unlock(&lock);
	double ms = now_ms() - t0;
	for (int c = 0; c < ncust; c++)
		pthread_join(t[c], NULL);
	ppl_unpin(pthread_self());
	return ms;
}

static void *nothing(void *arg)
{
	return arg;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		ncust = atoi(argv[1]);
	if (argc > 2)
		nvisits = atoi(argv[2]);
	if (argc > 3)
		nserv = atoi(argv[3]);
	if (argc > 4)
		work = atol(argv[4]);
	if (ncust < 1 || ncust >= 4096 || nvisits < 1 || nserv < 1 || work < 0) {
		fprintf(stderr, "usage: des [CUSTOMERS<4096 [VISITS [SERVERS [WORK]]]]\n");
		return 2;
	}
	int err = ppl_sched_use("timestamp");
	if (err && strcmp(ppl_sched_name(), "timestamp") != 0) {
		fprintf(stderr, "des: needs libppl's timestamp scheduler (%s)\n", strerror(err));
		return 2;
	}
	make_routes();
	double s0 = now_ms();
	sequential();
	double seq_ms = now_ms() - s0;
	/* The first pthread_create starts the VPs. */
	pthread_t t;
	pthread_create(&t, NULL, nothing, NULL);
	pthread_join(t, NULL);
	nvps = ppl_vp_count();
	double ms = parallel();
	long long end = 0;
	int wrong = 0;
	for (int c = 0; c < ncust; c++) {
		wrong += par_done[c] != seq_done[c];
		if (seq_done[c] > end)
			end = seq_done[c];
	}
	printf("des-%d-%d-%d %.3f ms vps=%d events=%ld end=%lld seq_ms=%.3f misplaced=%ld %s\n",
	       ncust, nvisits, nserv, ms, nvps, atomic_load(&events), end, seq_ms,
	       atomic_load(&misplaced), wrong ? "WRONG" : "ok");
	if (wrong)
		fprintf(stderr, "des: %d customers finished at other times than sequentially\n", wrong);
	return wrong || atomic_load(&misplaced) ? 1 : 0;
}
