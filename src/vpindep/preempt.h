/* Time-slice and priority preemption (preempt.c). */
#ifndef PPL_PREEMPT_H
#define PPL_PREEMPT_H

#include "base.h"

/* ---- preemption (preempt.c) ---------------------------------------------------
 * Time-slice preemption from a per-VP tick signal; docs/preemption.md. */

/* Read PPL_TIMESLICE_US, find the protected text ranges, install the handler. */
void preempt_init(void);
/* Start ticking the calling VP (on its own kernel thread; unbound VPs only). */
void preempt_vp_start(struct vproc *v);
/* struct vp_preempt's reset in the forked child (vproc_parts). */
void preempt_fork_child(struct vproc *v, struct ult *self);
/* VPs owing a deferred preemption or holding signals: read by
 * preempt_point, one load. */
extern _Atomic int preempt_npending PPL_HIDDEN;
void preempt_deferred_run(void);
/* preempt_point's: the same, unless libppl was called by another run time. */
void preempt_point_run(void);
/* A thread of higher priority than v's current was queued on v: preempt
 * v's current as soon as it is safe (v may be the caller's own VP). */
void preempt_for_priority(struct vproc *v, const struct ult *t);
/* Another VP, v, must look at its current thread's settings (its CPU
 * set) now: its tick handler runs.  False if it cannot (preemption off). */
bool preempt_kick(struct vproc *v);

/* The trampoline runs an application handler over the interrupted
 * context uc: enter records whether the tick may switch the thread out
 * meanwhile (not over the C library's or libppl's code: struct ult's
 * sig_unsafe, which switch_to also reads); leave pays a preemption the
 * handler made due (it woke a higher priority thread) or has the tick
 * come back. */
void preempt_handler_enter(const void *uc);
void preempt_handler_leave(const void *uc);
/* Whether self, running, is inside such a handler still (one left by
 * siglongjmp is forgotten here). */
bool preempt_in_handler(struct ult *self);
/* pc is in libppl's own text (found at start-up, with or without
 * preemption). */
bool preempt_own_pc(uintptr_t pc);
/* ... in another run time's (the C library, the vDSO, ...). */
bool preempt_foreign_pc(uintptr_t pc);
/* A signal was held on v, the caller's VP (sig.h): let in by the next
 * preempt_point (counted in preempt_npending), or by the first tick that
 * finds the thread out of libppl (come at the next scheduler tick). */
void preempt_note_held(struct vproc *v);
/* Let v's held signals in (on v's kernel thread): at uc's sigreturn, or at
 * once with uc NULL; those in `blocked` go back to the process. */
void preempt_release_held(struct vproc *v, uint64_t blocked, void *uc);
/* VPs with held signals (the monitor watches them while this is not 0). */
extern _Atomic int preempt_nheld PPL_HIDDEN;
/* The monitor, on each look while preempt_nheld: take back v's held
 * signals if they have waited too long. */
void preempt_held_watch(struct vproc *v, int64_t now);

/* spincalls.c: find the C library's sched_getcpu, getcpu, time and
 * gettimeofday (at start-up: ppl_init). */
void spincalls_init(void);

/* A thread about to wait in the kernel (an announced call, a kernel-level
 * wait), before it says so: the signals held on its VP run now, as they
 * would have during the call.  A second instance of a held signal stays
 * blocked on the kernel thread till a release point, and the call is none:
 * a thread that went from libppl's code straight into sem_wait on a
 * process-shared semaphore waited for its next switch, the monitor's
 * reclaim of the first instance finding it blocked too.  Before the
 * announcement and the cancellation mark, which are the VP's: a handler
 * may move the thread. */
void preempt_release_before_wait_run(struct vproc *v);
static inline void preempt_release_before_wait(void)
{
	struct vp *vp = vp_current();
	if (ppl_unlikely(vp != NULL && vp_signals_held(vp)))
		preempt_release_before_wait_run((struct vproc *)vp);
}

/* A safe point at a libppl entry point: no libppl lock held, about to
 * return to the application.  Pays a deferred preemption, if one is owed,
 * and lets in the signals held while the thread ran libppl's code. */
static inline void preempt_point(void)
{
	if (ppl_unlikely(atomic_load_explicit(&preempt_npending, memory_order_relaxed) != 0))
		preempt_point_run();
}

#endif
