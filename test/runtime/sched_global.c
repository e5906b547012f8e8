/* sched_global MODE: the prio and timestamp built-ins keep one order across
 * the VPs of their group: a VP never runs a thread while a better one that
 * it may run is ready on another VP.  Exit 0 and "ok" when it holds.
 *   prio | timestamp   the default group, PPL_VPS=2 (ppl_migrate only)
 *   groups             PPL_VPS=4: prio on VPs 0-1, timestamp on VPs 2-3
 *                      (ppl_sched_use_vps), threads pinned to a group's
 *                      VPs (ppl_pin_set) that come from the other group
 *   custom             PPL_VPS=2: a program's scheduler for VP 1 only
 *                      (ppl_sched_install_vps): threads pinned to VP 1 go
 *                      through its up-calls, VP 0's never
 *   fifo | lifo        PPL_VPS=2: these two keep their order per VP: threads
 *                      pinned one by one to VP 1 while it is busy run
 *                      there in pin order (fifo) or the reverse (lifo)
 *
 * The harness: one spinner per VP of the group and main hold the VPs with
 * the best key while NW workers, spread half on each of two VPs with the
 * worse half of the keys on the first, set their keys and yield.  Then the
 * spinners end and each worker, as it starts, counts the better workers
 * not started yet: at most one per other VP of the group (picked there,
 * not yet counted), or the order was per VP.  Run with PPL_TIMESLICE_US=0. */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ppl.h"

enum { NW = 32 };

static int order;                 /* 1: prio (highest first), -1: timestamp */
static ppl_vpset_t group;         /* the group's VPs */
static int gv[2], ng;             /* its first two VPs; its size */
static bool pinned;               /* workers pinned to the group (ppl_pin_set) */
static int from_vp = -1;          /* workers start there (another group) */
static _Atomic int parked, go, started[NW], worst, badvp;

/* Where the run is, on stderr at once: a run that hangs (one of several
 * thousand in the process backend, once, in CI) then says where when the
 * alarm ends it. */
static void stage(const char *what)
{
	if (write(2, what, strlen(what)) < 0)
		return;
}

static long long top(void)
{
	return order > 0 ? 1000000 : -1000000;
}

/* Rank 0 is the worst: key rank for prio, 1000 - rank for timestamp. */
static long long key_of(int rank)
{
	return order > 0 ? rank : 1000 - rank;
}

/* Worker i: rank i; the worse half on gv[0], the better on gv[1]. */
static int vp_of(int i)
{
	return gv[i < NW / 2 ? 0 : 1];
}

static void *spinner(void *arg)
{
	(void)arg;
	if (pinned)
		ppl_pin_set(pthread_self(), &group);
	while (!atomic_load(&go))
		sched_yield();
	return NULL;
}

static void *worker(void *arg)
{
	int i = (int)(long)arg;
	pthread_t self = pthread_self();
	if (from_vp >= 0)
		ppl_pin(self, from_vp);          /* born in the other group */
	if (pinned)
		ppl_pin_set(self, &group);       /* into this one, anywhere in it */
	ppl_migrate(self, vp_of(i));             /* with the best key: runs there now */
	if (ppl_current_vp() != vp_of(i))
		atomic_store(&badvp, 1);
	ppl_sched_setkey(self, key_of(i));
	atomic_fetch_add(&parked, 1);
	do
		sched_yield();                   /* queued on vp_of(i), below the spinners */
	while (!atomic_load(&go));
	if (!ppl_vpset_has(&group, ppl_current_vp()))
		atomic_store(&badvp, 1);
	atomic_store(&started[i], 1);
	int waiting = 0;
	for (int j = i + 1; j < NW; j++)         /* the better ones */
		waiting += !atomic_load(&started[j]);
	int w = atomic_load(&worst);
	while (waiting > w && !atomic_compare_exchange_weak(&worst, &w, waiting))
		;
	return NULL;
}

static int run(const char *what)
{
	pthread_t sp[4], wk[NW];
	atomic_store(&go, 0);
	atomic_store(&parked, 0);
	atomic_store(&worst, 0);
	for (int i = 0; i < NW; i++)
		atomic_store(&started[i], 0);
	pthread_t self = pthread_self();
	ppl_sched_setkey(self, top());           /* its threads inherit it */
	for (int i = 0; i < ng; i++)
		pthread_create(&sp[i], NULL, spinner, NULL);
	/* After the first create: the VPs exist. */
	if (pinned && ppl_pin_set(self, &group) != 0) {
		fprintf(stderr, "sched_global: %s: ppl_pin_set main\n", what);
		return 1;
	}
	for (int i = 0; i < NW; i++)
		pthread_create(&wk[i], NULL, worker, (void *)(long)i);
	while (atomic_load(&parked) < NW)
		sched_yield();
	stage("run: the workers are parked\n");
	for (int i = 0; i < 20; i++)             /* the last ones reach their yield */
		sched_yield();
	atomic_store(&go, 1);
	for (int i = 0; i < ng; i++)
		pthread_join(sp[i], NULL);
	for (int i = 0; i < NW; i++)
		pthread_join(wk[i], NULL);
	stage("run: all joined\n");
	ppl_unpin(self);
	int w = atomic_load(&worst);
	printf("%s: at most %d better threads waiting when one started (allowed %d)\n", what, w,
	       ng - 1);
	if (atomic_load(&badvp)) {
		fprintf(stderr, "sched_global: %s: a worker ran outside its VPs\n", what);
		return 1;
	}
	if (w > ng - 1) {
		fprintf(stderr, "sched_global: %s: per-VP order, not global (%d better waiting)\n",
			what, w);
		return 1;
	}
	return 0;
}

static void set_group(int a, int n)
{
	ppl_vpset_zero(&group);
	for (int i = 0; i < n; i++)
		ppl_vpset_add(&group, a + i);
	gv[0] = a;
	gv[1] = a + 1;
	ng = n;
}

static int expect(int got, int want, const char *what)
{
	if (got == want)
		return 0;
	fprintf(stderr, "sched_global: %s: %d, expected %d\n", what, got, want);
	return 1;
}

static int groups(void)
{
	ppl_vpset_t a, b, empty;
	ppl_vpset_zero(&a);
	ppl_vpset_add(&a, 0);
	ppl_vpset_add(&a, 1);
	ppl_vpset_zero(&b);
	ppl_vpset_add(&b, 2);
	ppl_vpset_add(&b, 3);
	ppl_vpset_zero(&empty);
	int bad = 0;
	bad |= expect(ppl_sched_use_vps("prio", &a), 0, "use_vps prio 0-1");
	bad |= expect(ppl_sched_use_vps("timestamp", &b), 0, "use_vps timestamp 2-3");
	bad |= expect(ppl_sched_use_vps("lifo", &b), EBUSY, "use_vps on a VP of a group");
	bad |= expect(ppl_sched_use_vps("nonesuch", &empty), EINVAL, "use_vps empty");
	ppl_vpset_t c;
	ppl_vpset_zero(&c);
	ppl_vpset_add(&c, 5);
	bad |= expect(ppl_sched_use_vps("nonesuch", &c), EINVAL, "use_vps unknown");
	bad |= expect(ppl_sched_use_vps("prio", NULL), EINVAL, "use_vps NULL");
	if (bad)
		return 1;
	if (strcmp(ppl_sched_name_vp(1), "prio") || strcmp(ppl_sched_name_vp(2), "timestamp") ||
	    strcmp(ppl_sched_name_vp(5), "fifo") || strcmp(ppl_sched_name(), "fifo")) {
		fprintf(stderr, "sched_global: names %s %s %s %s\n", ppl_sched_name_vp(1),
			ppl_sched_name_vp(2), ppl_sched_name_vp(5), ppl_sched_name());
		return 1;
	}
	pinned = true;
	order = -1;
	set_group(2, 2);
	from_vp = 0;
	if (run("timestamp on VPs 2-3, threads from VP 0"))
		return 1;
	order = 1;
	set_group(0, 2);
	from_vp = 3;
	if (run("prio on VPs 0-1, threads from VP 3"))
		return 1;
	return expect(ppl_sched_use_vps("lifo", &c), EBUSY, "use_vps after start");
}

enum { NL = 16 };
static _Atomic int lorder[NL], nl, lbad;

static void *record(void *arg)
{
	if (ppl_current_vp() != 1)
		atomic_store(&lbad, 1);
	atomic_store(&lorder[atomic_fetch_add(&nl, 1)], (int)(long)arg);
	return NULL;
}

static void *busy(void *arg)
{
	(void)arg;
	ppl_pin(pthread_self(), 1);
	atomic_store(&parked, 1);
	/* No yield (and no preemption, PPL_TIMESLICE_US=0): VP 1 makes no
	 * choice, so it steals none of them before they are pinned. */
	while (!atomic_load(&go)) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
	}
	return NULL;
}

static int local(const char *mode)
{
	if (ppl_sched_use(mode) != 0)
		return 1;
	pthread_t b, t[NL];
	pthread_create(&b, NULL, busy, NULL);
	while (!atomic_load(&parked))
		sched_yield();
	stage("local: the busy thread holds VP 1\n");
	/* Main holds VP 0 and does not yield: they wait on its queue until
	 * pinned, then on VP 1's, behind the busy thread. */
	for (int i = 0; i < NL; i++) {
		pthread_create(&t[i], NULL, record, (void *)(long)i);
		if (ppl_pin(t[i], 1) != 0) {
			fprintf(stderr, "sched_global: ppl_pin %d\n", i);
			return 1;
		}
	}
	stage("local: threads pinned to VP 1\n");
	atomic_store(&go, 1);
	pthread_join(b, NULL);
	stage("local: the busy thread joined\n");
	for (int i = 0; i < NL; i++)
		pthread_join(t[i], NULL);
	stage("local: all joined\n");
	bool lifo = strcmp(mode, "lifo") == 0;
	int bad = atomic_load(&lbad);
	for (int i = 0; i < NL; i++)
		bad |= atomic_load(&lorder[i]) != (lifo ? NL - 1 - i : i);
	if (bad) {
		fprintf(stderr, "sched_global: %s on VP 1:", mode);
		for (int i = 0; i < NL; i++)
			fprintf(stderr, " %d", atomic_load(&lorder[i]));
		fprintf(stderr, "%s\n", atomic_load(&lbad) ? " (one ran elsewhere)" : "");
		return 1;
	}
	printf("%s: %d threads in %s order on VP 1\n", mode, NL, lifo ? "reverse" : "pin");
	return 0;
}

/* A FIFO for VP 1, through the TCB links ppl_sched_links gives. */
static pthread_t q_head, q_tail;
static _Atomic int nputs, other_vp, arrived;

static void c_put(int vp, pthread_t t)
{
	if (vp != 1)
		atomic_store(&other_vp, 1);
	atomic_fetch_add(&nputs, 1);
	*ppl_sched_links(t) = 0;
	if (q_tail)
		*ppl_sched_links(q_tail) = t;
	else
		q_head = t;
	q_tail = t;
}

static pthread_t c_next(int vp)
{
	if (vp != 1)
		atomic_store(&other_vp, 1);
	pthread_t t = q_head;
	if (t && (q_head = *ppl_sched_links(t)) == 0)
		q_tail = 0;
	return t;
}

static void *on_vp(void *arg)
{
	int vp = (int)(long)arg;
	ppl_pin(pthread_self(), vp);
	atomic_fetch_add(&arrived, 1);
	while (atomic_load(&arrived) < 4)   /* the two on VP 1 take turns */
		sched_yield();
	int bad = 0;
	for (int i = 0; i < 100; i++) {
		sched_yield();
		bad += ppl_current_vp() != vp;
	}
	return (void *)(long)bad;
}

static int custom(void)
{
	static const struct ppl_sched_ops ops = { .name = "queue", .put = c_put, .next = c_next };
	ppl_vpset_t one;
	ppl_vpset_zero(&one);
	ppl_vpset_add(&one, 1);
	if (expect(ppl_sched_install_vps(&ops, &one), 0, "install_vps") ||
	    expect(ppl_sched_install_vps(&ops, &one), EBUSY, "install_vps twice") ||
	    expect(ppl_sched_install_vps(&ops, NULL), EINVAL, "install_vps NULL"))
		return 1;
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, on_vp, (void *)(long)(i % 2));
	int bad = 0;
	for (int i = 0; i < 4; i++) {
		void *r;
		pthread_join(t[i], &r);
		bad += (int)(long)r;
	}
	printf("custom: %d puts on VP 1, %d runs elsewhere\n", atomic_load(&nputs), bad);
	if (strcmp(ppl_sched_name_vp(1), "queue") || strcmp(ppl_sched_name_vp(0), "fifo"))
		bad++;
	return bad || atomic_load(&other_vp) || atomic_load(&nputs) < 100 ? 1 : 0;
}

int main(int argc, char **argv)
{
	alarm(30);
	const char *mode = argc > 1 ? argv[1] : "prio";
	int r;
	if (strcmp(mode, "groups") == 0) {
		r = groups();
	} else if (strcmp(mode, "custom") == 0) {
		r = custom();
	} else if (strcmp(mode, "fifo") == 0 || strcmp(mode, "lifo") == 0) {
		r = local(mode);
	} else {
		if (ppl_sched_use(mode) != 0) {
			fprintf(stderr, "sched_global: ppl_sched_use %s\n", mode);
			return 1;
		}
		order = strcmp(mode, "prio") == 0 ? 1 : -1;
		set_group(0, 2);
		r = run(mode);
	}
	if (r == 0)
		printf("ok\n");
	return r;
}
