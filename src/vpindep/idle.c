/* The idle loop of a VP: running due timers, spinning, then sleeping
 * until work or a timer comes; retiring a VP that is no longer wanted. */
#include "monitor.h"
#include "preempt.h"
#include "runq.h"
#include "runtime.h"
#include "scheduler.h"
#include "sig.h"
#include "switch.h"
#include "timer.h"
#include "ult.h"
#include "vproc.h"

#define SPIN_NS 50000          /* how long an idle VP looks for work before sleeping */

/* v, a spare, stands in for o: o lent its VP to v, or to a spare v stands
 * in for in turn (the thread that spare ran blocked too: VP 0 -> spare A
 * -> spare B), as monitor.c's has_work follows the chain. */
static bool stands_in_for(struct vproc *v, struct vproc *o)
{
	struct vproc *l = atomic_load_explicit(&v->lender, memory_order_acquire);
	for (int hops = 0; l != NULL && hops < PPL_MAX_VPS; hops++) {
		if (l == o)
			return true;
		l = atomic_load_explicit(&l->lender, memory_order_acquire);
	}
	return false;
}

/* Expired timers of this VP, and of any other VP that is too busy to look
 * (the idle loop, and the tick of a VP whose thread computes). */
int64_t sched_run_timers(struct vproc *v)
{
	int64_t left = timer_run_expired(v);
	int64_t now = -1;
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
		else if ((left < 0 || d - now < left) && stands_in_for(v, o))
			/* Its VP is stuck in a system call: this spare stands in
			 * for it, its timers included, and must wake for them.
			 * Only the last spare of a chain is free to: a timer of
			 * VP 0 two hand-offs up was fired by nobody, its thread
			 * (tp_retire's main in nanosleep) parked for good. */
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

	uint32_t seen = vp_wake_count(&v->vp);
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
		if (left != 0 && shared)
			retire_poll(v, &left);
		if (left != 0 && shared)
			retire_nudge(v);
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
		wake_for(q);
		/* That VP may be stuck in the kernel (monitor.c). */
		monitor_note_ready();
	}
	uint32_t seen = vp_wake_count(&v->vp);
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
		/* A thread switched out inside a handler on its own
		 * alternate stack left it installed here (sig_alt_leave was
		 * refused): a signal landing on this idle VP must not write on
		 * it while the thread runs elsewhere. */
		if (ppl_unlikely(vp_altstack_current(vp) != NULL))
			vp_altstack_use(vp, NULL);
		/* Signals held while a thread that has left ran libppl's code
		 * (sig.h): the loop routes them to threads that take them. */
		if (ppl_unlikely(vp_signals_held(vp)))
			preempt_release_held(v, 0, NULL);
		if (ppl_unlikely(atomic_load_explicit(&v->halt, memory_order_relaxed)))
			retire_halt_point(v);
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
