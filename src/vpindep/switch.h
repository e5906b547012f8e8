/* Switching between threads on a VP: the primitives that the parts of the
 * scheduler (sched.c, switch.c, park.c, idle.c) share.  Inline, since they
 * are the hot path of every switch. */
#ifndef PPL_SWITCH_H
#define PPL_SWITCH_H

#include "cancel.h"
#include "cpuclock.h"
#include "runq.h"
#include "schedhooks.h"
#include "scheduler.h"
#include "sig.h"
#include "ult.h"
#include "vproc.h"

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

/* v runs t now (NULL: its idle loop); cur_prio tells sched_push whom a
 * higher priority thread should preempt. */
static inline void set_current(struct vproc *v, struct ult *t)
{
	v->current = t;
	atomic_store_explicit(&v->cur_prio, t ? t->prio : -1, memory_order_relaxed);
}

/* An application's signal handler that switches its thread out may run
 * over a call libppl made for the thread (struct ult's sig_unsafe records
 * the handler): a blocking call of the C library marks v "in a system
 * call" and, as a cancellation point, "in a cancellable call".  The marks
 * leave v with the thread and are put back on the VP where it resumes,
 * since the handler returns into the call there (switch.c). */
struct handler_marks {
	bool sys;                  /* announced (sys_enter) */
	bool cp;                   /* a cancellation point (cancel_syscall_enter) */
	struct cancel_mark cancel;
};
bool handler_marks_drop(struct vproc *v, struct ult *self, struct handler_marks *m);
void handler_marks_restore(struct ult *self, const struct handler_marks *m);

/* Switch v from self to next (NULL: v's idle loop); fn(arg) runs once
 * self is saved. */
static inline __attribute__((always_inline)) void switch_to(struct vproc *v, struct ult *self,
							    struct ult *next, ctx_fn fn, void *arg)
{
	struct handler_marks marks;
	bool marked = ppl_unlikely(self->sig_unsafe != 0) && handler_marks_drop(v, self, &marks);
	struct ctx *to = &v->idle_ctx;
	if (ppl_unlikely(self->alt.ss_sp != NULL))
		sig_alt_leave(self, v);
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
	if (ppl_unlikely(marked))
		handler_marks_restore(self, &marks);
	if (ppl_unlikely(self->migrating))
		sched_migrate_arrived(self);
}

/* Leave `self` for the next ready thread of this VP, or for its idle loop.
 * The callers that resume (park, sleep) call sig_resumed once their park
 * is undone: a handler may park again. */
static inline void switch_away(struct vproc *v, struct ult *self, ctx_fn fn, void *arg)
{
	switch_to(v, self, find_work(v), fn, arg);
}

#endif
