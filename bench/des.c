/* des: a discrete-event simulation in Ariadne's style, using libppl's own
 * interface (ppl.h): a closed network of S FIFO servers, a thread per
 * customer started with its typed arguments (ppl_spawn) and joined for its
 * typed result (ppl_join_typed), each customer migrating to the VP that
 * owns the server it visits (ppl_pin), servers' events in time-stamp order
 * (ppl_sched_use("timestamp"), keys from ppl_sched_setkey).  The result is
 * checked against a sequential run of the same model.
 *
 *   des [CUSTOMERS [VISITS [SERVERS [WORK]]]]     (default 200 50 16 20000)
 *
 * Each customer has its own route and service times (drawn from its own
 * seed).  A visit: arrive at server s at time a, start at max(a, the time
 * s is free), leave after the service time, reach the next server after a
 * transit of at least LOOKAHEAD.  Every event also computes WORK loop
 * iterations (the model's own work, which the VPs share).
 *
 * Parallel run (conservative, in windows of the lookahead): window w holds
 * the arrivals in [w * LOOKAHEAD, (w + 1) * LOOKAHEAD).  An event of window
 * w makes an arrival at least LOOKAHEAD + 1 later, in a later window, so
 * the events of one window are independent across servers, and once the
 * windows before w are done w knows all its arrivals.  A customer goes to
 * its next server's VP and waits there; when its window opens, that VP's
 * gate thread (first in the VP's time-stamp order) wakes the window's
 * customers there all at once, and the VP serves them lowest time stamp
 * first, which is what the sequential run does per server.  No lock is
 * shared across VPs per event: each VP serves its own customers, and the
 * windows are counted with atomic counters (the customer that empties the
 * open window opens the next, waking one gate per VP).  Output:
 *   des-C-V-S T ms vps=N events=E per-vp=E0/E1/.. bound=B end=SIMTIME ... ok
 * where B is the speed-up the windows allow on N VPs with no overhead: the
 * events over the sum, window by window, of the busiest VP's events. */
#include <limits.h>
#include <pthread.h>
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
static long *seq_win;         /* per event, in order: its window */
static int *seq_server;       /* and its server */
static long long *par_done;

static void sequential(void)
{
	long long *free_at = calloc((size_t)nserv, sizeof *free_at);
	long long *arrive = malloc(sizeof *arrive * (size_t)ncust);
	int *step = calloc((size_t)ncust, sizeof *step);
	seq_done = malloc(sizeof *seq_done * (size_t)ncust);
	seq_win = malloc(sizeof *seq_win * (size_t)ncust * (size_t)nvisits);
	seq_server = malloc(sizeof *seq_server * (size_t)ncust * (size_t)nvisits);
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
		seq_win[e] = (long)(arrive[best] / LOOKAHEAD);
		seq_server[e] = v->server;
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

/* Windows: window w holds the arrivals in [w * LOOKAHEAD, (w + 1) * LOOKAHEAD);
 * count[w + 1] is the number of customers waiting for an arrival in it
 * (count[0]: customers not yet at their first server).  Every arrival comes
 * at least LOOKAHEAD + 1 after the event it follows, so an event of window
 * w only adds to later windows: once the windows before w are empty, w's
 * count is final and w may run.  A customer adds itself to its next window
 * before it leaves its current one, and the one that empties the open
 * window opens the next that has customers. */
static _Atomic int *count;
static long nwindows;               /* windows count[] has room for */
static _Atomic long open_win = -1;  /* the window being served (-1: none yet) */
static _Atomic long last_win = -1;  /* the highest window anyone waits for */

/* Per VP: the customers waiting there for a window, and its gate thread,
 * which wakes the open window's ones from that VP (see gate()). */
struct vpq {
	pthread_mutex_t lock;
	int n, *cust;
	sem_t wake;
	pthread_t gate;
	atomic_long events;             /* served on this VP */
} __attribute__((aligned(64)));

static struct vpq *vpq;
static long *wait_win;             /* per customer: the window it waits for */
static sem_t *go;                  /* per customer: its window is open */
static long long *free_at;         /* per server: touched only on its owner VP */
static long long *last_key;        /* per server: the last key served, for the order check */
static sem_t all_done;
static atomic_long misplaced, disorder;
static atomic_bool finished;

static int owner(int server)
{
	return server % nvps;
}

/* Keys: arrival time then customer, so that equal times keep one order. */
static long long key_of(long long t, int c)
{
	return t * 4096 + c;
}

static void open_next(long w)
{
	long last = atomic_load(&last_win);
	for (long x = w + 1; x <= last; x++)
		if (atomic_load(&count[x + 1]) != 0) {
			atomic_store(&open_win, x);
			for (int v = 0; v < nvps; v++)
				sem_post(&vpq[v].wake);
			return;
		}
	/* No customer waits for any window: all have finished. */
	atomic_store(&finished, true);
	for (int v = 0; v < nvps; v++)
		sem_post(&vpq[v].wake);
	sem_post(&all_done);
}

static void leave_window(long w)
{
	if (atomic_fetch_sub(&count[w + 1], 1) == 1)
		open_next(w);
}

static void enter_window(long w)
{
	if (w + 1 >= nwindows) {
		fprintf(stderr, "des: window %ld beyond the bound %ld\n", w, nwindows - 1);
		abort();
	}
	atomic_fetch_add(&count[w + 1], 1);
	long last = atomic_load(&last_win);
	while (w > last && !atomic_compare_exchange_weak(&last_win, &last, w))
		;
}

/* One per VP, pinned there and first in its time-stamp order: when a window
 * opens it wakes that VP's customers waiting for it.  Running on the VP,
 * it has queued them all there before any of them runs; then it waits,
 * and the VP serves them lowest time stamp first. */
static void *gate(void *arg)
{
	struct vpq *q = arg;
	ppl_sched_setkey(pthread_self(), LLONG_MIN);
	ppl_pin(pthread_self(), (int)(q - vpq));
	for (;;) {
		while (sem_wait(&q->wake) != 0)
			;
		if (atomic_load(&finished))
			return NULL;
		long w = atomic_load(&open_win);
		pthread_mutex_lock(&q->lock);
		int kept = 0;
		for (int i = 0; i < q->n; i++) {
			int c = q->cust[i];
			if (wait_win[c] == w)
				sem_post(&go[c]);
			else
				q->cust[kept++] = c;
		}
		q->n = kept;
		pthread_mutex_unlock(&q->lock);
	}
}

/* A customer (started by ppl_spawn with its number and its first arrival),
 * returns its completion time. */
static long long customer(int c, long long arrive)
{
	long long leave = 0;
	long cur = -1;   /* the start */
	for (int k = 0; k < nvisits; k++) {
		struct visit *v = &route[c * nvisits + k];
		int vp = owner(v->server);
		long w = arrive / LOOKAHEAD;
		enter_window(w);
		/* Go to the server's VP and wait there for the window. */
		ppl_sched_setkey(pthread_self(), key_of(arrive, c));
		ppl_pin(pthread_self(), vp);   /* returns on that VP */
		wait_win[c] = w;
		pthread_mutex_lock(&vpq[vp].lock);
		vpq[vp].cust[vpq[vp].n++] = c;
		pthread_mutex_unlock(&vpq[vp].lock);
		leave_window(cur);
		while (sem_wait(&go[c]) != 0)
			;
		/* The event, on the server's VP, in time-stamp order there. */
		if (ppl_current_vp() != vp)
			atomic_fetch_add(&misplaced, 1);
		long long key = key_of(arrive, c);
		if (key < last_key[v->server])
			atomic_fetch_add(&disorder, 1);
		last_key[v->server] = key;
		long long start = arrive > free_at[v->server] ? arrive : free_at[v->server];
		leave = start + v->service;
		free_at[v->server] = leave;
		compute();
		atomic_fetch_add_explicit(&vpq[vp].events, 1, memory_order_relaxed);
		cur = w;
		arrive = leave + v->transit;
	}
	leave_window(cur);
	return leave;
}

/* Windows enough for any run of the model: a time is a start time plus
 * services and transits of distinct events, one after another. */
static long window_bound(void)
{
	long long sum = 7;
	for (long i = 0; i < (long)ncust * nvisits; i++)
		sum += route[i].service + route[i].transit;
	return (long)(sum / LOOKAHEAD) + 2;
}

static double parallel(void)
{
	nwindows = window_bound();
	count = calloc((size_t)nwindows, sizeof *count);
	free_at = calloc((size_t)nserv, sizeof *free_at);
	last_key = malloc(sizeof *last_key * (size_t)nserv);
	for (int s = 0; s < nserv; s++)
		last_key[s] = LLONG_MIN;
	par_done = calloc((size_t)ncust, sizeof *par_done);
	wait_win = malloc(sizeof *wait_win * (size_t)ncust);
	go = malloc(sizeof *go * (size_t)ncust);
	for (int c = 0; c < ncust; c++)
		sem_init(&go[c], 0, 0);
	sem_init(&all_done, 0, 0);
	vpq = aligned_alloc(64, sizeof *vpq * (size_t)nvps);
	memset(vpq, 0, sizeof *vpq * (size_t)nvps);
	pthread_t *t = malloc(sizeof *t * (size_t)ncust);
	double t0 = now_ms();
	for (int v = 0; v < nvps; v++) {
		pthread_mutex_init(&vpq[v].lock, NULL);
		vpq[v].cust = malloc(sizeof *vpq[v].cust * (size_t)ncust);
		sem_init(&vpq[v].wake, 0, 0);
		pthread_create(&vpq[v].gate, NULL, gate, &vpq[v]);
	}
	/* The start "window": every customer leaves it once it waits at its
	 * first server; the last one opens window 0. */
	atomic_store(&count[0], ncust);
	for (int c = 0; c < ncust; c++)
		if (ppl_spawn(&t[c], NULL, (void *)customer, "iq>q", c, (int64_t)(c % 7)) != 0) {
			fprintf(stderr, "des: ppl_spawn failed\n");
			exit(2);
		}
	while (sem_wait(&all_done) != 0)
		;
	double ms = now_ms() - t0;
	for (int c = 0; c < ncust; c++)
		ppl_join_typed(t[c], &par_done[c]);
	for (int v = 0; v < nvps; v++)
		pthread_join(vpq[v].gate, NULL);
	return ms;
}

/* What the windows allow: the events over the sum, window by window, of the
 * busiest VP's events (each VP serves its servers' events of a window one
 * after another, and the next window waits for the last). */
static double window_bound_speedup(void)
{
	long nw = window_bound();
	long *n = calloc((size_t)nw * (size_t)nvps, sizeof *n);
	for (long e = 0; e < (long)ncust * nvisits; e++)
		n[seq_win[e] * nvps + owner(seq_server[e])]++;
	long crit = 0;
	for (long w = 0; w < nw; w++) {
		long m = 0;
		for (int v = 0; v < nvps; v++)
			if (n[w * nvps + v] > m)
				m = n[w * nvps + v];
		crit += m;
	}
	free(n);
	return crit ? (double)((long)ncust * nvisits) / (double)crit : 0;
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
	long events = 0;
	char per_vp[256] = "";
	for (int v = 0, n = 0; v < nvps; v++) {
		events += vpq[v].events;
		if (n < (int)sizeof per_vp - 24)
			n += snprintf(per_vp + n, sizeof per_vp - (size_t)n, "%s%ld", v ? "/" : "",
				      vpq[v].events);
	}
	printf("des-%d-%d-%d %.3f ms vps=%d events=%ld per-vp=%s bound=%.2f end=%lld seq_ms=%.3f "
	       "misplaced=%ld disorder=%ld %s\n",
	       ncust, nvisits, nserv, ms, nvps, events, per_vp, window_bound_speedup(), end, seq_ms,
	       atomic_load(&misplaced), atomic_load(&disorder), wrong ? "WRONG" : "ok");
	if (wrong)
		fprintf(stderr, "des: %d customers finished at other times than sequentially\n", wrong);
	return wrong || atomic_load(&misplaced) || atomic_load(&disorder) ||
	       events != (long)ncust * nvisits ? 1 : 0;
}
