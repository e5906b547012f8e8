/* pthread_once.
 *
 * The 4-byte pthread_once_t cannot hold a wait queue: concurrent callers
 * park in the address-keyed parking lot (parklot.c) until the initialiser
 * returns.
 *
 * Invariants
 *  - The word goes 0 (PTHREAD_ONCE_INIT) -> IN_PROGRESS (by the one caller
 *    whose CAS succeeds) -> DONE, with WAITERS or'ed in by any caller that
 *    is about to park.  The values of 0, IN_PROGRESS and DONE are glibc's.
 *  - A cancelled initialiser (a cleanup handler) puts the word back to 0
 *    and wakes the waiters, as glibc does: pthread_once is not done.
 *  - DONE is stored with release order after the initialiser returns; every
 *    return path of a caller that did not run it has read DONE with acquire
 *    order, so the initialiser's effects are visible.
 *  - A waiter parks only while the word still reads IN_PROGRESS|WAITERS
 *    (checked under the bucket lock); the initialiser, if it saw WAITERS in
 *    its exchange to DONE, wakes the bucket after that store. */
#include "base.h"
#include "parklot.h"

#define ONCE_IN_PROGRESS 1u
#define ONCE_DONE        2u
#define ONCE_WAITERS     8u     /* glibc uses 4 and up for its fork generation */

_Static_assert(sizeof(_Atomic uint32_t) == sizeof(pthread_once_t), "once overlay size");
_Static_assert(_Alignof(_Atomic uint32_t) <= _Alignof(pthread_once_t), "once overlay alignment");

/* The initialiser was cancelled (or exited its thread): as if it never
 * ran, so that the next caller runs it; waiters wake to compete for that. */
static void once_abandoned(void *arg)
{
	_Atomic uint32_t *w = arg;
	if (atomic_exchange_explicit(w, 0, memory_order_release) & ONCE_WAITERS)
		parklot_wake_all(w);
}

static int once_slow(_Atomic uint32_t *w, void (*init)(void))
{
	for (;;) {
		uint32_t s = atomic_load_explicit(w, memory_order_acquire);
		if (s == ONCE_DONE)
			return 0;
		if (s == 0) {
			if (!atomic_compare_exchange_strong_explicit(w, &s, ONCE_IN_PROGRESS,
					memory_order_acquire, memory_order_acquire))
				continue;
			struct _pthread_cleanup_buffer cb;
			ppl__pthread_cleanup_push(&cb, once_abandoned, (void *)w);
			init();
			ppl__pthread_cleanup_pop(&cb, 0);
			s = atomic_exchange_explicit(w, ONCE_DONE, memory_order_acq_rel);
			if (s & ONCE_WAITERS)
				parklot_wake_all(w);
			return 0;
		}
		if ((s & ONCE_WAITERS) == 0 &&
		    !atomic_compare_exchange_strong_explicit(w, &s, s | ONCE_WAITERS,
				memory_order_relaxed, memory_order_relaxed))
			continue;
		parklot_wait(w, s | ONCE_WAITERS);
	}
}

int ppl_pthread_once(pthread_once_t *o, void (*init)(void))
{
	_Atomic uint32_t *w = (_Atomic uint32_t *)o;
	if (ppl_likely(atomic_load_explicit(w, memory_order_acquire) == ONCE_DONE))
		return 0;
	return once_slow(w, init);
}
