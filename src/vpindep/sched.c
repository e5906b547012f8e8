/* The scheduler: per-VP run queues, work stealing, parking and waking.
 * It is the only caller of ctx_switch*.
 *
 * Invariants
 *  - A thread is on at most one queue (a run queue or a wait queue) and is
 *    published there only after it has been switched out: everything that
 *    makes a parked or yielding thread visible to other VPs (pushing it on a
 *    run queue, releasing the lock of the wait queue it sits on, arming its
 *    timer) runs in a ctx_switch_call callback, on the next context's stack.
 *  - Each run queue has its own spin lock; there is no global scheduler lock.
 *    Idle VPs steal from the others' queues.
 *  - An idle VP first spins (counted in ppl_rt.nspinning), then sleeps in
 *    vp_suspend (counted in nsleeping).  A thread made ready wakes a sleeping
 *    VP only if no VP is spinning: the spinner will find the work.  Lost
 *    wake-ups are excluded by seq_cst ordering: a VP announces `sleeping`
 *    before its last look at the queues, and a waker pushes before it reads
 *    `sleeping`/`nspinning`.  A VP retired while it spins takes no work, so
 *    when it stops it wakes a VP for any thread queued meanwhile
 *    (pass_on_wake).
 *  - Foreign kernel threads (not created by libppl) have a TCB too; they
 *    park on a futex in their TCB instead of switching.
 *  - errno is per VP in shared-TLS mode: it is saved in the TCB when a thread
 *    switches out and restored when it resumes.  In per-thread TLS mode errno
 *    is in the thread's own block and the switch installs that block; then
 *    whoever switches a thread in first writes its VP into the block
 *    (vp_set_current_in), since vp_current() reads it from there.  The idle
 *    loop of a VP runs on the VP's own block, which always names the VP. */
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pthread_impl.h"
#include "schedhooks.h"

#define SPIN_NS 50000          /* how long an idle VP looks for work before sleeping */

static inline struct vproc *this_vp(void)
{
	return (struct vproc *)vp_current();
}

/* Never inlined or analysed: errno's address must be taken afresh after a
 * switch, since the thread may resume on another VP (kernel thread). */
__attribute__((noipa)) static int *errno_slot(void)
{
	return &errno;
}

/* A switch on v from `from` to `to` (either NULL: the idle loop).  The
 * count has a single writer (the VP); the monitor reads it to see
 * progress.  CPU time is charged per thread once a program asked for a
 * thread's CPU clock (cpuclock.c). */
static inline void count_switch(struct vproc *v, struct ult *from, struct ult *to)
{
	unsigned long n = atomic_load_explicit(&v->stats.switches, memory_order_relaxed);
	atomic_store_explicit(&v->stats.switches, n + 1, memory_order_relaxed);
	cpu_switch(from, to);
	if (ppl_hook_on(PPL_HOOK_TRACE))
		trace_switch(v, from, to);
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

static void rt_changed(struct vproc *v, int d)
{
	atomic_store_explicit(&v->rq_top, v->rt_head ? v->rt_head->prio : 0, memory_order_relaxed);
	atomic_fetch_add_explicit(&ppl_rt.rt_ready, d, memory_order_relaxed);
}

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

static void rq_push(struct vproc *v, struct ult *t)
{
	spin_lock(&v->rq_lock);
	rq_insert(v, t, false);
	spin_unlock(&v->rq_lock);
}

/* The link to the first thread of the list at *pp that may run on `self`
 * (a thread with a home VP stays there; self NULL: any), or NULL. */
static struct ult **list_find(struct ult **pp, struct vproc *self)
{
	for (; *pp; pp = &(*pp)->next)
		if (self == NULL || (*pp)->home == NULL || (*pp)->home == self)
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
static struct ult *rq_take_for(struct vproc *v, struct vproc *self, int min)
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
static bool rq_remove(struct vproc *v, struct ult *t)
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

static struct ult *rq_pop(struct vproc *v)
{
	if (atomic_load_explicit(&v->rq_len, memory_order_relaxed) == 0)
		return NULL;
	spin_lock(&v->rq_lock);
	struct ult *t = rq_take(v);
	spin_unlock(&v->rq_lock);
	return t;
}

static void wake_idle_vp(void);

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

static struct ult *steal(struct vproc *self)
{
	int n = ppl_rt.nvps_total;
	int start = self->vp.id + 1;
	for (int k = 0; k < n; k++) {
		struct vproc *v = ppl_rt.vps[(start + k) % n];
		if (v == NULL || v == self ||
		    atomic_load_explicit(&v->rq_len, memory_order_relaxed) == 0)
			continue;
		struct ult *t = steal_from(self, v, 0);
		if (t)
			return t;
	}
	return NULL;
}

/* A real-time thread queued on another VP that beats this VP's own best
 * (and is at least min): take it. */
static struct ult *take_better_rt_slow(struct vproc *v, int min)
{
	if (v->dedicated || v->retired)
		return NULL;
	struct vproc *o = best_rt_queue(v, min);
	return o ? steal_from(v, o, min) : NULL;
}

static inline struct ult *take_better_rt(struct vproc *v, int min)
{
	if (ppl_likely(atomic_load_explicit(&ppl_rt.rt_ready, memory_order_relaxed) == 0))
		return NULL;
	return take_better_rt_slow(v, min);
}

static struct ult *find_work(struct vproc *v)
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

/* ---- waking idle VPs ---------------------------------------------------------- */

static void wake_idle_vp(void)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&ppl_rt.nspinning, memory_order_seq_cst) > 0 ||
	    atomic_load_explicit(&ppl_rt.nsleeping, memory_order_seq_cst) == 0)
		return;
	for (int i = 0; i < ppl_rt.nvps_total; i++) {
		struct vproc *v = ppl_rt.vps[i];
		int one = 1;
		if (v && !v->retired &&
		    atomic_compare_exchange_strong(&v->sleeping, &one, 0)) {
			vp_resume(&v->vp);
			return;
		}
	}
}

/* Where a thread made ready goes: the waker's VP, else the VP it last ran
 * on, else VP 0; never a VP of SCOPE_SYSTEM threads (`dedicated`), not even
 * between two of its threads.  ppl_bind_new_vp sets bound_to and clears
 * retired on another VP as we read them, so a spare could look shared to a
 * signal handler in its idle loop (sem_post); the thread queued there then
 * ran in place of the new bound thread and blocked the kernel thread in
 * sem_wait, as only a bound thread may (Open POSIX pthread_join/6-3). */
static struct vproc *push_target(struct ult *t)
{
	struct vproc *v = this_vp();
	if (v && !v->dedicated && !v->retired)
		return v;
	v = t->vp;
	if (v && !v->dedicated && !v->retired)
		return v;
	return ppl_rt.vps[0];
}

/* A thread of priority `prio` > 0 is made ready: the VP it should go to
 * in order to run now, as the kernel would run it: an idle VP, else the
 * one running the lowest priority below it (the caller's among equals);
 * NULL if every VP runs that priority or a higher one. */
static struct vproc *prio_victim(int prio)
{
	struct vproc *self = this_vp(), *victim = NULL;
	int low = prio;
	for (int i = 0; i < ppl_rt.nvps_total; i++) {
		struct vproc *o = ppl_rt.vps[i];
		if (o == NULL || o->dedicated || o->retired ||
		    atomic_load_explicit(&o->in_syscall, memory_order_relaxed) != SYS_OUT)
			continue;
		int c = atomic_load_explicit(&o->cur_prio, memory_order_relaxed);
		if (c < 0)
			return o;
		if (c < low || (c == low && o == self && victim)) {
			low = c;
			victim = o;
		}
	}
	return victim;
}

/* A thread was just queued on v: if v sleeps, take its sleep (the caller
 * then resumes it).  The fence pairs with idle_wait's: either v sees the
 * thread before it sleeps, or this sees it asleep. */
static bool take_sleeper(struct vproc *v)
{
	atomic_thread_fence(memory_order_seq_cst);
	int one = 1;
	return atomic_compare_exchange_strong(&v->sleeping, &one, 0);
}

void sched_push(struct ult *t)
{
	atomic_store_explicit(&t->state, ULT_READY, memory_order_relaxed);
	struct vproc *home = t->home;
	if (ppl_unlikely(home != NULL)) {
		rq_push(home, t);
		if (take_sleeper(home)) {
			if (ppl_unlikely(t->prio > 0))
				sched_class_raise(home, t);
			vp_resume(&home->vp);
		} else if (ppl_unlikely(t->prio > atomic_load_explicit(&home->cur_prio, memory_order_relaxed)) &&
			 !home->dedicated)
			preempt_for_priority(home, t);
		monitor_note_ready();
		return;
	}
	struct vproc *victim = ppl_unlikely(t->prio > 0) ? prio_victim(t->prio) : NULL;
	struct vproc *target = victim ? victim : push_target(t);
	rq_push(target, t);
	if (victim) {
		if (atomic_load_explicit(&victim->cur_prio, memory_order_relaxed) >= 0) {
			preempt_for_priority(victim, t);
		} else if (victim != this_vp()) {
			/* Idle: raised first, it may have to take its CPU from
			 * a real-time kernel thread of lower priority. */
			sched_class_raise(victim, t);
			if (take_sleeper(victim))
				vp_resume(&victim->vp);
		}
		monitor_note_ready();
		return;
	}
	/* Work queued on a sleeping VP (a push from a bound VP or a foreign
	 * thread) must not wait for a spinner that steals only one thread:
	 * wake the owner of the queue itself (wake_idle_vp fences too). */
	if (target != this_vp() && take_sleeper(target))
		vp_resume(&target->vp);
	else
		wake_idle_vp();
	/* Its VP may be stuck in the kernel (monitor.c). */
	monitor_note_ready();
}

void sched_ready_new(struct ult *t)
{
	struct vproc *v = this_vp();
	if (v)
		v->stats.creates++;
	ppl_trace(TR_CREATE, t->id, 0);
	sched_push(t);
}

void sched_wake(struct ult *t)
{
	/* A forked child finds the parent's threads on wait queues: they do
	 * not exist here, so there is nobody to wake. */
	if (ppl_unlikely(t->fork_gen != ppl_rt.fork_gen))
		return;
	ppl_trace(TR_WAKE, t->id, 0);
	if (ppl_unlikely(t->foreign)) {
		atomic_store_explicit(&t->wake, 1, memory_order_release);
		futex_wake(&t->wake, 1);
		return;
	}
	struct vproc *v = this_vp();
	if (v)
		v->stats.wakes++;
	sched_push(t);
}

/* ---- switching ---------------------------------------------------------------- */

/* v runs t now (NULL: its idle loop); cur_prio tells sched_push whom a
 * higher priority thread should preempt. */
static inline void set_current(struct vproc *v, struct ult *t)
{
	v->current = t;
	atomic_store_explicit(&v->cur_prio, t ? t->prio : -1, memory_order_relaxed);
}

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

/* Switch v from self to next (NULL: v's idle loop); fn(arg) runs once
 * self is saved. */
static inline __attribute__((always_inline)) void switch_to(struct vproc *v, struct ult *self,
							    struct ult *next, ctx_fn fn, void *arg)
{
	struct ctx *to = &v->idle_ctx;
	if (next) {
		next->vp = v;
		atomic_store_explicit(&next->state, ULT_RUNNING, memory_order_relaxed);
		to = &next->ctx;
	}
	set_current(v, next);
	count_switch(v, self, next);
	if (tls_per_thread) {
		if (next)
			vp_set_current_in(next->ctx.tls, &v->vp);
		ctx_switch_call_tls(&self->ctx, to, fn, arg);
		/* Resumed. */
		if (__builtin_expect(self->tls_countdown != 0, 0))
			ult_tls_entered(self);
	} else {
		self->saved_errno = *errno_slot();
		ctx_switch_call(&self->ctx, to, fn, arg);
		/* Resumed: possibly on another VP. */
		*errno_slot() = self->saved_errno;
	}
	if (ppl_unlikely(self->migrating))
		sched_migrate_arrived(self);
}

/* Leave `self` for the next ready thread of this VP, or for its idle loop.
 * The callers that resume (park, sleep) call sig_resumed once their park
 * is undone: a handler may park again. */
static void switch_away(struct vproc *v, struct ult *self, ctx_fn fn, void *arg)
{
	switch_to(v, self, find_work(v), fn, arg);
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
	/* Moving to its home (affinity, ppl_migrate): only that VP may run
	 * it, so wake that one if it sleeps; any other would not steal it. */
	if (ppl_unlikely(t->home != NULL) && v != this_vp() && take_sleeper(v))
		vp_resume(&v->vp);
	else
		wake_idle_vp();
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

static void unlock_cb(void *lock)
{
	spin_unlock(lock);
	wake_idle_vp();
}

/* yield_min with a scheduler installed (v->rq_lock held): the caller is
 * put back first, so that the scheduler may pick it again (a time stamp
 * still the lowest). */
static __attribute__((noinline)) bool plug_yield(struct vproc *v, struct ult *self, bool front)
{
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

/* v: the caller's VP, not NULL. */
static inline __attribute__((always_inline)) bool yield_min(struct vproc *v, int min, bool front)
{
	if (atomic_load_explicit(&v->next_deadline, memory_order_relaxed) != INT64_MAX)
		timer_run_expired(v);
	struct ult *self = v->current;
	if (ppl_unlikely(self->home != NULL && self->home != v)) {
		/* Its home moved (pthread_setaffinity_np): go there now. */
		switch_away(v, self, requeue_cb, self);
		sig_resumed(self);
		return true;
	}
	struct ult *next = take_better_rt(v, min);
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
	if (next == NULL &&
	    (min > 0 || v->dedicated || ppl_rt.nvps_total == 1 || (next = find_work(v)) == NULL))
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

/* ---- parking -------------------------------------------------------------------- */

struct park_req {
	struct ult *self;
	spin_t *lock;
	int64_t deadline;    /* monotonic ns, or -1 */
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
		timer_arm(&self->timer, deadline, park_timeout);
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
		int64_t deadline, int flags)
{
	bool cp = flags & PARK_CP;
	struct vproc *v = this_vp();
	if (v == NULL)
		flags &= ~PARK_INTR;   /* a foreign thread gets its signals from the kernel */
	struct ult *self = v ? v->current : ult_self();
	if (abstime) {
		deadline = deadline_mono_ns(abstime, clk);
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
	struct park_req r = { self, lock, deadline };
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
	return park(lock, q, abstime, clk, -1, 0);
}

int sched_park_cp(spin_t *lock, struct waitq *q, const struct timespec *abstime, clockid_t clk)
{
	return park(lock, q, abstime, clk, -1, PARK_CP);
}

int sched_park_flags(spin_t *lock, struct waitq *q, const struct timespec *abstime, clockid_t clk,
		     int flags)
{
	return park(lock, q, abstime, clk, -1, flags);
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
	struct park_req r = { self, NULL, deadline };
	switch_away(v, self, park_cb, &r);
	timer_cancel(&self->timer);
	sig_resumed(self);
	return 0;
}

int sched_sleep_until_cp(int64_t deadline)
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
		       PARK_CP | PARK_INTR);
	return err == ETIMEDOUT ? 0 : err;
}

/* ---- thread exit ------------------------------------------------------------------ */

extern void ult_exited(struct ult *t) PPL_HIDDEN;   /* thread.c: off its stack now */

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
	switch_away(v, self, exit_cb, self);
	ppl_fatal("an exited thread was resumed");
}

/* ---- the idle loop ------------------------------------------------------------------ */

/* Expired timers of this VP, and of any other VP that is too busy to look
 * (the idle loop, and the tick of a VP whose thread computes). */
int64_t sched_run_timers(struct vproc *v)
{
	int64_t left = timer_run_expired(v);
	int64_t now = -1;
	struct vproc *lender = v->lender;
	for (int i = 0; i < ppl_rt.nvps_total; i++) {
		struct vproc *o = ppl_rt.vps[i];
		if (o == NULL || o == v)
			continue;
		int64_t d = atomic_load_explicit(&o->next_deadline, memory_order_acquire);
		if (d == INT64_MAX)
			continue;
		if (now < 0)
			now = clock_now_ns(CLOCK_MONOTONIC);
		if (d <= now)
			timer_run_expired(o);
		else if (o == lender && (left < 0 || d - now < left))
			/* Its VP is stuck in a system call: this spare stands in
			 * for it, its timers included, and must wake for them. */
			left = d - now;
	}
	return left;
}

static void run(struct vproc *v, struct ult *t)
{
	t->vp = v;
	atomic_store_explicit(&t->state, ULT_RUNNING, memory_order_relaxed);
	set_current(v, t);
	count_switch(v, NULL, t);
	if (tls_per_thread) {
		vp_set_current_in(t->ctx.tls, &v->vp);
		ctx_switch_tls(&v->idle_ctx, &t->ctx);
		return;
	}
	ctx_switch(&v->idle_ctx, &t->ctx);
}

/* A VP retired while it spun (a spare whose lender took its VP back, or
 * pthread_setconcurrency): counted in nspinning, it made wake_idle_vp leave
 * threads readied meanwhile to it, but its find_work takes nothing.  Now
 * that it no longer counts, wake a VP for any such thread (the fence pairs
 * with wake_idle_vp's: a pusher that saw it spinning pushed before this
 * looks).  Without this, tp_cancel_io hung about once in 150 runs: the
 * reader's VP, idle after the cancel, fired the canceller's timer (its
 * short sleep in syscall_kick, parked on the spare) on its way to sleep,
 * queued it on itself and slept, as did every other VP. */
static void pass_on_wake(void)
{
	atomic_thread_fence(memory_order_seq_cst);
	for (int i = 0; i < ppl_rt.nvps_total; i++) {
		struct vproc *o = ppl_rt.vps[i];
		if (o != NULL && !o->dedicated && !atomic_load(&o->retired) &&
		    atomic_load_explicit(&o->rq_len, memory_order_relaxed) > 0) {
			wake_idle_vp();
			return;
		}
	}
}

/* Nothing to run: spin a little, then sleep until woken or a timer is due.
 * A VP bound to one thread neither spins nor counts as idle: it cannot take
 * anyone else's work. */
static struct ult *idle_wait(struct vproc *v, int64_t timer_left)
{
	struct ult *t;
	bool shared = !v->dedicated;
	if (shared) {
		atomic_fetch_add_explicit(&ppl_rt.nspinning, 1, memory_order_seq_cst);
		int64_t until = clock_now_ns(CLOCK_MONOTONIC) + SPIN_NS;
		do {
			for (int i = 0; i < 64; i++)
				cpu_relax();
			if ((t = find_work(v)) != NULL) {
				atomic_fetch_sub_explicit(&ppl_rt.nspinning, 1, memory_order_seq_cst);
				/* More work may be queued: let another VP look for it. */
				if (atomic_load_explicit(&v->rq_len, memory_order_relaxed) > 0)
					wake_idle_vp();
				return t;
			}
		} while (clock_now_ns(CLOCK_MONOTONIC) < until &&
			 (timer_left < 0 || timer_left > SPIN_NS) && !atomic_load(&v->retired));
	}

	uint32_t seen = atomic_load_explicit(&v->vp.wakeword, memory_order_acquire);
	atomic_store_explicit(&v->sleeping, 1, memory_order_seq_cst);
	if (shared) {
		atomic_fetch_add_explicit(&ppl_rt.nsleeping, 1, memory_order_seq_cst);
		atomic_fetch_sub_explicit(&ppl_rt.nspinning, 1, memory_order_seq_cst);
	}
	t = find_work(v);
	if (t == NULL && atomic_load(&v->retired)) {
		if (shared)
			pass_on_wake();
	} else if (t == NULL) {
		int64_t left = sched_run_timers(v);
		/* A timer that fired just now queued its thread here
		 * (push_target): run it instead of sleeping on it. */
		if (atomic_load_explicit(&v->rq_len, memory_order_relaxed) > 0)
			left = 0;
		if (left < 0 && shared)
			monitor_note_idle();
		if (left != 0)
			vp_suspend(&v->vp, seen, left);
	}
	atomic_store_explicit(&v->sleeping, 0, memory_order_relaxed);
	if (shared)
		atomic_fetch_sub_explicit(&ppl_rt.nsleeping, 1, memory_order_seq_cst);
	return t;
}

/* A retired VP (spare bound VP, beyond pthread_setconcurrency's level, or
 * a spare of the monitor whose lender is back) hands its queue to VP 0 and
 * sleeps until it is given work again.  Timers armed while it ran still
 * live on its heap: it wakes for them (their threads go to other VPs). */
static void retire(struct vproc *v)
{
	struct ult *q;
	while ((q = rq_pop(v)) != NULL) {
		if (q->home == v) {
			/* Bound to this VP again meanwhile (ppl_bind_new_vp
			 * reuses a spare bound VP): its thread stays here. */
			rq_push(v, q);
			return;
		}
		/* A thread tied to a VP goes to that VP, never to VP 0. */
		rq_push(q->home ? q->home : ppl_rt.vps[0], q);
		wake_idle_vp();
		/* That VP may be stuck in the kernel (monitor.c). */
		monitor_note_ready();
	}
	uint32_t seen = atomic_load_explicit(&v->vp.wakeword, memory_order_acquire);
	atomic_store_explicit(&v->sleeping, 1, memory_order_seq_cst);
	int64_t left = timer_run_expired(v);
	if (left != 0 && atomic_load(&v->retired) &&
	    atomic_load_explicit(&v->rq_len, memory_order_seq_cst) == 0)
		vp_suspend(&v->vp, seen, left);
	atomic_store_explicit(&v->sleeping, 0, memory_order_relaxed);
}

void sched_vp_main(struct vp *vp)
{
	struct vproc *v = (struct vproc *)vp;
	sig_vp_init(v);
	/* The loop runs on the VP's kernel thread's own block (VP 0: a block of
	 * its own, set up by ppl_runtime_start). */
	if (tls_per_thread && v->idle_ctx.tls == NULL) {
		v->idle_ctx.tls = ctx_tls_self();
		/* glibc's block, above 4 GiB: switching back to the loop makes
		 * the system call (ldt method), switches between threads do not */
		v->idle_ctx.tls_sel = ctx_tls_selector(v->idle_ctx.tls);
	}
	preempt_vp_start(v);
	for (;;) {
		set_current(v, NULL);
		int64_t left = sched_run_timers(v);
		struct ult *t = find_work(v);
		if (t == NULL && atomic_load(&v->retired) && v->bound_to == NULL) {
			retire(v);
			continue;
		}
		if (t == NULL)
			t = idle_wait(v, left);
		if (t)
			run(v, t);
	}
}

/* ---- the current thread --------------------------------------------------------------- */

extern struct ult *ult_foreign_self(void) PPL_HIDDEN;   /* thread.c */

struct ult *ult_self(void)
{
	struct vproc *v = this_vp();
	if (v && v->current)
		return v->current;
	return ult_foreign_self();
}

extern struct ult *ult_foreign_peek(void) PPL_HIDDEN;   /* thread.c */

struct ult *ult_self_peek(void)
{
	struct vproc *v = this_vp();
	if (v)   /* a VP's idle loop (NULL) is no thread of the program */
		return v->current;
	return ult_foreign_peek();
}

int64_t deadline_mono_ns(const struct timespec *abstime, clockid_t clk)
{
	if (abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L)
		return -1;
	int64_t abs = timespec_to_ns(abstime);
	if (clk == CLOCK_MONOTONIC)
		return abs < 0 ? 0 : abs;
	int64_t now_clk = clock_now_ns(clk);
	int64_t now_mono = clock_now_ns(CLOCK_MONOTONIC);
	int64_t d = now_mono + (abs - now_clk);
	return d < 0 ? 0 : d;
}
