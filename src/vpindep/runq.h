/* The run queues: each VP's queue of ready threads, taking from it and
 * stealing from the others, and where a thread made ready goes.  The rest
 * of the scheduler (switch.c, park.c, idle.c) uses the queues only through
 * this interface; the hot parts are inline here, the rest is in runq.c and
 * sched.c. */
#ifndef PPL_RUNQ_H
#define PPL_RUNQ_H

#include "monitor.h"
#include "runtime.h"
#include "schedhooks.h"
#include "ult.h"
#include "vproc.h"

/* t may run on v: it has no home, or v is its home or a VP of its pin set
 * (ppl_pin_set; migrate.c) and t is not on its way to a VP of the set.
 * The set is looked at only off the usual path. */
static inline bool ult_may_run(const struct ult *t, const struct vproc *v)
{
	if (ppl_unlikely(t->off_initial) && v == ppl_rt.vps[0])
		return false;
	if (ppl_likely(t->home == NULL || t->home == v))
		return true;
	unsigned id = (unsigned)v->vp.id;
	return t->pin != NULL && t->pin_set && !t->migrating && id < 1024 &&
	       (t->pin_vps[id / (8 * sizeof(unsigned long))] >> (id % (8 * sizeof(unsigned long))) & 1);
}

/* ---- run queues -----------------------------------------------------------
 * Two lists per VP under rq_lock: priority 0 (SCHED_OTHER, BATCH, IDLE) in
 * FIFO order, the usual case, and priorities > 0 (SCHED_FIFO, SCHED_RR)
 * kept highest first, FIFO within a priority.  The second list goes first.
 * ppl_rt.rt_ready counts the threads on second lists anywhere, so that the
 * common case (none) pays one load to know it need not look across VPs. */

/* rq_len is written only under rq_lock (so no read-modify-write is needed)
 * and read without it as a hint. */
static inline void rq_len_add(struct vproc *v, long d)
{
	long n = atomic_load_explicit(&v->rq_len, memory_order_relaxed);
	atomic_store_explicit(&v->rq_len, n + d, memory_order_relaxed);
}

/* The first list's top changed by d threads (caller holds v->rq_lock). */
void rt_changed(struct vproc *v, int d);

/* Queue t on v (caller holds v->rq_lock): at the back of its priority, or
 * at the front (a thread preempted by a higher priority, as POSIX has it
 * for SCHED_FIFO). */
static inline void rq_insert(struct vproc *v, struct ult *t, bool front)
{
	t->queued_on = v;
	t->next = NULL;
	rq_len_add(v, 1);
	if (ppl_hook_on(PPL_HOOK_SCHED) && plug_put(v, t))
		return;
	if (ppl_likely(t->prio == 0)) {
		if (front) {
			t->next = v->rq_head;
			v->rq_head = t;
			if (v->rq_tail == NULL)
				v->rq_tail = t;
		} else {
			if (v->rq_tail)
				v->rq_tail->next = t;
			else
				v->rq_head = t;
			v->rq_tail = t;
		}
		return;
	}
	struct ult **pp = &v->rt_head;
	while (*pp && ((*pp)->prio > t->prio || ((*pp)->prio == t->prio && !front)))
		pp = &(*pp)->next;
	t->next = *pp;
	*pp = t;
	rt_changed(v, 1);
}

static inline void rq_push(struct vproc *v, struct ult *t)
{
	spin_lock(&v->rq_lock);
	rq_insert(v, t, false);
	spin_unlock(&v->rq_lock);
}

/* Take the best thread of v's queue that may run on self (NULL: the head)
 * and has at least priority `min`.  Caller holds v->rq_lock. */
struct ult *rq_take_for(struct vproc *v, struct vproc *self, int min);
/* Take t off v's queue if it is there (caller holds v->rq_lock). */
bool rq_remove(struct vproc *v, struct ult *t);

/* The head of v's queue (caller holds v->rq_lock); the usual case, no
 * real-time thread queued, without rq_take_for's search. */
static inline struct ult *rq_take(struct vproc *v)
{
	if (ppl_hook_on(PPL_HOOK_SEED | PPL_HOOK_SCHED)) {
		if (ppl_hooks & PPL_HOOK_SCHED)   /* the installed scheduler's turn */
			return rq_take_for(v, NULL, 0);
		detsched_pick(v);
	}
	struct ult *t = v->rq_head;
	if (ppl_unlikely(v->rt_head != NULL) || t == NULL)
		return rq_take_for(v, NULL, 0);
	v->rq_head = t->next;
	if (v->rq_head == NULL)
		v->rq_tail = NULL;
	t->next = NULL;
	rq_len_add(v, -1);
	return t;
}

static inline struct ult *rq_pop(struct vproc *v)
{
	if (atomic_load_explicit(&v->rq_len, memory_order_relaxed) == 0)
		return NULL;
	spin_lock(&v->rq_lock);
	struct ult *t = rq_take(v);
	spin_unlock(&v->rq_lock);
	return t;
}

/* A thread from another VP's queue for self, or NULL. */
struct ult *steal(struct vproc *self);
/* One from the queue of the VP a spare stands in for, or NULL. */
struct ult *steal_lender(struct vproc *self, struct vproc *lender);
/* A real-time thread queued on another VP that beats v's own best (and is
 * at least min), taken; NULL if none. */
struct ult *take_better_rt_slow(struct vproc *v, int min);

static inline struct ult *take_better_rt(struct vproc *v, int min)
{
	if (ppl_likely(atomic_load_explicit(&ppl_rt.rt_ready, memory_order_relaxed) == 0))
		return NULL;
	return take_better_rt_slow(v, min);
}

static inline struct ult *find_work(struct vproc *v)
{
	/* Back from a blocking call the monitor noticed: take the VP back. */
	if (ppl_unlikely(atomic_load_explicit(&v->lent_to, memory_order_relaxed) != NULL))
		monitor_reclaim(v);
	/* A VP of SCOPE_SYSTEM threads has only its own thread on its queue
	 * (push_target never picks it) and steals nothing.  Not bound_to,
	 * which is NULL between two of its threads, while ppl_bind_new_vp may
	 * be clearing `retired`: reading both, it would steal. */
	if (ppl_unlikely(v->dedicated))
		return rq_pop(v);
	if (ppl_unlikely(v->retired))
		return NULL;
	struct ult *t = take_better_rt(v, 0);
	if (t == NULL)
		t = rq_pop(v);
	return t ? t : steal(v);
}

/* struct vp_runq's reset in the forked child (vproc_parts). */
void runq_fork_child(struct vproc *v, struct ult *self);

/* ---- making threads ready (sched.c) ---- */
/* Wake a sleeping VP for work just queued, unless a VP spins. */
void wake_idle_vp(void);
/* t was just queued: wake its home VP if it has one, else any idle VP. */
void wake_for(struct ult *t);
/* The VP whose queue a thread made ready goes on (no real-time victim). */
struct vproc *push_target(struct ult *t);
/* Shared TLS: where a thread that must leave VP 0 goes (switch.c). */
struct vproc *off_initial_target(const struct ult *t);

#endif
