/* Address-keyed parking and process-shared waits (see parklot.h).
 *
 * Invariants
 *  - A parked thread is on the wait queue of bucket hash(addr), pushed under
 *    that bucket's lock after re-checking *addr == val under the same lock.
 *    A waker stores to *addr first, then takes the bucket lock, so either
 *    the waiter sees the new value or the waker sees the waiter.
 *  - Waiters of different addresses may share a bucket: wake_all wakes the
 *    whole bucket and the others re-check and park again.  Buckets are many
 *    and the users (pthread_once) rarely wait, so this is cheaper than
 *    keeping a key per waiter.
 *  - pshared_wait blocks its VP in the kernel only while no ULT is ready
 *    on any VP (it yields, running or stealing them, instead), and never
 *    for longer than SLICE_NS at a time: the thread it waits for may be a
 *    ready ULT of this very VP, or of one whose current thread is blocked
 *    in the kernel as well, which would otherwise never run.
 *
 * The raw futex calls belong in vpdep (futex.c); vpdep's futex_wait is
 * process-private.  See docs/sync.md, "Missing pieces". */
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "parklot.h"
#include "pthread_impl.h"

#define NBUCKETS 64
#define SLICE_NS 1000000       /* longest a pshared waiter keeps its VP blocked */

struct bucket {
	spin_t lock;           /* protects q */
	struct waitq q;
} __attribute__((aligned(64)));

static struct bucket buckets[NBUCKETS];

static struct bucket *bucket_of(const void *addr)
{
	uintptr_t a = (uintptr_t)addr;
	a ^= a >> 17;
	a *= 0x9e3779b97f4a7c15ULL;
	return &buckets[(a >> 58) % NBUCKETS];
}

void parklot_wait(_Atomic uint32_t *addr, uint32_t val)
{
	struct bucket *b = bucket_of(addr);
	struct ult *self = ult_self();
	spin_lock(&b->lock);
	if (atomic_load_explicit(addr, memory_order_relaxed) != val) {
		spin_unlock(&b->lock);
		return;
	}
	waitq_push(&b->q, self);
	int err = sched_park(&b->lock, &b->q, NULL, CLOCK_MONOTONIC);
	ppl_assert(err == 0);
}

void parklot_wake_all(_Atomic uint32_t *addr)
{
	struct bucket *b = bucket_of(addr);
	struct ult *chain = NULL, *t;
	spin_lock(&b->lock);
	/* Popped threads stay BLOCKED until sched_wake: their link is ours. */
	while ((t = waitq_pop(&b->q)) != NULL) {
		t->next = chain;
		chain = t;
	}
	spin_unlock(&b->lock);
	while (chain) {
		t = chain;
		chain = t->next;
		sched_wake(t);
	}
}

/* Is a ULT ready on any VP?  It may be the thread we wait for, queued on
 * this VP or on one whose current thread is blocked in the kernel too. */
static bool ready_work(void)
{
	struct vproc *self = (struct vproc *)vp_current();
	if (self == NULL)
		return false;         /* a foreign kernel thread runs no ULTs */
	if (self->bound_to)           /* a bound VP runs nobody else's threads */
		return atomic_load_explicit(&self->rq_len, memory_order_relaxed) > 0;
	for (int i = 0; i < ppl_rt.nvps_total; i++) {
		struct vproc *v = ppl_rt.vps[i];
		if (v && atomic_load_explicit(&v->rq_len, memory_order_relaxed) > 0)
			return true;
	}
	return false;
}

int pshared_wait(_Atomic uint32_t *addr, uint32_t val, int64_t deadline_ns)
{
	for (;;) {
		if (atomic_load_explicit(addr, memory_order_acquire) != val)
			return 0;
		int64_t now = clock_now_ns(CLOCK_MONOTONIC);
		if (deadline_ns >= 0 && now >= deadline_ns)
			return ETIMEDOUT;
		if (ready_work()) {
			/* Run (or steal) it rather than block the VP under it. */
			sched_yield_ult();
			continue;
		}
		int64_t until = now + SLICE_NS;
		if (deadline_ns >= 0 && deadline_ns < until)
			until = deadline_ns;
		struct timespec ts = ns_to_timespec(until);
		int saved = errno;   /* pthread_* calls never change errno */
		/* Shared (no FUTEX_PRIVATE_FLAG); absolute CLOCK_MONOTONIC. */
		syscall(SYS_futex, addr, FUTEX_WAIT_BITSET, val, &ts, NULL, FUTEX_BITSET_MATCH_ANY);
		errno = saved;
	}
}

void pshared_wake(_Atomic uint32_t *addr, int n)
{
	int saved = errno;
	syscall(SYS_futex, addr, FUTEX_WAKE, n, NULL, NULL, 0);
	errno = saved;
}
