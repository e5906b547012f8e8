/* Timers on per-VP deadline heaps (timer.c). */
#ifndef PPL_TIMER_H
#define PPL_TIMER_H

#include "base.h"

/* ---- timers (timer.c): per-VP deadline heaps ---------------------------------- */

enum { TIMER_IDLE, TIMER_PENDING, TIMER_FIRING };

struct timer {
	int64_t deadline;         /* CLOCK_MONOTONIC ns */
	int64_t realtime;         /* CLOCK_REALTIME ns it is for, or -1 */
	void (*fire)(struct timer *);
	_Atomic int state;        /* TIMER_*; FIRING while fire() runs */
	uint32_t index;           /* position in owner's heap */
	struct vproc *owner;      /* heap it is queued on, under owner->timer_lock */
};

/* A deadline on CLOCK_REALTIME (realtime_ns, else -1) is armed at its
 * CLOCK_MONOTONIC equivalent then (deadline_mono_ns) and fires only once
 * CLOCK_REALTIME has reached it too: a timed wait never ends with
 * ETIMEDOUT before its deadline as the program's clock reads it, as a
 * kernel wait on that clock does not, whatever made the monotonic
 * deadline come first (a realtime clock set back).  A realtime clock set
 * forward still waits for the monotonic deadline (docs/posix.md, "Timed
 * waits and a clock that is set"). */
void timer_arm(struct timer *tm, int64_t deadline_mono_ns, int64_t realtime_ns,
	       void (*fire)(struct timer *));
/* v's first TIMER_HEAP_FIRST slots, by the thread that makes v; ENOMEM. */
int timer_heap_init(struct vproc *v);
/* struct vp_timers's hooks (vproc_parts): an empty heap, no deadline. */
int timer_vp_init(struct vproc *v);
void timer_fork_child(struct vproc *v, struct ult *self);
/* Remove tm if pending; if it is firing, wait until fire() returns. */
void timer_cancel(struct timer *tm);
/* Run the expired timers of `vp`; returns ns until its next deadline or -1. */
int64_t timer_run_expired(struct vproc *vp);
/* retire.c: every timer of `from` (stopped: it fires none) goes to `to`. */
void timer_move_all(struct vproc *from, struct vproc *to);

#endif
