/* The scheduler: per-VP run queues, work stealing, parking and waking.
 * It is the only caller of ctx_switch*.  Its parts: the run queues and
 * stealing (runq.h, runq.c), making a thread ready and waking idle VPs
 * (this file), switching and yielding (switch.h, switch.c), parking
 * (park.c) and the idle loop (idle.c).
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
#include "monitor.h"
#include "preempt.h"
#include "runq.h"
#include "runtime.h"
#include "schedhooks.h"
#include "schedparam.h"
#include "scheduler.h"
#include "switch.h"
#include "thread.h"
#include "ult.h"
#include "vproc.h"

/* ---- waking idle VPs ---------------------------------------------------------- */

void wake_idle_vp(void)
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
struct vproc *push_target(struct ult *t)
{
	if (ppl_unlikely(t->off_initial))
		return off_initial_target(t);   /* leaving VP 0 (sys_place) */
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

/* t was just queued: wake a VP for it.  Only its home may run a thread
 * that has one (no other VP takes it), so that one, if it sleeps: any
 * idle VP woke instead, and a thread pinned on 3 VPs that yielded to
 * move home waited there for good while its home slept. */
void wake_for(struct ult *t)
{
	struct vproc *home = t->home;
	/* Leaving VP 0 (sys_place): VP 0 may not take it, so the VP it was
	 * queued on, not any idle one (VP 0 spun, found nothing it could
	 * run and slept, and so did the VP holding it). */
	if (ppl_unlikely(t->off_initial))
		home = t->queued_on;
	if (ppl_likely(home == NULL))
		wake_idle_vp();
	else if (home != this_vp() && take_sleeper(home))
		vp_resume(&home->vp);
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
			 !home->dedicated) {
			preempt_for_priority(home, t);
		} else if (t->pin != NULL && t->pin_set) {
			wake_idle_vp();   /* another VP of its pin set may take it */
		}
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

/* ---- deadlines ---------------------------------------------------------------------------- */

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

bool deadline_reached(const struct timespec *abstime, clockid_t clk)
{
	return clk == CLOCK_MONOTONIC || clock_now_ns(clk) >= timespec_to_ns(abstime);
}

/* ---- struct vp_sched (vproc_parts) ---------------------------------------------- */

int sched_vp_init(struct vproc *v)
{
	atomic_store(&v->cur_prio, -1);
	return 0;
}

/* The forked child's VP runs the forking thread, awake. */
void sched_fork_child(struct vproc *v, struct ult *self)
{
	atomic_store_explicit(&v->sleeping, 0, memory_order_relaxed);
	v->current = self;
	vp_kstate_changed();   /* a new VP and kernel thread: look again */
	atomic_store_explicit(&v->cur_prio, self->prio, memory_order_relaxed);
}
