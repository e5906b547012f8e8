/* The scheduler's calls (sched.c, runq.c, switch.c, park.c, idle.c):
 * what the synchronisation objects are built on. */
#ifndef PPL_SCHEDULER_H
#define PPL_SCHEDULER_H

#include "base.h"
#include "vproc.h"
#include "waitq.h"

/* switch.c: the thread on its block has started or resumed; counts down to
 * the block's LDT entry (called only while t->tls_countdown != 0). */
void ult_tls_entered(struct ult *t) PPL_HIDDEN;

/* idle.c: fire the due timers of v and of other VPs; ns until v's next
 * (or the lent VP's it stands in for), -1 if none. */
int64_t sched_run_timers(struct vproc *v);

/* ---- the scheduler (sched.c, runq.c, switch.c, park.c, idle.c): the only caller of ctx_switch* */

/* thread.c: a foreign kernel thread's TCB, made on first use (never fails:
 * falls back to a static emergency record); NULL if none was made yet. */
struct ult *ult_foreign_self(void);
struct ult *ult_foreign_peek(void);

/* The calling thread's TCB; on a foreign kernel thread a TCB is created on
 * first use.  Inline: it is on every create, join, park and yield. */
static inline struct ult *ult_self(void)
{
	struct vproc *v = (struct vproc *)vp_current();
	if (ppl_likely(v != NULL && v->current != NULL))
		return v->current;
	return ult_foreign_self();
}

/* The same, but NULL for a kernel thread libppl has made no TCB for yet
 * (and for a VP's idle loop). */
static inline struct ult *ult_self_peek(void)
{
	struct vproc *v = (struct vproc *)vp_current();
	if (v)   /* a VP's idle loop (NULL) is no thread of the program */
		return v->current;
	return ult_foreign_peek();
}

/* Make t runnable.  t must be BLOCKED (popped from its wait queue by the
 * caller) or new.  Callable with an object lock held. */
void sched_wake(struct ult *t);
void sched_ready_new(struct ult *t);
/* Work-first creation (PPL_WORK_FIRST=1): the creator gives its VP to the
 * new thread t at once and waits at the head of the VP's queue, stealable;
 * false if t cannot run here first (bound or tied VP, another priority, an
 * installed scheduler or seeded schedule): then sched_ready_new. */
bool sched_run_new(struct ult *t);
extern bool ppl_env_work_first PPL_HIDDEN;
/* Park the calling thread.  On entry the caller holds *lock (may be NULL)
 * and has pushed itself onto q (may be NULL for a plain sleep).  The lock is
 * released only after the thread is fully switched out.  With a deadline
 * (abstime on clock clk, NULL for none) the thread is removed from q and
 * ETIMEDOUT returned if it is not woken in time.  Returns 0 when woken. */
int sched_park(spin_t *lock, struct waitq *q, const struct timespec *abstime, clockid_t clk);

/* ---- cancellation points (cancel.c, sched.c) -----------------------------------
 * Deferred cancellation is acted on only where libppl checks for it.  A
 * blocking primitive that is a cancellation point:
 *  - calls cancel_point() on entry (before it changes any state);
 *  - parks with sched_park_cp (same contract as sched_park) instead of
 *    sched_park.  pthread_cancel wakes a thread parked there: it removes it
 *    from q under *lock and sched_park_cp returns ECANCELED (also at once if
 *    a cancel is already pending: then self has been removed from q).  The
 *    caller restores its invariants as for a time-out (cond_wait re-acquires
 *    the mutex), then calls cancel_act(), which does not return.
 * A thread with asynchronous cancellation enabled that is parked in plain
 * sched_park is woken too and unwinds from inside sched_park: its queue is
 * consistent (it was removed under the lock), the rest is the undefined
 * behaviour POSIX gives non-async-cancel-safe calls. */
int sched_park_cp(spin_t *lock, struct waitq *q, const struct timespec *abstime, clockid_t clk);
/* sched_sleep_until as a cancellation point that a signal interrupts:
 * 0, ECANCELED, or EINTR (the handler has run).  realtime_ns (else -1):
 * the CLOCK_REALTIME time the deadline stands for, not to end before. */
int sched_sleep_until_cp(int64_t deadline_mono_ns, int64_t realtime_ns);
/* sched_park with PARK_* flags.  With PARK_INTR, an unblocked signal sent
 * to the thread (pthread_kill) removes it from q under *lock, as a time-out
 * would, and the call returns EINTR once the handler has run in the thread;
 * the caller owns nothing it was waiting for and decides whether to wait
 * again.  Callers without it keep their signals handled by the sender. */
#define PARK_CP   1   /* a cancellation point (sched_park_cp) */
#define PARK_INTR 2   /* a signal interrupts the wait: EINTR */
int sched_park_flags(spin_t *lock, struct waitq *q, const struct timespec *abstime, clockid_t clk,
		     int flags);
/* End t's park early if it is one that `need` (PARK_* bits; 0: any) says
 * a request ends: under the park's lock, take t off its queue as its timer
 * would and wake it with `result` (ECANCELED, EINTR).  True if t is in
 * such a park (woken now, or already being woken by its waker or timer). */
bool sched_interrupt(struct ult *t, int need, int result);

/* Yield the VP to another ready thread of at least the caller's priority,
 * if there is one. */
void sched_yield_ult(void);
/* Shared TLS: the caller moves from VP 0 to another VP (monitor.h's
 * sys_place). */
void sched_leave_initial(void);
/* Yield to a ready thread of priority >= min, queueing the caller at the
 * back of its priority or, with front, at its head (preempted by a higher
 * one).  False if there was none (the caller goes on). */
bool sched_yield_min(int min, bool front);
/* Sleep until the absolute monotonic time; returns 0. */
int sched_sleep_until(int64_t deadline_mono_ns);
/* Leave the running thread for good (thread exit); does not return. */
_Noreturn void sched_exit(struct ult *self);
/* The VP's scheduler loop (the idle context of every VP). */
void sched_vp_main(struct vp *vp);
/* Push t to the VP-independent ready queues and wake an idle VP if needed. */
void sched_push(struct ult *t);
/* The calling thread's priority changed to t->prio: give way if a ready
 * thread now has a higher one (pthread_setschedparam & co.). */
void sched_prio_changed(void);
/* Another thread's priority changed: if it is ready on a run queue or
 * waits on a wait queue, queue it again there, at the back of its new
 * priority (as the kernel does for NPTL's threads and futex waiters). */
void sched_requeue(struct ult *t);
/* t's home changed: if it is ready on a run queue, queue it again where
 * sched_push puts it (its new home).  t is not the caller. */
void sched_rehome(struct ult *t);
/* The caller resumed with `migrating` set (migrate.c): on its destination,
 * its home goes back to its pin or affinity. */
void sched_migrate_arrived(struct ult *self);
/* self (running on v, not its home) is pinned to a set holding v: v is
 * its home from now on (migrate.c); false otherwise. */
bool sched_home_here(struct ult *self, struct vproc *v);
/* CPU affinity keeps t to vp (NULL: any VP), unless pinned (migrate.c). */
void sched_affinity_home(struct ult *t, struct vproc *vp);
/* The user's sched_yield: as sched_yield_ult, and the kernel's sched_yield
 * when no user thread of at least the caller's priority is ready. */
void sched_yield_user(void);
/* Priority of the best ready thread of v's queue, or of any VP when a
 * real-time thread is queued somewhere (-1: none). */
int sched_top_ready(struct vproc *v);

/* Convert a CLOCK_REALTIME/MONOTONIC absolute time to a monotonic ns deadline. */
int64_t deadline_mono_ns(const struct timespec *abstime, clockid_t clk);
/* Clock clk reads abstime or later.  A wait on a CLOCK_MONOTONIC deadline
 * that deadline_mono_ns gave may end before that, if clk was set back
 * meanwhile: then the caller waits again, for the new equivalent. */
bool deadline_reached(const struct timespec *abstime, clockid_t clk);

#endif
