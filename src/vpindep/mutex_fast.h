/* The uncontended lock, trylock and unlock of the default mutex kinds, inline in
 * their exports (src/preload/interpose.c) and in libppl's own callers, so
 * that the hot path is the export itself: no forwarding call, no frame.
 * Anything else (a hook, another kind, a held mutex, waiters, a deferred
 * preemption) goes to mutex.c by a real call, which keeps the export's
 * frame, under its API name, in a parked thread's backtrace.
 *
 * mutex.c's layout and invariants: the state word at offset 0 (0 free,
 * 1 locked, 2 locked and maybe waiters), glibc's __kind at offset 16.
 * While the process runs one kernel thread (glibc's flag), nobody sees a
 * mutex between a load and a store, so no bus lock: as glibc's. */
#ifndef PPL_MUTEX_FAST_H
#define PPL_MUTEX_FAST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/single_threaded.h>

#include "config.h"

/* mutex.c: the rest of lock and unlock (everything but the above). */
int ppl_mutex_lock_slow(pthread_mutex_t *m);
int ppl_mutex_trylock_slow(pthread_mutex_t *m);
int ppl_mutex_unlock_slow(pthread_mutex_t *m);

/* schedhooks.h's and preempt.h's, for the two tests below. */
extern unsigned char ppl_hooks __attribute__((visibility("hidden")));
extern _Atomic int preempt_npending __attribute__((visibility("hidden")));

/* No hook on (a seeded schedule counts every entry point) and a default
 * kind (PTHREAD_MUTEX_TIMED_NP or _ADAPTIVE_NP). */
static inline _Bool mutex_fast_kind(const pthread_mutex_t *m)
{
	int kind = __atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED);
	return !PPL_DEBUG_CHECKS && __builtin_expect(ppl_hooks == 0, 1) &&
	       (kind == PTHREAD_MUTEX_TIMED_NP || kind == PTHREAD_MUTEX_ADAPTIVE_NP);
}

/* true if it took m, uncontended. */
static inline _Bool mutex_lock_fast(pthread_mutex_t *m)
{
	_Atomic uint32_t *state = (_Atomic uint32_t *)(void *)m;
	if (!__builtin_expect(mutex_fast_kind(m), 1))
		return 0;
	if (__libc_single_threaded) {
		if (atomic_load_explicit(state, memory_order_relaxed) != 0)
			return 0;
		atomic_store_explicit(state, 1, memory_order_relaxed);
		return 1;
	}
	uint32_t zero = 0;
	return atomic_compare_exchange_strong_explicit(state, &zero, 1, memory_order_acquire,
						       memory_order_relaxed);
}

/* true if it released m: no waiter, no deferred preemption to pay. */
static inline _Bool mutex_unlock_fast(pthread_mutex_t *m)
{
	_Atomic uint32_t *state = (_Atomic uint32_t *)(void *)m;
	if (!__builtin_expect(mutex_fast_kind(m) &&
			      atomic_load_explicit(&preempt_npending, memory_order_relaxed) == 0, 1))
		return 0;
	if (__libc_single_threaded) {
		if (atomic_load_explicit(state, memory_order_relaxed) != 1)
			return 0;
		atomic_store_explicit(state, 0, memory_order_relaxed);
		return 1;
	}
	uint32_t one = 1;
	return atomic_compare_exchange_strong_explicit(state, &one, 0, memory_order_release,
						       memory_order_relaxed);
}

/* Macros, not inline functions: the slow call is then the export's own,
 * and gdb shows its frame as pthread_mutex_lock, not as an inlined
 * ppl_pthread_mutex_lock at the same address (test/debug/check_gdb.sh). */
#define ppl_pthread_mutex_lock(m)                                                \
	({                                                                       \
		pthread_mutex_t *ppl_m_ = (m);                                   \
		__builtin_expect(mutex_lock_fast(ppl_m_), 1) ? 0 : ppl_mutex_lock_slow(ppl_m_); \
	})
#define ppl_pthread_mutex_trylock(m)                                             \
	({                                                                       \
		pthread_mutex_t *ppl_m_ = (m);                                   \
		__builtin_expect(mutex_lock_fast(ppl_m_), 1) ? 0 : ppl_mutex_trylock_slow(ppl_m_); \
	})
#define ppl_pthread_mutex_unlock(m)                                              \
	({                                                                       \
		pthread_mutex_t *ppl_m_ = (m);                                   \
		__builtin_expect(mutex_unlock_fast(ppl_m_), 1) ? 0 : ppl_mutex_unlock_slow(ppl_m_); \
	})

#endif
