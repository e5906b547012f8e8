/* pthread_barrier_* and pthread_barrierattr_*.
 *
 * Invariants
 *  - `arrived` counts the threads of the current round, under b->lock.  The
 *    thread that makes it reach `count` resets it to 0, pops every waiter
 *    of the round from q and wakes them after dropping the lock: it returns
 *    PTHREAD_BARRIER_SERIAL_THREAD, they return 0.  So when the lock is
 *    free again q holds only threads of the next round, and a barrier is
 *    reusable at once: a thread of round N+1 can never be taken for one of
 *    round N.  The last arriver also counts the round (flags / BF_ROUND)
 *    for the one case where a waiter is off the queue: pthread_kill took it
 *    off (EINTR) so that its handler runs; it re-queues itself unless its
 *    round completed meanwhile.  The round count lives in the spare bits of
 *    `flags` (read under b->lock only) because the overlay has no room left.
 *  - A woken waiter never touches b again, so b can be destroyed as soon as
 *    the round completes (a signalled waiter does re-take b->lock once
 *    after its handler: a barrier freed at that moment is the one window
 *    left, docs/posix.md).  pthread_barrier_destroy with a round in progress
 *    waits (parked on q, uncounted) until it completes, like glibc's.
 *  - Process-shared barriers never use q: its first word is a generation
 *    count, bumped (release) by the last arriver before a shared futex wake;
 *    waiters block until it differs from the value read under b->lock. */
#include <string.h>

#include "base.h"
#include "parklot.h"
#include "preempt.h"
#include "schedhooks.h"
#include "scheduler.h"
#include "ult.h"
#include "waitq.h"

#define BF_PSHARED 1u
#define BF_ROUND   2u   /* flags / BF_ROUND: rounds completed (private; under lock) */
#define MAX_COUNT  (INT_MAX - 1u)   /* glibc refuses INT_MAX and above */

struct barrier {
	spin_t lock;                /* protects arrived and q */
	uint32_t count;             /* threads per round; set at init */
	uint32_t arrived;           /* threads of the current round so far */
	uint32_t flags;             /* BF_PSHARED (set at init); the round count (under lock) */
	union {
		struct waitq q;     /* private: waiters of the current round */
		_Atomic uint32_t gen; /* pshared: rounds completed */
	} u;
};

_Static_assert(sizeof(struct barrier) == sizeof(pthread_barrier_t), "barrier overlay size");
_Static_assert(_Alignof(struct barrier) <= _Alignof(pthread_barrier_t), "barrier overlay alignment");

struct barrierattr {
	int pshared;
};

_Static_assert(sizeof(struct barrierattr) == sizeof(pthread_barrierattr_t), "barrierattr size");
_Static_assert(_Alignof(struct barrierattr) <= _Alignof(pthread_barrierattr_t), "barrierattr align");

static inline struct barrier *B(pthread_barrier_t *b)
{
	return (struct barrier *)b;
}

int ppl_pthread_barrier_init(pthread_barrier_t *pb, const pthread_barrierattr_t *a, unsigned count)
{
	if (count == 0 || count > MAX_COUNT)
		return EINVAL;
	struct barrier *b = B(pb);
	memset(b, 0, sizeof *b);
	b->count = count;
	if (a && ((const struct barrierattr *)a)->pshared == PTHREAD_PROCESS_SHARED)
		b->flags = BF_PSHARED;
	return 0;
}

/* Called with b->lock held. */
static int wait_pshared(struct barrier *b)
{
	if (++b->arrived == b->count) {
		b->arrived = 0;
		atomic_fetch_add_explicit(&b->u.gen, 1, memory_order_release);
		spin_unlock(&b->lock);
		pshared_wake(&b->u.gen, INT_MAX);
		return PTHREAD_BARRIER_SERIAL_THREAD;
	}
	uint32_t gen = atomic_load_explicit(&b->u.gen, memory_order_relaxed);
	spin_unlock(&b->lock);
	while (atomic_load_explicit(&b->u.gen, memory_order_acquire) == gen)
		(void)pshared_wait(&b->u.gen, gen, NULL, CLOCK_MONOTONIC);
	return 0;
}

int ppl_pthread_barrier_wait(pthread_barrier_t *pb)
{
	sched_point();
	struct barrier *b = B(pb);
	spin_lock(&b->lock);
	if (b->flags & BF_PSHARED)
		return wait_pshared(b);
	if (++b->arrived < b->count) {
		uint32_t round = b->flags / BF_ROUND;
		for (;;) {
			waitq_push(&b->u.q, ult_self());
			int err = sched_park_flags(&b->lock, &b->u.q, NULL, CLOCK_MONOTONIC, PARK_INTR);
			if (err == 0)
				return 0;
			ppl_assert(err == EINTR);
			/* A signal took us off the queue (still counted in
			 * `arrived`): wait again unless our round completed
			 * meanwhile. */
			spin_lock(&b->lock);
			if (b->flags / BF_ROUND != round) {
				spin_unlock(&b->lock);
				return 0;
			}
		}
	}
	b->arrived = 0;
	b->flags += BF_ROUND;
	struct ult *chain = NULL, *t;
	/* Popped threads stay BLOCKED until sched_wake: their link is ours. */
	while ((t = waitq_pop(&b->u.q)) != NULL) {
		t->next = chain;
		chain = t;
	}
	spin_unlock(&b->lock);
	while (chain) {
		t = chain;
		chain = t->next;
		sched_wake(t);
	}
	preempt_point();
	return PTHREAD_BARRIER_SERIAL_THREAD;
}

int ppl_pthread_barrier_destroy(pthread_barrier_t *pb)
{
	struct barrier *b = B(pb);
	spin_lock(&b->lock);
	if (b->arrived == 0) {
		spin_unlock(&b->lock);
		return 0;
	}
	/* A round is in progress: wait for its last thread, as glibc does. */
	if (b->flags & BF_PSHARED) {
		uint32_t gen = atomic_load_explicit(&b->u.gen, memory_order_relaxed);
		spin_unlock(&b->lock);
		while (atomic_load_explicit(&b->u.gen, memory_order_acquire) == gen)
			(void)pshared_wait(&b->u.gen, gen, NULL, CLOCK_MONOTONIC);
		return 0;
	}
	waitq_push(&b->u.q, ult_self());
	int err = sched_park(&b->lock, &b->u.q, NULL, CLOCK_MONOTONIC);
	ppl_assert(err == 0);
	return 0;
}

int ppl_pthread_barrierattr_init(pthread_barrierattr_t *a)
{
	((struct barrierattr *)a)->pshared = PTHREAD_PROCESS_PRIVATE;
	return 0;
}

int ppl_pthread_barrierattr_destroy(pthread_barrierattr_t *a)
{
	(void)a;
	return 0;
}

int ppl_pthread_barrierattr_setpshared(pthread_barrierattr_t *a, int pshared)
{
	if (pshared != PTHREAD_PROCESS_PRIVATE && pshared != PTHREAD_PROCESS_SHARED)
		return EINVAL;
	((struct barrierattr *)a)->pshared = pshared;
	return 0;
}

int ppl_pthread_barrierattr_getpshared(const pthread_barrierattr_t *a, int *pshared)
{
	*pshared = ((const struct barrierattr *)a)->pshared;
	return 0;
}
