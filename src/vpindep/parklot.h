/* Waiting on a bare 32-bit word, for the synchronisation objects:
 *  - parklot_*: user-level parking keyed by address, for objects too small to
 *    hold a wait queue (pthread_once_t).  Never a kernel call between ULTs.
 *  - pshared_*: waits for PTHREAD_PROCESS_SHARED objects, whose wait queues
 *    cannot hold pointers valid in another process: a shared kernel futex
 *    for threads that own their kernel thread, polling with ULT sleeps on a
 *    shared VP (see parklot.c and docs/sync.md). */
#ifndef PPL_PARKLOT_H
#define PPL_PARKLOT_H

#include <stdatomic.h>
#include <stdint.h>

/* Park the calling thread while *addr == val (checked under the bucket lock,
 * so a parklot_wake_all that follows a store to *addr is never lost).  May
 * return spuriously: the caller re-checks its condition. */
void parklot_wait(_Atomic uint32_t *addr, uint32_t val);
/* Wake every thread parked on addr (and possibly others hashed alike). */
void parklot_wake_all(_Atomic uint32_t *addr);

/* Block until *addr != val, or until the monotonic deadline (ns, -1: none)
 * passes.  Returns 0 (value seen changed, or spuriously) or ETIMEDOUT. */
int pshared_wait(_Atomic uint32_t *addr, uint32_t val, int64_t deadline_ns);
/* The same as a cancellation point: ECANCELED when pthread_cancel wakes a
 * polling thread (a thread owning its kernel thread is not woken). */
int pshared_wait_cp(_Atomic uint32_t *addr, uint32_t val, int64_t deadline_ns);
/* Wake up to n kernel-level waiters on addr, in any process. */
void pshared_wake(_Atomic uint32_t *addr, int n);

/* Forked child: empty every bucket and reset its lock. */
void parklot_atfork_child(void);

#endif
