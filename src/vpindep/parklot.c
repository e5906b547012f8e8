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
 *  - Process-shared waits (pshared_wait) must wait in the kernel, where
 *    a waker in another process can reach them.  A thread that owns its
 *    kernel thread (foreign, or bound to a VP of its own) simply does.  Of
 *    the user threads of this process waiting on one word for one value,
 *    one at a time leads: it waits in the kernel, announced (sys_enter),
 *    so the monitor lends its VP's queue to a spare meanwhile.  The others
 *    follow: they park on the bucket's queue (pwait, pwait_val) while a
 *    leader's watch for that word and value is linked on the bucket.  So
 *    N waiters cost one blocked kernel thread, not N, and none polls.
 *    Waiters for another value (a barrier's next round, say) have a leader
 *    of their own: the old leader's wake-up ends only its own followers.
 *  - Whoever leaves a wait (its leader returning, or a follower that found
 *    the word changed, timed out or was cancelled) and finds no leader for
 *    its word and value, under the bucket lock, wakes its first follower, which
 *    leads in turn or leaves and passes the baton on.  A follower parks
 *    only while a leader exists and the word still holds its value, both
 *    checked under the lock, so none is left behind without a leader.
 *    A wake-up for one waiter (a cond signal, a sem post) that reaches a
 *    leader thus releases one thread of this process; a broadcast, which
 *    changes the word, releases them all one after the other.
 *  - A kernel wait is interrupted by pthread_cancel through the thread's
 *    private word kintr, which futex_waitv watches beside the shared word:
 *    the canceller sets the request and then reads kwait, the waiter sets
 *    kwait and then reads the request (both seq_cst), so the request is
 *    either seen before the wait or ends it.
 *
 * The futex calls are vpdep's (futex.c).  See docs/sync.md. */
#include "base.h"
#include "cancel.h"
#include "monitor.h"
#include "parklot.h"
#include "preempt.h"
#include "runtime.h"
#include "scheduler.h"
#include "ult.h"
#include "vproc.h"
#include "waitq.h"

#define NBUCKETS 64
#define SLICE_NS 1000000       /* without futex_waitv: a cancel is seen this late */
#define KWAIT_ON 4             /* ult.kwait: in kernel_wait (with PARK_CP or not) */

struct bucket {
	spin_t lock;           /* protects q and watches */
	struct waitq q;        /* parklot_wait's threads and pshared followers */
	struct watch *watches; /* pshared leaders, one per word at most */
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
	self->pwait = NULL;   /* not a pshared follower (next_leader) */
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

/* ---- process-shared waits -------------------------------------------------------- */

/* A leader's mark on its bucket: it waits in the kernel while *addr ==
 * val, for the threads of this process that wait for the same (parked on
 * the bucket's queue with pwait == addr, pwait_val == val).  Lives on the
 * leader's stack, linked only while it is in pshared_wait. */
struct watch {
	const void *addr;
	uint32_t val;
	struct watch *next;
};

static struct watch **watch_of(struct bucket *b, const void *addr, uint32_t val)
{
	struct watch **w = &b->watches;
	while (*w != NULL && ((*w)->addr != addr || (*w)->val != val))
		w = &(*w)->next;
	return w;
}

/* Under b->lock, with no leader for (addr, val): take its first follower
 * off the queue; it becomes the leader, or leaves and passes the baton. */
static struct ult *next_leader(struct bucket *b, const void *addr, uint32_t val)
{
	for (struct ult *t = b->q.head; t != NULL; t = t->next)
		if (t->pwait == addr && t->pwait_val == val && t->fork_gen == ppl_rt.fork_gen) {
			waitq_remove(&b->q, t);
			return t;
		}
	return NULL;
}

/* One kernel-level wait of the calling thread while *addr == val: until a
 * wake-up, the deadline, or pthread_cancel bumps self->kintr (cp: a
 * deferred request; any wait for an asynchronous one).  On a VP shared
 * with other threads the call is announced, so the monitor lends their
 * queue to a spare meanwhile.  0, ETIMEDOUT or ECANCELED. */
static int kernel_wait(struct ult *self, _Atomic uint32_t *addr, uint32_t val,
		       int64_t deadline_ns, bool cp)
{
	static _Atomic bool no_waitv;   /* Linux < 5.16: slices, cancel seen between */
	uint32_t intr = atomic_load_explicit(&self->kintr, memory_order_seq_cst);
	atomic_store_explicit(&self->kwait, KWAIT_ON | (cp ? PARK_CP : 0), memory_order_seq_cst);
	int saved = errno;   /* pthread_* calls never change errno */
	struct timespec ts = ns_to_timespec(deadline_ns);
	struct vproc *v = sys_enter();
	int err;
	for (;;) {
		/* An asynchronous request made before the wait began was not
		 * sent to kintr: its caller acts (cancel_async_check). */
		if ((cp || (atomic_load_explicit(&self->cancel, memory_order_seq_cst) & CANCEL_ASYNC)) &&
		    cancel_requested(self)) {
			err = ECANCELED;
			break;
		}
		if (!atomic_load_explicit(&no_waitv, memory_order_relaxed)) {
			err = futex_wait_either(addr, val, &self->kintr, intr,
						deadline_ns >= 0 ? &ts : NULL);
			if (err != ENOSYS)
				goto got;
			atomic_store_explicit(&no_waitv, true, memory_order_relaxed);
		}
		int64_t slice = clock_now_ns(CLOCK_MONOTONIC) + SLICE_NS;
		struct timespec sts = ns_to_timespec(deadline_ns >= 0 && deadline_ns < slice
						     ? deadline_ns : slice);
		err = futex_wait_shared(addr, val, &sts);
		if (err == ETIMEDOUT && (deadline_ns < 0 || deadline_ns > slice))
			continue;   /* a slice, not the deadline */
got:
		if (err == EINTR)
			continue;   /* a signal's handler ran on this kernel thread */
		if (err != ETIMEDOUT)
			err = cp && cancel_requested(self) ? ECANCELED : 0;
		break;
	}
	sys_leave(v);
	errno = saved;
	atomic_store_explicit(&self->kwait, 0, memory_order_seq_cst);
	return err;
}

bool pshared_interrupt(struct ult *t, bool async)
{
	int k = atomic_load_explicit(&t->kwait, memory_order_seq_cst);
	if (k == 0 || (!async && !(k & PARK_CP)))
		return false;
	atomic_fetch_add_explicit(&t->kintr, 1, memory_order_seq_cst);
	futex_wake(&t->kintr, 1);
	return true;
}

static int wait_until(_Atomic uint32_t *addr, uint32_t val, int64_t deadline_ns, bool cp)
{
	preempt_release_before_wait();
	struct ult *self = ult_self();
	if (owns_kthread()) {
		/* Blocking the kernel thread blocks nobody else. */
		if (atomic_load_explicit(addr, memory_order_acquire) != val)
			return 0;
		int err = kernel_wait(self, addr, val, deadline_ns, cp);
		cancel_async_check();
		return err;
	}
	struct bucket *b = bucket_of(addr);
	struct timespec abstime = ns_to_timespec(deadline_ns);
	int flags = PARK_INTR | (cp ? PARK_CP : 0);
	int err;
	spin_lock(&b->lock);
	for (;;) {
		if (atomic_load_explicit(addr, memory_order_acquire) != val) {
			err = 0;
			break;
		}
		struct watch **w = watch_of(b, addr, val);
		if (*w == NULL) {
			struct watch mine = { .addr = addr, .val = val, .next = NULL };
			*w = &mine;
			spin_unlock(&b->lock);
			err = kernel_wait(self, addr, val, deadline_ns, cp);
			spin_lock(&b->lock);
			w = watch_of(b, addr, val);
			ppl_assert(*w == &mine);
			*w = mine.next;
			break;
		}
		self->pwait = addr;
		self->pwait_val = val;
		waitq_push(&b->q, self);
		err = sched_park_flags(&b->lock, &b->q, deadline_ns >= 0 ? &abstime : NULL,
				       CLOCK_MONOTONIC, flags);
		spin_lock(&b->lock);
		if (err != 0 && err != EINTR)
			break;   /* ETIMEDOUT, ECANCELED: off the queue already */
		/* Woken (the baton, or a wake_all of the bucket), or a signal's
		 * handler ran: look again. */
	}
	/* Leaving with followers and no leader: wake one to lead (or to leave
	 * too, if the word changed for it as well, passing the baton on). */
	struct ult *next = *watch_of(b, addr, val) == NULL ? next_leader(b, addr, val) : NULL;
	spin_unlock(&b->lock);
	if (next != NULL)
		sched_wake(next);
	cancel_async_check();
	return err;
}

/* The waits above are on CLOCK_MONOTONIC: one that ends before clk has
 * reached abstime (CLOCK_REALTIME set back meanwhile) waits again, as the
 * kernel's wait on clk would not have ended. */
static int wait_common(_Atomic uint32_t *addr, uint32_t val, const struct timespec *abstime,
		       clockid_t clk, bool cp)
{
	for (;;) {
		int err = wait_until(addr, val, abstime ? deadline_mono_ns(abstime, clk) : -1, cp);
		if (err != ETIMEDOUT || deadline_reached(abstime, clk))
			return err;
	}
}

int pshared_wait(_Atomic uint32_t *addr, uint32_t val, const struct timespec *abstime,
		 clockid_t clk)
{
	return wait_common(addr, val, abstime, clk, false);
}

int pshared_wait_cp(_Atomic uint32_t *addr, uint32_t val, const struct timespec *abstime,
		    clockid_t clk)
{
	return wait_common(addr, val, abstime, clk, true);
}

void pshared_wake(_Atomic uint32_t *addr, int n)
{
	int saved = errno;
	futex_wake_shared(addr, n);
	errno = saved;
}

/* In a forked child: the threads parked here are gone, and a bucket lock
 * may have been held by one of them. */
void parklot_atfork_child(void)
{
	for (size_t i = 0; i < NBUCKETS; i++) {
		spin_reset(&buckets[i].lock);
		PPL_RESET(buckets[i].q.head, NULL);
		PPL_RESET(buckets[i].q.tail, NULL);
		PPL_RESET(buckets[i].watches, NULL);
	}
}
