/* Per-VP deadline heaps for timed waits and sleeps.
 *
 * Invariants: a timer is on at most one heap (tm->owner), and only while
 * TIMER_PENDING; heap and index change only under owner->timer_lock.
 * Firing pops the timer under the lock, marks it TIMER_FIRING, and calls
 * fire() without the lock; timer_cancel() waits out a firing timer, so once
 * it returns the timer's memory may be reused (its thread may wait again).
 * vp->next_deadline mirrors heap[0] so other VPs can look without the lock.
 * A timer for a CLOCK_REALTIME deadline (tm->realtime) found due before that
 * clock reached it stays, its monotonic deadline moved by what is left. */
#include <errno.h>
#include <stdlib.h>

#include "base.h"
#include "monitor.h"
#include "timer.h"
#include "ult.h"
#include "vproc.h"

static void set_at(struct vproc *v, size_t i, struct timer *tm)
{
	v->heap[i] = tm;
	tm->index = i;
}

static void sift_up(struct vproc *v, size_t i)
{
	struct timer *tm = v->heap[i];
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (v->heap[p]->deadline <= tm->deadline)
			break;
		set_at(v, i, v->heap[p]);
		i = p;
	}
	set_at(v, i, tm);
}

static void sift_down(struct vproc *v, size_t i)
{
	struct timer *tm = v->heap[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= v->heap_len)
			break;
		if (c + 1 < v->heap_len && v->heap[c + 1]->deadline < v->heap[c]->deadline)
			c++;
		if (tm->deadline <= v->heap[c]->deadline)
			break;
		set_at(v, i, v->heap[c]);
		i = c;
	}
	set_at(v, i, tm);
}

static void publish_next(struct vproc *v)
{
	int64_t d = v->heap_len ? v->heap[0]->deadline : INT64_MAX;
	atomic_store_explicit(&v->next_deadline, d, memory_order_release);
}

static void heap_delete(struct vproc *v, size_t i)
{
	struct timer *last = v->heap[--v->heap_len];
	if (i < v->heap_len) {
		set_at(v, i, last);
		sift_down(v, i);
		sift_up(v, last->index);
	}
	publish_next(v);
}

#define TIMER_HEAP_FIRST 64

/* Allocated by whoever makes the VP, not by its kernel thread: a kernel
 * thread's first malloc gives it a malloc arena of its own (64 MiB of
 * address space reserved, up to 8 per CPU), and each spare that armed a
 * timer made one: under RLIMIT_AS 1 GiB above the process, 1,000 threads
 * blocked in read() left no room for the spares they needed. */
int timer_heap_init(struct vproc *v)
{
	if (v->heap_cap >= TIMER_HEAP_FIRST)
		return 0;
	struct timer **h = realloc(v->heap, TIMER_HEAP_FIRST * sizeof *h);
	if (h == NULL)
		return ENOMEM;
	v->heap = h;
	v->heap_cap = TIMER_HEAP_FIRST;
	return 0;
}

void timer_arm(struct timer *tm, int64_t deadline, int64_t realtime, void (*fire)(struct timer *))
{
	struct vproc *v = (struct vproc *)vp_current();
	ppl_assert(v != NULL);
	tm->deadline = deadline;
	tm->realtime = realtime;
	tm->fire = fire;
	tm->owner = v;
	spin_lock(&v->timer_lock);
	if (v->heap_len == v->heap_cap) {
		size_t cap = v->heap_cap ? 2 * v->heap_cap : TIMER_HEAP_FIRST;
		/* timer_lock is held: no preemption in a replaced malloc (preempt.c) */
		struct timer **h = realloc(v->heap, cap * sizeof *h);
		if (h == NULL) {
			spin_unlock(&v->timer_lock);
			ppl_fatal("out of memory for the timer heap of VP %d", v->vp.id);
		}
		v->heap = h;
		v->heap_cap = cap;
	}
	atomic_store_explicit(&tm->state, TIMER_PENDING, memory_order_relaxed);
	set_at(v, v->heap_len++, tm);
	sift_up(v, tm->index);
	publish_next(v);
	bool first = tm->index == 0;
	spin_unlock(&v->timer_lock);
	if (first)
		monitor_note_timer(deadline);
}

void timer_cancel(struct timer *tm)
{
	if (tm->owner == NULL)
		return;
	/* Under the owner's lock, the owner it had then: retire.c may have
	 * moved the timer to VP 0's heap meanwhile (timer_move_all). */
	while (atomic_load_explicit(&tm->state, memory_order_acquire) == TIMER_PENDING) {
		struct vproc *v = tm->owner;
		spin_lock(&v->timer_lock);
		bool here = tm->owner == v;
		if (here && atomic_load_explicit(&tm->state, memory_order_relaxed) == TIMER_PENDING) {
			heap_delete(v, tm->index);
			atomic_store_explicit(&tm->state, TIMER_IDLE, memory_order_relaxed);
		}
		spin_unlock(&v->timer_lock);
		if (here)
			break;
	}
	/* The firer may be a VP that the kernel ranks below this one on a
	 * shared CPU (a real-time thread whose timer a lower VP's tick fired):
	 * let it run now and then, as a busy spin lock does. */
	for (unsigned n = 0; atomic_load_explicit(&tm->state, memory_order_acquire) == TIMER_FIRING; n++) {
		if (n < 4096) {
			cpu_relax();
		} else {
			spin_wait_long();
			n = 0;
		}
	}
	tm->owner = NULL;
}

void timer_move_all(struct vproc *from, struct vproc *to)
{
	spin_lock(&from->timer_lock);
	spin_lock(&to->timer_lock);
	while (from->heap_len > 0) {
		struct timer *tm = from->heap[0];
		heap_delete(from, 0);
		if (to->heap_len == to->heap_cap) {
			size_t cap = to->heap_cap ? 2 * to->heap_cap : TIMER_HEAP_FIRST;
			struct timer **h = realloc(to->heap, cap * sizeof *h);
			if (h == NULL) {
				spin_unlock(&to->timer_lock);
				spin_unlock(&from->timer_lock);
				ppl_fatal("out of memory for the timer heap of VP %d", to->vp.id);
			}
			to->heap = h;
			to->heap_cap = cap;
		}
		tm->owner = to;
		set_at(to, to->heap_len++, tm);
		sift_up(to, tm->index);
	}
	publish_next(to);
	spin_unlock(&to->timer_lock);
	spin_unlock(&from->timer_lock);
}

int64_t timer_run_expired(struct vproc *v)
{
	int64_t next = atomic_load_explicit(&v->next_deadline, memory_order_acquire);
	if (next == INT64_MAX)
		return -1;
	int64_t now = clock_now_ns(CLOCK_MONOTONIC);
	if (next > now)
		return next - now;
	for (;;) {
		spin_lock(&v->timer_lock);
		if (v->heap_len == 0 || v->heap[0]->deadline > now) {
			int64_t left = v->heap_len ? v->heap[0]->deadline - now : -1;
			spin_unlock(&v->timer_lock);
			return left;
		}
		struct timer *tm = v->heap[0];
		if (ppl_unlikely(tm->realtime >= 0)) {
			int64_t left = tm->realtime - clock_now_ns(CLOCK_REALTIME);
			if (left > 0) {
				/* Not yet by the program's clock: again that much later. */
				tm->deadline = now + left;
				sift_down(v, 0);
				publish_next(v);
				spin_unlock(&v->timer_lock);
				continue;
			}
		}
		heap_delete(v, 0);
		atomic_store_explicit(&tm->state, TIMER_FIRING, memory_order_relaxed);
		spin_unlock(&v->timer_lock);
		tm->fire(tm);
		atomic_store_explicit(&tm->state, TIMER_IDLE, memory_order_release);
	}
}

int timer_vp_init(struct vproc *v)
{
	int err = timer_heap_init(v);
	if (err == 0)
		atomic_store(&v->next_deadline, INT64_MAX);
	return err;
}

void timer_fork_child(struct vproc *v, struct ult *self)
{
	spin_init(&v->timer_lock);
	v->heap_len = 0;          /* the other threads' timers: they are gone */
	atomic_store_explicit(&v->next_deadline, INT64_MAX, memory_order_relaxed);
}
