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
 *  - pshared_wait never blocks a shared VP in the kernel: the thread it
 *    waits for may be a ULT queued on that very VP (always so with one VP),
 *    and a VP blocked in the kernel neither runs its queue, nor lets it be
 *    stolen, nor fires its timers.  A ULT on a shared VP polls instead,
 *    sleeping as a ULT between looks (20 us doubling to 1 ms), so the VP
 *    keeps running other threads.  Only a thread that owns its kernel
 *    thread (foreign, or bound to its own VP) waits on the shared futex, in
 *    slices of at most SLICE_NS.
 *
 * The raw futex calls belong in vpdep (futex.c); vpdep's futex_wait is
 * process-private.  See docs/sync.md, "Missing pieces". */
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "parklot.h"
#include "pthread_impl.h"

#define NBUCKETS 64
#define SLICE_NS 1000000       /* kernel wait between two looks (foreign/bound) */
#define NAP_MIN_NS 20000       /* a ULT's first poll interval ... */
#define NAP_MAX_NS 1000000     /* ... doubling up to this */

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

/* A thread that may block its kernel thread in the kernel: a foreign one,
 * or one bound to a VP of its own (PTHREAD_SCOPE_SYSTEM). */
static bool owns_kthread(void)
{
	struct vproc *self = (struct vproc *)vp_current();
	return self == NULL || self->bound_to != NULL;
}

static int wait_common(_Atomic uint32_t *addr, uint32_t val, int64_t deadline_ns, bool cp)
{
	int64_t nap = NAP_MIN_NS;
	for (;;) {
		if (atomic_load_explicit(addr, memory_order_acquire) != val)
			return 0;
		int64_t now = clock_now_ns(CLOCK_MONOTONIC);
		if (deadline_ns >= 0 && now >= deadline_ns)
			return ETIMEDOUT;
		if (!owns_kthread()) {
			/* Poll, sleeping as a ULT: the VP runs others meanwhile. */
			int64_t until = now + nap;
			if (deadline_ns >= 0 && deadline_ns < until)
				until = deadline_ns;
			if (!cp)
				sched_sleep_until(until);
			else if (sched_sleep_until_cp(until) == ECANCELED)
				return ECANCELED;
			if (nap < NAP_MAX_NS)
				nap *= 2;
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

int pshared_wait(_Atomic uint32_t *addr, uint32_t val, int64_t deadline_ns)
{
	return wait_common(addr, val, deadline_ns, false);
}

int pshared_wait_cp(_Atomic uint32_t *addr, uint32_t val, int64_t deadline_ns)
{
	return wait_common(addr, val, deadline_ns, true);
}

void pshared_wake(_Atomic uint32_t *addr, int n)
{
	int saved = errno;
	syscall(SYS_futex, addr, FUTEX_WAKE, n, NULL, NULL, 0);
	errno = saved;
}

/* In a forked child: the threads parked here are gone, and a bucket lock
 * may have been held by one of them. */
void parklot_atfork_child(void)
{
	for (size_t i = 0; i < NBUCKETS; i++) {
		spin_init(&buckets[i].lock);
		buckets[i].q.head = buckets[i].q.tail = NULL;
	}
}
