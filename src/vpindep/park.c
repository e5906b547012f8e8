/* Parking: a thread blocks on a wait queue or sleeps until a deadline,
 * and is woken, timed out, interrupted or cancelled; its place on a wait
 * queue follows its priority. */
#include "cancel.h"
#include "runq.h"
#include "scheduler.h"
#include "sig.h"
#include "switch.h"
#include "timer.h"
#include "ult.h"
#include "vproc.h"
#include "waitq.h"

/* The lock of t's park, taken, if t is still in that park (park_lock and
 * park_flags change only under it); NULL otherwise.  t is queued exactly
 * while wait_q is set (waitq.c). */
static spin_t *lock_park(struct ult *t)
{
	spin_t *lock = atomic_load_explicit(&t->park_lock, memory_order_seq_cst);
	if (lock == NULL)
		return NULL;
	spin_lock(lock);
	if (atomic_load_explicit(&t->park_lock, memory_order_relaxed) == lock)
		return lock;
	spin_unlock(lock);
	return NULL;
}

/* t waits on a queue: its place follows its new priority, at the back of
 * that priority. */
static void requeue_waiter(struct ult *t)
{
	spin_t *lock = lock_park(t);
	if (lock == NULL)
		return;
	struct waitq *q = t->wait_q;
	if (q != NULL) {
		waitq_remove(q, t);
		waitq_push(q, t);
	}
	spin_unlock(lock);
}

void sched_requeue(struct ult *t)
{
	if (atomic_load_explicit(&t->state, memory_order_acquire) != ULT_READY) {
		requeue_waiter(t);
		return;
	}
	sched_rehome(t);
}

void sched_rehome(struct ult *t)
{
	struct vproc *v = t->queued_on;
	if (v == NULL || atomic_load_explicit(&t->state, memory_order_acquire) != ULT_READY)
		return;
	spin_lock(&v->rq_lock);
	bool found = rq_remove(v, t);
	spin_unlock(&v->rq_lock);
	/* Off every queue and READY: nobody else moves it meanwhile. */
	if (found)
		sched_push(t);
}

struct park_req {
	struct ult *self;
	spin_t *lock;
	int64_t deadline;    /* monotonic ns, or -1 */
	int64_t realtime;    /* the CLOCK_REALTIME deadline it stands for, or -1 */
};

static void park_timeout(struct timer *tm)
{
	struct ult *t = (struct ult *)((char *)tm - offsetof(struct ult, timer));
	spin_t *lock = t->wait_lock;
	if (lock) {
		spin_lock(lock);
		if (t->wait_q == NULL) {       /* a waker got there first */
			spin_unlock(lock);
			return;
		}
		waitq_remove(t->wait_q, t);
		t->wait_result = ETIMEDOUT;
		spin_unlock(lock);
	} else {
		t->wait_result = ETIMEDOUT;
	}
	sched_push(t);
}

/* Runs on the next context: self is saved, publish it. */
static void park_cb(void *arg)
{
	struct park_req *r = arg;   /* on self's stack: read it before publishing */
	struct ult *self = r->self;
	spin_t *lock = r->lock;
	int64_t deadline = r->deadline;
	if (deadline >= 0)
		timer_arm(&self->timer, deadline, r->realtime, park_timeout);
	if (lock)
		spin_unlock(lock);
	/* A VP busy with threads that park and wake each other never idles:
	 * give its due timers a chance here, with no lock held. */
	struct vproc *v = this_vp();
	if (atomic_load_explicit(&v->next_deadline, memory_order_relaxed) != INT64_MAX)
		timer_run_expired(v);
}

static int park_foreign(struct ult *self, spin_t *lock, struct waitq *q,
			const struct timespec *abstime, clockid_t clk)
{
	if (lock)
		spin_unlock(lock);
	for (;;) {
		/* wait_result: 0 from a waker, ECANCELED from pthread_cancel. */
		if (atomic_load_explicit(&self->wake, memory_order_acquire))
			return self->wait_result;
		int err = futex_wait(&self->wake, 0, abstime, clk);
		if (err != ETIMEDOUT)
			continue;
		bool removed = false;
		if (lock) {
			spin_lock(lock);
			removed = q && waitq_remove(q, self);
			spin_unlock(lock);
		}
		if (removed || !q)
			return ETIMEDOUT;
		abstime = NULL;   /* a waker popped us: its sched_wake is imminent */
	}
}

/* The common part of the sched_park* calls.  With a lock, the park is
 * published for pthread_cancel and pthread_kill (park_lock, park_flags;
 * sched_interrupt) under that lock, and the pending requests are read after
 * it: a sender sets its bit before it reads park_lock, so one of the two
 * sees the other (seq_cst). */
static int park(spin_t *lock, struct waitq *q, const struct timespec *abstime, clockid_t clk,
		int64_t deadline, int64_t realtime, int flags)
{
	bool cp = flags & PARK_CP;
	struct vproc *v = this_vp();
	if (v == NULL)
		flags &= ~PARK_INTR;   /* a foreign thread gets its signals from the kernel */
	struct ult *self = v ? v->current : ult_self();
	if (abstime) {
		deadline = deadline_mono_ns(abstime, clk);
		if (clk == CLOCK_REALTIME && deadline > 0)
			realtime = timespec_to_ns(abstime);
		if (deadline < 0) {
			if (lock) {
				if (q)
					waitq_remove(q, self);
				spin_unlock(lock);
			}
			return EINVAL;
		}
	}
	self->wait_lock = lock;
	self->wait_result = 0;
	if (lock) {
		self->park_flags = flags;
		atomic_store_explicit(&self->park_lock, lock, memory_order_seq_cst);
		/* A signal sent before park_lock was visible: its sender did not
		 * wake us (sched_interrupt), so it is ours to see. */
		if ((flags & PARK_INTR) &&
		    ((atomic_load_explicit(&self->sigpending, memory_order_seq_cst) |
		      sig_claims_for(self)) & ~self->sigmask)) {
			if (q)
				waitq_remove(q, self);
			atomic_store_explicit(&self->park_lock, NULL, memory_order_relaxed);
			spin_unlock(lock);
			sig_resumed(self);
			return EINTR;
		}
		int c = atomic_load_explicit(&self->cancel, memory_order_seq_cst);
		if (ppl_unlikely(c & CANCEL_PENDING) && !(c & (CANCEL_DISABLED | CANCEL_ACTING)) &&
		    (cp || (c & CANCEL_ASYNC))) {
			if (q)
				waitq_remove(q, self);
			atomic_store_explicit(&self->park_lock, NULL, memory_order_relaxed);
			spin_unlock(lock);
			if (!cp)
				cancel_act();
			return ECANCELED;
		}
	}
	if (v == NULL) {
		atomic_store_explicit(&self->wake, 0, memory_order_relaxed);
		int err = park_foreign(self, lock, q, abstime, clk);
		atomic_store_explicit(&self->park_lock, NULL, memory_order_release);
		return err;
	}
	atomic_store_explicit(&self->state, ULT_BLOCKED, memory_order_relaxed);
	v->stats.parks++;
	ppl_trace(TR_PARK, self->id, q ? (uintptr_t)q : (uintptr_t)lock);
	if (ppl_hook_on(PPL_HOOK_SCHED))
		plug_blocked(self);
	self->park_since = clock_coarse_ns();
	struct park_req r = { self, lock, deadline, realtime };
	switch_away(v, self, park_cb, &r);
	if (deadline >= 0)
		timer_cancel(&self->timer);
	/* The object may go away once we return: a canceller must not take
	 * its lock later.  (One that loaded it just before has the same narrow
	 * window as a timer that fires as its thread is popped.) */
	if (lock)
		atomic_store_explicit(&self->park_lock, NULL, memory_order_release);
	/* Woken by pthread_cancel in a plain park: asynchronous cancellation. */
	if (ppl_unlikely(self->wait_result == ECANCELED) && !cp)
		cancel_act();
	int res = self->wait_result;
	sig_resumed(self);   /* the handlers of a signal that woke us, or came meanwhile */
	return res;
}

bool sched_interrupt(struct ult *t, int need, int result)
{
	spin_t *lock = lock_park(t);
	if (lock == NULL)
		return false;
	bool ours = need == 0 || (t->park_flags & need);
	bool queued = ours && t->wait_q != NULL;
	if (queued) {
		waitq_remove(t->wait_q, t);
		t->wait_result = result;
	}
	spin_unlock(lock);
	if (queued)
		sched_wake(t);
	return ours;
}

int sched_park(spin_t *lock, struct waitq *q, const struct timespec *abstime, clockid_t clk)
{
	return park(lock, q, abstime, clk, -1, -1, 0);
}

int sched_park_cp(spin_t *lock, struct waitq *q, const struct timespec *abstime, clockid_t clk)
{
	return park(lock, q, abstime, clk, -1, -1, PARK_CP);
}

int sched_park_flags(spin_t *lock, struct waitq *q, const struct timespec *abstime, clockid_t clk,
		     int flags)
{
	return park(lock, q, abstime, clk, -1, -1, flags);
}

int sched_sleep_until(int64_t deadline)
{
	struct vproc *v = this_vp();
	if (v == NULL) {
		struct timespec ts = ns_to_timespec(deadline);
		while (vp_kthread_sleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		return 0;
	}
	struct ult *self = v->current;
	self->wait_lock = NULL;
	self->wait_q = NULL;
	self->wait_result = 0;
	atomic_store_explicit(&self->state, ULT_BLOCKED, memory_order_relaxed);
	v->stats.parks++;
	ppl_trace(TR_PARK, self->id, 0);
	if (ppl_hook_on(PPL_HOOK_SCHED))
		plug_blocked(self);
	self->park_since = clock_coarse_ns();
	struct park_req r = { self, NULL, deadline, -1 };
	switch_away(v, self, park_cb, &r);
	timer_cancel(&self->timer);
	sig_resumed(self);
	return 0;
}

int sched_sleep_until_cp(int64_t deadline, int64_t realtime)
{
	struct vproc *v = this_vp();
	if (v == NULL) {
		/* A foreign kernel thread: a request is seen before and after. */
		cancel_point();
		sched_sleep_until(deadline);
		cancel_point();
		return 0;
	}
	/* A queue of its own under a lock of its own: the timer and
	 * pthread_cancel then agree, as for any timed wait, on who wakes it. */
	struct ult *self = v->current;
	spin_lock(&self->sleep_lock);
	waitq_push(&self->sleep_q, self);
	int err = park(&self->sleep_lock, &self->sleep_q, NULL, CLOCK_MONOTONIC, deadline,
		       realtime, PARK_CP | PARK_INTR);
	return err == ETIMEDOUT ? 0 : err;
}
