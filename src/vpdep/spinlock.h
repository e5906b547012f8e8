/* Test-and-test-and-set spin lock on C11 atomics, with a pause hint and no
 * kernel call.  An all-zero word is an unlocked lock, so it can live inside
 * statically initialised pthread objects. */
#ifndef PPL_SPINLOCK_H
#define PPL_SPINLOCK_H

#include <stdatomic.h>
#include <stdbool.h>

#include "cpu_relax.h"

typedef _Atomic int spin_t;

static inline void spin_init(spin_t *l)
{
	atomic_store_explicit(l, 0, memory_order_relaxed);
}

static inline bool spin_try_lock(spin_t *l)
{
	return atomic_load_explicit(l, memory_order_relaxed) == 0 &&
	       atomic_exchange_explicit(l, 1, memory_order_acquire) == 0;
}

static inline void spin_lock(spin_t *l)
{
	while (!spin_try_lock(l))
		while (atomic_load_explicit(l, memory_order_relaxed) != 0)
			cpu_relax();
}

static inline void spin_unlock(spin_t *l)
{
	atomic_store_explicit(l, 0, memory_order_release);
}

#endif
