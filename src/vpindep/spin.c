/* pthread_spin_*: glibc's 4-byte spin lock (0 free, 1 held).
 *
 * Invariants
 *  - One exchange to take the lock, one release store to drop it.
 *  - A waiter spins on plain loads (no cache-line ping-pong) for a bounded
 *    time, then yields its VP: the holder may be a ULT preempted on this
 *    very VP (it is not running, so spinning longer cannot help).  With a
 *    single VP the holder can never run while we spin, so yield at once. */
#include "preempt.h"
#include "runtime.h"
#include "schedhooks.h"
#include "scheduler.h"

#define SPINS 1000        /* polls between yields when another VP may run the holder */

_Static_assert(sizeof(_Atomic int) == sizeof(pthread_spinlock_t), "spinlock overlay size");
_Static_assert(_Alignof(_Atomic int) <= _Alignof(pthread_spinlock_t), "spinlock overlay alignment");

static inline _Atomic int *W(pthread_spinlock_t *l)
{
	return (_Atomic int *)l;
}

/* glibc ignores pshared: the lock word works across processes as it is. */
int ppl_pthread_spin_init(pthread_spinlock_t *l, int pshared)
{
	(void)pshared;
	atomic_store_explicit(W(l), 0, memory_order_relaxed);
	return 0;
}

int ppl_pthread_spin_destroy(pthread_spinlock_t *l)
{
	(void)l;
	return 0;
}

int ppl_pthread_spin_lock(pthread_spinlock_t *l)
{
	sched_point();
	_Atomic int *w = W(l);
	while (atomic_exchange_explicit(w, 1, memory_order_acquire) != 0) {
		int spins = ppl_rt.nvps > 1 ? SPINS : 0;
		for (int i = 0; atomic_load_explicit(w, memory_order_relaxed) != 0; i++) {
			if (i < spins) {
				cpu_relax();
			} else {
				sched_yield_ult();
				/* A point where the thread may move, and may
				 * never leave libppl otherwise: a signal held
				 * here runs (its handler may be what frees the
				 * lock, or end the thread: the Open POSIX test
				 * pthread_spin_lock/1-1 timed out). */
				preempt_point();
				i = 0;
			}
		}
	}
	return 0;
}

int ppl_pthread_spin_trylock(pthread_spinlock_t *l)
{
	sched_point();
	return atomic_exchange_explicit(W(l), 1, memory_order_acquire) == 0 ? 0 : EBUSY;
}

int ppl_pthread_spin_unlock(pthread_spinlock_t *l)
{
	sched_point();
	atomic_store_explicit(W(l), 0, memory_order_release);
	preempt_point();
	return 0;
}
