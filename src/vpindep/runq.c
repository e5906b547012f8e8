/* The run queues (runq.h): taking a thread, removing one, stealing. */
#include "runq.h"
#include "runtime.h"
#include "schedhooks.h"
#include "scheduler.h"
#include "ult.h"
#include "vproc.h"

void rt_changed(struct vproc *v, int d)
{
	atomic_store_explicit(&v->rq_top, v->rt_head ? v->rt_head->prio : 0, memory_order_relaxed);
	atomic_fetch_add_explicit(&ppl_rt.rt_ready, d, memory_order_relaxed);
}

/* The link to the first thread of the list at *pp that may run on `self`
 * (a thread with a home VP stays there, or in its pin set; self NULL:
 * any), or NULL. */
static struct ult **list_find(struct ult **pp, struct vproc *self)
{
	for (; *pp; pp = &(*pp)->next)
		if (self == NULL || ult_may_run(*pp, self))
			return pp;
	return NULL;
}

static struct ult *list_unlink(struct ult **pp)
{
	struct ult *t = *pp;
	*pp = t->next;
	t->next = NULL;
	return t;
}

/* Take the best thread of v's queue that may run on self (NULL: the head)
 * and has at least priority `min`.  Caller holds v->rq_lock. */
struct ult *rq_take_for(struct vproc *v, struct vproc *self, int min)
{
	struct ult **pp = v->rt_head ? list_find(&v->rt_head, self) : NULL;
	if (pp) {
		if ((*pp)->prio < min)
			return NULL;
		struct ult *t = list_unlink(pp);
		rt_changed(v, -1);
		rq_len_add(v, -1);
		return t;
	}
	if (min > 0)
		return NULL;
	if ((pp = list_find(&v->rq_head, self)) == NULL) {
		struct ult *t = ppl_hook_on(PPL_HOOK_SCHED) ? plug_take(v, self) : NULL;
		if (t)
			rq_len_add(v, -1);
		return t;
	}
	struct ult *prev = pp == &v->rq_head ? NULL :
			   (struct ult *)((char *)pp - offsetof(struct ult, next));
	struct ult *t = list_unlink(pp);
	if (v->rq_tail == t)
		v->rq_tail = prev;
	rq_len_add(v, -1);
	return t;
}

/* Take t off v's queue if it is there (caller holds v->rq_lock). */
bool rq_remove(struct vproc *v, struct ult *t)
{
	if (ppl_hook_on(PPL_HOOK_SCHED) && t->plug_queued) {
		bool found = plug_remove(v, t);
		if (found)
			rq_len_add(v, -1);
		return found;
	}
	for (struct ult **pp = &v->rt_head; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			list_unlink(pp);
			rt_changed(v, -1);
			rq_len_add(v, -1);
			return true;
		}
	struct ult *prev = NULL;
	for (struct ult **pp = &v->rq_head; *pp; prev = *pp, pp = &(*pp)->next)
		if (*pp == t) {
			list_unlink(pp);
			if (v->rq_tail == t)
				v->rq_tail = prev;
			rq_len_add(v, -1);
			return true;
		}
	return false;
}

/* The VP whose queue holds the highest priority ready thread, if that
 * beats v's own best and is at least min (NULL: none). */
static struct vproc *best_rt_queue(struct vproc *v, int min)
{
	struct vproc *best = NULL;
	int top = atomic_load_explicit(&v->rq_top, memory_order_relaxed);
	if (top < min)
		top = min - 1;
	for (int i = 0; i < ppl_rt.nvps_total; i++) {
		struct vproc *o = ppl_rt.vps[i];
		if (o == NULL || o == v || o->dedicated)
			continue;
		int p = atomic_load_explicit(&o->rq_top, memory_order_relaxed);
		if (p > top) {
			top = p;
			best = o;
		}
	}
	return best;
}

int sched_top_ready(struct vproc *v)
{
	int top = atomic_load_explicit(&v->rq_top, memory_order_relaxed);
	if (ppl_unlikely(atomic_load_explicit(&ppl_rt.rt_ready, memory_order_relaxed) != 0)) {
		struct vproc *o = best_rt_queue(v, 0);
		if (o)
			top = atomic_load_explicit(&o->rq_top, memory_order_relaxed);
	}
	if (top == 0 && atomic_load_explicit(&v->rq_len, memory_order_relaxed) == 0)
		return -1;
	return top;
}

static struct ult *steal_from(struct vproc *self, struct vproc *v, int min)
{
	if (!spin_try_lock(&v->rq_lock))
		return NULL;
	struct ult *t = rq_take_for(v, self, min);
	spin_unlock(&v->rq_lock);
	if (t) {
		self->stats.steals++;
		ppl_trace(TR_STEAL, t->id, v->vp.id);
		/* Work left behind: let another idle VP come for it. */
		if (atomic_load_explicit(&v->rq_len, memory_order_relaxed) > 0)
			wake_idle_vp();
	}
	return t;
}

struct ult *steal_lender(struct vproc *self, struct vproc *lender)
{
	return steal_from(self, lender, 0);
}

struct ult *steal(struct vproc *self)
{
	int n = ppl_rt.nvps_total;
	/* From the next VP round, without a division per VP (an idle VP's
	 * every look, and every exit that finds its own queue empty). */
	int i = self->vp.id;
	for (int k = 0; k < n; k++) {
		if (++i >= n)
			i = 0;
		struct vproc *v = ppl_rt.vps[i];
		if (v == NULL || v == self ||
		    atomic_load_explicit(&v->rq_len, memory_order_relaxed) == 0)
			continue;
		/* Groups of VPs with schedulers of their own steal among
		 * themselves only. */
		if (ppl_hook_on(PPL_HOOK_SCHED) && !plug_same_group(self, v))
			continue;
		struct ult *t = steal_from(self, v, 0);
		if (t)
			return t;
	}
	return NULL;
}

/* A real-time thread queued on another VP that beats this VP's own best
 * (and is at least min): take it. */
struct ult *take_better_rt_slow(struct vproc *v, int min)
{
	if (v->dedicated || v->retired)
		return NULL;
	struct vproc *o = best_rt_queue(v, min);
	return o ? steal_from(v, o, min) : NULL;
}

/* Its part of the forked child's VP: empty queues. */
void runq_fork_child(struct vproc *v, struct ult *self)
{
	spin_init(&v->rq_lock);
	v->rq_head = v->rq_tail = v->rt_head = NULL;
	v->plug_head = v->plug_tail = NULL;   /* the installed scheduler's (schedplug.c) */
	v->plug_len = 0;
	v->plug_null_since = 0;
	atomic_store_explicit(&v->plug_debt, 0, memory_order_relaxed);
	plug_fork_child();
	atomic_store_explicit(&v->rq_len, 0, memory_order_relaxed);
	atomic_store_explicit(&v->rq_top, 0, memory_order_relaxed);
	atomic_store_explicit(&ppl_rt.rt_ready, 0, memory_order_relaxed);
}
