/* Test-and-test-and-set spin lock on C11 atomics, with a pause hint and no
 * kernel call.  An all-zero word is an unlocked lock, so it can live inside
 * statically initialised pthread objects.  The calling VP counts the locks
 * it holds, so that an application's signal handler is not run inside
 * them (sigdefer.c): the count goes up before the lock is taken and down
 * after it is released. */
#ifndef PPL_SPINLOCK_H
#define PPL_SPINLOCK_H

#include <stdatomic.h>
#include <stdbool.h>

#include "cpu_relax.h"

typedef _Atomic int spin_t;

/* For the state fork's handlers write on both sides of a fork (the locks
 * held across it, what the child resets) and the little the child's
 * handlers only read: one section for all of it, so that after a fork the
 * parent's writes fault on one page (fork write-protects every private
 * page) and the child copies as few, instead of a page per file
 * (docs/benchmarks.md, fork).  Keep it small (2.3 KiB): big tables the
 * child resets go elsewhere, reset with PPL_RESET below. */
#define PPL_FORK_STATE __attribute__((section("ppl_fork_state")))

/* sigdefer.c: one more, one fewer lock held by the calling VP (inline,
 * defined in vpdep.h once struct vp is). */
static inline void vp_crit_enter(void);
static inline void vp_crit_leave(void);

static inline void spin_init(spin_t *l)
{
	atomic_store_explicit(l, 0, memory_order_relaxed);
}

/* In fork's child: fork write-protected every private page, and a store
 * copies its page even when it changes nothing, so the child's resets
 * store only what differs (docs/benchmarks.md, fork). */
#define PPL_RESET(lv, val)                      \
	do {                                    \
		if ((lv) != (val))              \
			(lv) = (val);           \
	} while (0)

static inline void spin_reset(spin_t *l)
{
	if (atomic_load_explicit(l, memory_order_relaxed) != 0)
		atomic_store_explicit(l, 0, memory_order_relaxed);
}

static inline bool spin_acquire(spin_t *l)
{
	return atomic_load_explicit(l, memory_order_relaxed) == 0 &&
	       atomic_exchange_explicit(l, 1, memory_order_acquire) == 0;
}

static inline bool spin_try_lock(spin_t *l)
{
	vp_crit_enter();
	if (spin_acquire(l))
		return true;
	vp_crit_leave();
	return false;
}

/* Set in a forked child while it runs a single thread: a lock in private
 * memory found held then belongs to a thread that did not survive fork (a
 * holder that was in a critical section on another kernel thread), so the
 * waiter takes it over instead of spinning forever.  A lock in shared
 * memory (a process-shared object's) is another process's to release.
 * Read only when the lock has been busy for SPIN_LONG rounds. */
extern _Atomic bool spin_orphans;

/* vp.c: the lock has been busy for SPIN_LONG rounds.  spin_orphan_take:
 * true if it was an orphan (above), now the caller's.  spin_wait_long: its
 * holder may be preempted on this CPU (by a real-time spinner, for good):
 * let it run. */
bool spin_orphan_take(spin_t *l);
void spin_wait_long(void);
#define SPIN_LONG 4096

static inline void spin_lock(spin_t *l)
{
	vp_crit_enter();
	while (!spin_acquire(l)) {
		unsigned rounds = 0;
		while (atomic_load_explicit(l, memory_order_relaxed) != 0) {
			cpu_relax();
			if (__builtin_expect(++rounds == SPIN_LONG, 0)) {
				if (__builtin_expect(atomic_load_explicit(&spin_orphans, memory_order_relaxed), 0) &&
				    spin_orphan_take(l))
					return;
				spin_wait_long();
				rounds = 0;
			}
		}
	}
}

static inline void spin_unlock(spin_t *l)
{
	atomic_store_explicit(l, 0, memory_order_release);
	vp_crit_leave();
}

/* vp_crit_enter and vp_crit_leave, for a file that includes this one alone. */
#include "vpdep.h"

#endif
