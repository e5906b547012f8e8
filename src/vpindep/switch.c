/* Switching: yielding, requeueing on a priority change, and a thread's
 * exit.  The switch itself is in switch.h. */
#include "base.h"
#include "monitor.h"
#include "preempt.h"
#include "runq.h"
#include "runtime.h"
#include "schedparam.h"
#include "scheduler.h"
#include "sig.h"
#include "switch.h"
#include "thread.h"
#include "timer.h"
#include "ult.h"
#include "vproc.h"

/* The ldt switch method: an LDT entry costs a modify_ldt of 15-75 us (the
 * kernel rebuilds and reinstalls the whole LDT), a switch without one an
 * arch_prctl of about 0.2 us.  So a block gets its entry when it is switched
 * to for the PPL_TLS_LDT_AFTER-th time (64: rent until the rent paid would
 * have bought it), counted by the threads on it as they start (ult_entry)
 * or resume (switch_to): threads that are made and then block for good
 * never pay for one, a pooled block that many short threads use in turn
 * does, and the 8,192 entries go to blocks that switch.  Runs on self,
 * with no lock held; errno is self's own. */
void ult_tls_entered(struct ult *self)
{
	if (--self->tls_countdown != 0)
		return;
	int e = errno;
	self->tls_sel = ctx_tls_selector(self->ctx.tls);
	self->ctx.tls_sel = self->tls_sel;
	errno = e;
}

bool handler_marks_drop(struct vproc *v, struct ult *self, struct handler_marks *m)
{
	if (!preempt_in_handler(self))
		return false;   /* left by siglongjmp: sig_unsafe is cleared */
	m->cp = cancel_mark_drop(v, self, &m->cancel);
	m->sys = sys_mark_drop(v);
	return m->cp || m->sys;
}

void handler_marks_restore(struct ult *self, const struct handler_marks *m)
{
	int e = errno;
	sys_place();   /* the call goes back to the kernel here: not on VP 0 */
	if (m->cp)
		cancel_mark_restore(this_vp(), self, &m->cancel);
	if (m->sys)
		sys_enter();
	errno = e;
}

/* The yielding thread is queued again: an idle VP may take it, or it would
 * wait behind a thread that never yields back (no preemption). */
static void requeue(struct ult *t, bool front)
{
	atomic_store_explicit(&t->state, ULT_READY, memory_order_relaxed);
	struct vproc *v = t->home ? t->home : push_target(t);
	spin_lock(&v->rq_lock);
	rq_insert(v, t, front);
	spin_unlock(&v->rq_lock);
	wake_for(t);
	monitor_note_ready();   /* v may be another VP, stuck in the kernel */
}

static void requeue_cb(void *t)
{
	requeue(t, false);
}

static void requeue_front_cb(void *t)
{
	requeue(t, true);
}

/* The yielding thread was queued on its own VP, which runs on: another VP
 * is woken only to run it in parallel, and on one VP there is none (its
 * seq_cst fence was a tenth of a hand-off). */
static void unlock_cb(void *lock)
{
	spin_unlock(lock);
	if (ppl_rt.nvps_total > 1)
		wake_idle_vp();
}

/* yield_min with a scheduler installed (v->rq_lock held): the caller is
 * put back first, so that the scheduler may pick it again (a time stamp
 * still the lowest). */
static __attribute__((noinline)) bool plug_yield(struct vproc *v, struct ult *self, bool front)
{
	if (plug_ordered(v)) {
		/* One order for the group: the best of it, unless self is
		 * better; self is queued once switched out (the group's other
		 * VPs see its list without v's lock).  v's own lists first. */
		struct ult *next;
		if (v->rq_head != NULL || v->rt_head != NULL) {
			next = rq_take_for(v, NULL, 0);
		} else if ((next = plug_take_before(v, self)) != NULL) {
			rq_len_add(v, -1);
		}
		spin_unlock(&v->rq_lock);
		if (next == NULL)
			return false;
		switch_to(v, self, next, front ? requeue_front_cb : requeue_cb, self);
		sig_resumed(self);
		return true;
	}
	atomic_store_explicit(&self->state, ULT_READY, memory_order_relaxed);
	rq_insert(v, self, front);
	struct ult *next = rq_take(v);
	if (next == self || next == NULL) {
		if (next == NULL)   /* it cannot be: self was just put there */
			ppl_fatal("scheduler '%s': next(%d) lost the thread that yielded",
				  ppl_sched_name_hidden(), v->vp.id);
		atomic_store_explicit(&self->state, ULT_RUNNING, memory_order_relaxed);
		spin_unlock(&v->rq_lock);
		return false;
	}
	switch_to(v, self, next, unlock_cb, &v->rq_lock);
	sig_resumed(self);
	return true;
}

/* Up the chain of lenders (VP 0 -> spare A -> spare B when A's thread
 * blocked too): B stands in for both, and two threads yielding to each
 * other on B starved VP 0's queue (tp_sigmove on one VP: main waited
 * there for good). */
static __attribute__((noinline)) bool yield_lender(struct vproc *v, struct ult *self)
{
	struct vproc *lender = atomic_load_explicit(&v->lender, memory_order_relaxed);
	for (int hops = 0; lender != NULL && hops < PPL_MAX_VPS; hops++) {
		struct ult *next;
		if (atomic_load_explicit(&lender->rq_len, memory_order_relaxed) != 0 &&
		    (next = steal_lender(v, lender)) != NULL) {
			switch_to(v, self, next, requeue_cb, self);
			sig_resumed(self);
			return true;
		}
		lender = atomic_load_explicit(&lender->lender, memory_order_acquire);
	}
	return false;
}

/* v: the caller's VP, not NULL. */
static inline __attribute__((always_inline)) bool yield_min(struct vproc *v, int min, bool front)
{
	if (atomic_load_explicit(&v->next_deadline, memory_order_relaxed) != INT64_MAX)
		timer_run_expired(v);
	struct ult *self = v->current;
	if (ppl_unlikely(self->home != NULL && self->home != v) && !sched_home_here(self, v)) {
		/* Its home moved (pthread_setaffinity_np, ppl_pin): go there
		 * now.  Not if v is in its pin set: v is its home now. */
		switch_away(v, self, requeue_cb, self);
		sig_resumed(self);
		return true;
	}
	struct ult *next = take_better_rt(v, min);
	/* A spare standing in for a VP stuck in the kernel serves that VP's
	 * queue too: it stole only when its own was empty, so two threads
	 * yielding to each other on it starved the lender's (tb_echo on one
	 * VP with PPL_WORK_FIRST=1 hung: the thread to create the clients
	 * waited there for good).  Its yielder goes to its own queue. */
	if (ppl_unlikely(v->spare) && next == NULL && min == 0 && yield_lender(v, self))
		return true;
	if (next == NULL && atomic_load_explicit(&v->rq_len, memory_order_relaxed) != 0) {
		/* The common case, one lock round trip: swap self for the head
		 * of this VP's queue.  Self is queued under the lock but
		 * invisible to thieves until unlock_cb releases it, after the
		 * switch. */
		spin_lock(&v->rq_lock);
		if (ppl_hook_on(PPL_HOOK_SCHED) && min == 0)
			return plug_yield(v, self, front);
		next = min == 0 ? rq_take(v) : rq_take_for(v, NULL, min);
		if (next == NULL) {
			spin_unlock(&v->rq_lock);
			return false;
		}
		atomic_store_explicit(&self->state, ULT_READY, memory_order_relaxed);
		rq_insert(v, self, front);
		switch_to(v, self, next, unlock_cb, &v->rq_lock);
		sig_resumed(self);
		return true;
	}
	/* Nothing here: take a thread from another VP, if any. */
	if (next == NULL && (min > 0 || v->dedicated || ppl_rt.nvps_total == 1))
		return false;
	/* A group of one order: the best of the group, not any. */
	if (next == NULL && ppl_hook_on(PPL_HOOK_SCHED) && plug_ordered(v)) {
		spin_lock(&v->rq_lock);
		return plug_yield(v, self, front);
	}
	if (next == NULL && (next = find_work(v)) == NULL)
		return false;
	switch_to(v, self, next, front ? requeue_front_cb : requeue_cb, self);
	sig_resumed(self);
	return true;
}

bool sched_yield_min(int min, bool front)
{
	struct vproc *v = this_vp();
	if (v == NULL) {
		vp_kthread_yield();
		return true;
	}
	return yield_min(v, min, front);
}

struct vproc *off_initial_target(const struct ult *t)
{
	for (int k = 1; k < ppl_rt.nvps; k++) {
		struct vproc *v = ppl_rt.vps[1 + (int)((t->id + (unsigned)k) % (unsigned)(ppl_rt.nvps - 1))];
		if (v != NULL && !v->dedicated && !v->retired)
			return v;
	}
	return ppl_rt.vps[0];   /* none: VP 0 runs it after all (rq_take) */
}

void sched_leave_initial(void)
{
	struct vproc *v = this_vp();
	struct ult *self = v->current;
	self->off_initial = true;
	switch_away(v, self, requeue_cb, self);   /* push_target: another VP */
	sig_resumed(self);
	self->off_initial = false;
}

void sched_yield_ult(void)
{
	struct vproc *v = this_vp();
	if (v == NULL)
		vp_kthread_yield();
	else
		yield_min(v, v->current->prio, false);
}

void sched_yield_user(void)
{
	struct vproc *v = this_vp();
	if (v == NULL || !yield_min(v, v->current->prio, false))
		vp_kthread_yield();   /* as on NPTL: other processes may run */
}

void sched_prio_changed(void)
{
	struct vproc *v = this_vp();
	if (v == NULL || v->current == NULL)
		return;
	atomic_store_explicit(&v->cur_prio, v->current->prio, memory_order_relaxed);
	sched_class_sync(v->current, v);
	if (sched_top_ready(v) > v->current->prio)
		sched_yield_min(v->current->prio + 1, false);
}

/* ---- thread exit ------------------------------------------------------------------ */

static void exit_cb(void *arg)
{
	ult_exited(arg);
}

_Noreturn void sched_exit(struct ult *self)
{
	struct vproc *v = this_vp();
	ppl_assert(v != NULL);
	atomic_store_explicit(&self->state, ULT_EXITING, memory_order_relaxed);
	ppl_trace(TR_EXIT, self->id, 0);
	if (ppl_hook_on(PPL_HOOK_SCHED))
		plug_exited(self);
	struct ult *next = find_work(v);
	/* Nothing else to run here: its joiner, which exit_cb would queue
	 * here for the idle loop to run, runs next at once (one switch
	 * instead of two and a pass through the idle loop).  exit_cb makes
	 * self a zombie before the joiner resumes. */
	if (next == NULL && !v->dedicated && !v->retired && !ppl_hook_on(PPL_HOOK_SCHED) &&
	    (next = ult_exit_joiner(self)) != NULL) {
		v->stats.wakes++;
		ppl_trace(TR_WAKE, next->id, 0);
	}
	switch_to(v, self, next, exit_cb, self);
	ppl_fatal("an exited thread was resumed");
}

/* ---- work-first creation ---------------------------------------------------------- */

bool ppl_env_work_first PPL_HIDDEN;

bool sched_run_new(struct ult *t)
{
	struct vproc *v = this_vp();
	if (v == NULL || v->dedicated || v->retired ||
	    ppl_hook_on(PPL_HOOK_SCHED | PPL_HOOK_SEED))
		return false;
	struct ult *self = v->current;
	/* A thread tied to a VP, or of another priority, keeps the order the
	 * queues give (a lower priority new thread must not run first). */
	if (self == NULL || self->home != NULL || t->home != NULL || t->prio != self->prio)
		return false;
	v->stats.creates++;
	ppl_trace(TR_CREATE, t->id, 0);
	/* Self is queued at the head once it is off its stack (requeue): an
	 * idle VP may steal it meanwhile, and wake_for wakes one if one
	 * sleeps and none spins. */
	switch_to(v, self, t, requeue_front_cb, self);
	sig_resumed(self);
	return true;
}
