/* The PTHREAD_PRIO_INHERIT and PTHREAD_PRIO_PROTECT protocols of private
 * mutexes, at user level (docs/sync.md): a thread runs at the highest of
 * its own priority, the ceilings of the PP mutexes it holds and the
 * priorities of the threads waiting for the PI mutexes it holds, these
 * being boosted in turn (chains).
 *
 * Invariants
 *  - prio_lock guards every thread's prio_held/prio_nheld/prio_wait, the
 *    list of holders, and the boosted part of struct ult's prio.  It is
 *    taken with no mutex spin lock held (a cond's may be: cond wait
 *    unlocks its mutex under it); under it a mutex's spin lock may be
 *    taken (mutex_top_waiter), nothing else: moving a thread whose
 *    priority changed on its run or wait queue (which takes those queues'
 *    locks, a cond's among them) happens after it is dropped (apply).
 *  - A holder's priority is recomputed from what it holds whenever that
 *    changes (lock, unlock, a waiter that gives up); a waiter raises the
 *    owner chain before it parks, and is then on the mutex's queue, which
 *    the owner's next recomputation reads.
 *  - A thread holds at most PPL_PRIO_HELD such mutexes with effect; more
 *    lock and unlock as usual without changing priorities. */
#include <errno.h>
#include <unistd.h>

#include "mutex_prio.h"
#include "preempt.h"
#include "schedparam.h"
#include "scheduler.h"
#include "ult.h"
#include "vproc.h"

#define CHAIN_MAX 16   /* a longer chain (or a cycle: a deadlock) stops there */

static spin_t prio_lock PPL_FORK_STATE;
/* Read by fork's child handler: in the section fork writes (spinlock.h), so
 * that the read finds its page there rather than faulting in an untouched one. */
static struct ult *holders PPL_FORK_STATE;   /* threads with prio_nheld > 0, via prio_next */

static inline int base_prio(const struct ult *t)
{
	return sched_prio_of(t->sched_policy, &t->sched_param);
}

static struct ult *owner_of(const pthread_mutex_t *m)
{
	for (struct ult *t = holders; t; t = t->prio_next)
		for (int i = 0; i < t->prio_nheld; i++)
			if (t->prio_held[i] == m)
				return t;
	return NULL;
}

/* The priority t is owed (prio_lock held). */
static int owed(const struct ult *t)
{
	int p = base_prio(t);
	for (int i = 0; i < t->prio_nheld; i++) {
		int c = t->prio_ceil[i];
		if (c < 0)
			c = mutex_top_waiter((pthread_mutex_t *)t->prio_held[i]);
		if (c > p)
			p = c;
	}
	return p;
}

struct changed {
	struct ult *t[CHAIN_MAX + 1];
	int n;
};

static void set_prio(struct ult *t, int p, struct changed *c)
{
	if (t->prio == p)
		return;
	t->prio = p;
	ult_update_kclass(t);
	if (c->n < CHAIN_MAX + 1)
		c->t[c->n++] = t;
}

/* prio_lock dropped: queue the threads whose priority changed again where
 * they wait, and tell the VP that runs one (sched_push's hint). */
static void apply(struct changed *c)
{
	struct ult *self = ult_self();
	for (int i = 0; i < c->n; i++) {
		struct ult *t = c->t[i];
		if (t == self) {
			sched_prio_changed();
			continue;
		}
		struct vproc *v = t->vp;
		if (atomic_load_explicit(&t->state, memory_order_acquire) == ULT_RUNNING && v &&
		    v->current == t) {
			atomic_store_explicit(&v->cur_prio, t->prio, memory_order_relaxed);
			/* The kernel must rank its VP as high. */
			sched_class_raise(v, t);
		} else
			sched_requeue(t);
	}
}

/* The caller's priority changed: its kernel thread's class follows, on
 * its VP (sched_class_sync) or, with a kernel thread of its own (the
 * initial thread before the first pthread_create, a foreign thread),
 * directly.  Without privilege the kernel refuses, and only the user-level
 * priority changes. */
static void kernel_class(struct ult *self, struct vproc *v)
{
	if (v != NULL && v->current == self) {
		sched_class_sync(self, v);
		return;
	}
	struct sched_param p = { .sched_priority = VP_CLASS_PRIO(self->kclass) };
	int saved = errno;
	if (vp_task_setscheduler(0, VP_CLASS_POLICY(self->kclass), &p) != 0)
		errno = saved;
}

void prio_block(pthread_mutex_t *m)
{
	struct ult *self = ult_self();
	struct changed c = { .n = 0 };
	spin_lock(&prio_lock);
	self->prio_wait = m;
	int p = self->prio;
	struct ult *o = owner_of(m);
	for (int hops = 0; o != NULL && o != self && hops < CHAIN_MAX; hops++) {
		if (o->prio >= p)
			break;
		set_prio(o, p, &c);
		o = o->prio_wait ? owner_of(o->prio_wait) : NULL;
	}
	spin_unlock(&prio_lock);
	apply(&c);
}

void prio_unblock(pthread_mutex_t *m)
{
	struct ult *self = ult_self();
	struct changed c = { .n = 0 };
	spin_lock(&prio_lock);
	self->prio_wait = NULL;
	/* Gave up (time-out): the owner may have run for us only. */
	struct ult *o = owner_of(m);
	if (o != NULL && o != self)
		set_prio(o, owed(o), &c);
	spin_unlock(&prio_lock);
	apply(&c);
}

void prio_locked(pthread_mutex_t *m, int ceiling)
{
	struct ult *self = ult_self();
	struct changed c = { .n = 0 };
	spin_lock(&prio_lock);
	if (self->prio_nheld < PPL_PRIO_HELD) {
		if (self->prio_nheld == 0) {
			self->prio_next = holders;
			holders = self;
		}
		self->prio_held[self->prio_nheld] = m;
		self->prio_ceil[self->prio_nheld++] = ceiling;
		set_prio(self, owed(self), &c);
	}
	spin_unlock(&prio_lock);
	if (c.n) {
		struct vproc *v = (struct vproc *)vp_current();
		if (v && v->current == self)
			atomic_store_explicit(&v->cur_prio, self->prio, memory_order_relaxed);
		kernel_class(self, v);
	}
}

void prio_unlocked(pthread_mutex_t *m)
{
	struct ult *self = ult_self();
	struct changed c = { .n = 0 };
	spin_lock(&prio_lock);
	int n = self->prio_nheld;
	for (int i = 0; i < n; i++) {
		if (self->prio_held[i] != m)
			continue;
		self->prio_held[i] = self->prio_held[n - 1];
		self->prio_ceil[i] = self->prio_ceil[n - 1];
		if (--self->prio_nheld == 0) {
			struct ult **pp = &holders;
			while (*pp != self)
				pp = &(*pp)->prio_next;
			*pp = self->prio_next;
		}
		set_prio(self, owed(self), &c);
		break;
	}
	spin_unlock(&prio_lock);
	if (c.n == 0)
		return;
	/* Lowered: give way to a ready thread that now outranks us, now if
	 * no lock is held (a cond wait unlocks under its cond's lock), else
	 * at the next safe point. */
	struct vproc *v = (struct vproc *)vp_current();
	if (v == NULL || v->current != self) {
		kernel_class(self, v);
		return;
	}
	if (!vp_in_crit(&v->vp)) {
		sched_prio_changed();
		return;
	}
	atomic_store_explicit(&v->cur_prio, self->prio, memory_order_relaxed);
	sched_class_sync(self, v);
	if (sched_top_ready(v) > self->prio)
		preempt_for_priority(v, self);
}

void prio_thread_exit(struct ult *t)
{
	spin_lock(&prio_lock);
	struct ult **pp = &holders;
	while (*pp != NULL && *pp != t)
		pp = &(*pp)->prio_next;
	if (*pp == t)
		*pp = t->prio_next;
	t->prio_nheld = 0;
	spin_unlock(&prio_lock);
}

/* The child's thread owns none of the PI/PP mutexes its parent's thread
 * held: their owner is that thread (a shared one's owner token is the
 * parent's, as a private one's copy is), and the child may have unmapped a
 * shared one (glibc's tst-robust-fork does, then locks another PI mutex:
 * owed() read the unmapped one). */
void prio_fork_child(void)
{
	struct ult *self = ult_self();
	spin_reset(&prio_lock);
	PPL_RESET(holders, NULL);
	self->prio_nheld = 0;
	self->prio_wait = NULL;
	self->prio = base_prio(self);
	ult_update_kclass(self);
}

void prio_base_changed(struct ult *t)
{
	if (t->prio_nheld == 0)
		return;
	spin_lock(&prio_lock);
	t->prio = owed(t);
	ult_update_kclass(t);
	spin_unlock(&prio_lock);
}

/* glibc's __pthread_current_priority: the thread's own sched_priority,
 * boosts left out. */
int prio_current(void)
{
	return ult_self()->sched_param.sched_priority;
}

int prio_param_view(struct ult *t)
{
	int p = t->sched_param.sched_priority;
	if (t->prio_nheld == 0)
		return p;
	spin_lock(&prio_lock);
	for (int i = 0; i < t->prio_nheld; i++)
		if (t->prio_ceil[i] > p)
			p = t->prio_ceil[i];
	spin_unlock(&prio_lock);
	return p;
}
