/* Waiting on a bare 32-bit word, for the synchronisation objects:
 *  - parklot_*: user-level parking keyed by address, for objects too small to
 *    hold a wait queue (pthread_once_t).  Never a kernel call between ULTs.
 *  - pshared_*: waits for PTHREAD_PROCESS_SHARED objects, whose wait queues
 *    cannot hold pointers valid in another process: a shared kernel futex,
 *    waited on by one user thread of the process per word while the others
 *    park behind it (see parklot.c and docs/sync.md). */
#ifndef PPL_PARKLOT_H
#define PPL_PARKLOT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* Park the calling thread while *addr == val (checked under the bucket lock,
 * so a parklot_wake_all that follows a store to *addr is never lost).  May
 * return spuriously: the caller re-checks its condition. */
void parklot_wait(_Atomic uint32_t *addr, uint32_t val);
/* Wake every thread parked on addr (and possibly others hashed alike). */
void parklot_wake_all(_Atomic uint32_t *addr);

/* Block until *addr != val, or until clock clk reads abstime (NULL: no
 * deadline; the caller has checked it).  Returns 0 (value seen changed, or
 * spuriously) or ETIMEDOUT, never before clk has reached abstime. */
int pshared_wait(_Atomic uint32_t *addr, uint32_t val, const struct timespec *abstime,
		 clockid_t clk);
/* The same as a cancellation point: ECANCELED when pthread_cancel ends
 * the wait (the caller restores its invariants, then calls cancel_act). */
int pshared_wait_cp(_Atomic uint32_t *addr, uint32_t val, const struct timespec *abstime,
		    clockid_t clk);
/* Wake up to n kernel-level waiters on addr, in any process; each one
 * woken in a process under libppl releases one of its waiters there, or
 * all of them if the word changed for them. */
void pshared_wake(_Atomic uint32_t *addr, int n);
struct ult;
/* pthread_cancel's side: if t waits in the kernel in pshared_wait (a
 * cancellation point, or any with async), end that wait; true then, and
 * t acts on the request on its way out. */
bool pshared_interrupt(struct ult *t, bool async);

/* Forked child: empty every bucket and reset its lock. */
void parklot_atfork_child(void);

#endif
