/* Cancellation (cancel.c) and unwinding (unwind.c); the contract of a
 * cancellation point's park is in scheduler.h. */
#ifndef PPL_CANCEL_H
#define PPL_CANCEL_H

#include "base.h"

/* Act on a pending cancellation request if cancellation is enabled. */
void cancel_point(void);
/* A deferred request t would act on at a cancellation point. */
bool cancel_requested(struct ult *t);
/* Act on the request now: unwind the calling thread with PTHREAD_CANCELED. */
_Noreturn void cancel_act(void);
/* Asynchronous type, enabled and pending: act now (after a libppl call that
 * such a thread may make, e.g. sched_yield, or a signal that found it in
 * libppl's code). */
void cancel_async_check(void);
/* The thread no longer acts on requests (unwinding, or returned). */
void cancel_exiting(struct ult *self);
/* The C library's own cancellation points (cancel.c, tls.h): at start-up
 * (the main thread's hook), for a new thread before it can be cancelled,
 * and first thing on the new thread (`hook` in its bottom frame). */
void cancel_init(void);
void cancel_thread_reset(struct ult *t);
void cancel_thread_start(struct _pthread_cleanup_buffer *hook);
/* pthread_cancel's side: wake t if it is parked where a cancel ends the wait. */
void cancel_wake(struct ult *t, bool async);
/* Around a blocking call of the C library that is a cancellation point
 * (blocking.c, sem.c): enter acts on a pending request, then marks the
 * thread so that pthread_cancel interrupts the call by signalling its
 * kernel thread (whose handler unwinds it if the call is still inside the
 * C library).  leave unmarks it and, if the call failed with EINTR, acts on
 * a pending request.  Returns/takes the VP marked (NULL for a foreign
 * thread, which is checked only before and after the call).  undo(arg),
 * if not NULL, restores the caller's invariants before an unwind from
 * enter or from the handler (sem.c: unregister a waiter). */
struct vproc *cancel_syscall_enter(void (*undo)(void *), void *arg);
/* struct vp_cancel's reset in the forked child (vproc_parts). */
void cancel_vp_fork_child(struct vproc *v, struct ult *self);
/* The monitor's side of asynchronous requests: while one is owed, look
 * often and signal each VP whose thread has one still to act on. */
bool cancel_async_owed(void);
void cancel_async_watch(struct vproc *v);
void cancel_syscall_leave(struct vproc *v, bool eintr);
/* A signal handler switches its thread out of v inside a marked call:
 * drop v's mark (true if there was one) into *m, to be put back on the VP
 * where the thread resumes, since the handler returns into the call there. */
struct cancel_mark {
	void (*undo)(void *);
	void *arg;
};
bool cancel_mark_drop(struct vproc *v, struct ult *self, struct cancel_mark *m);
void cancel_mark_restore(struct vproc *v, struct ult *self, const struct cancel_mark *m);
/* Unwind the calling thread to its landing point (unwind.c), running the
 * cleanup handlers and destructors of its frames; then ult_finish.  The
 * caller has set CANCEL_ACTING and self->result. */
_Noreturn void ult_unwind(void);
/* Load the unwinder (libgcc_s) if it is not loaded yet; fatal if missing. */
void unwind_prepare(void);
/* ult_entry: its landing buffer (a jmp_buf in its frame) for ult_unwind. */
void unwind_set_landing(struct ult *self, void *jmpbuf);
/* The end of every thread: destructors, then off its stack (thread.c). */
_Noreturn void ult_finish(struct ult *self);

#endif
