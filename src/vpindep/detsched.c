/* Deterministic schedules (PPL_SCHED_SEED, PPL_SCHED_CHAOS; docs/debugging.md).
 *
 * With a seed the process runs its threads on one VP and every choice the
 * scheduler makes comes from a pseudo-random sequence started from it:
 *  - which ready thread runs next (detsched_pick, from rq_take: any thread
 *    of the priority-0 queue, not its head; real-time priorities keep
 *    their order);
 *  - where the running thread is preempted: the time-slice timer is off,
 *    and a slice is instead a number of library entry points (1 to
 *    2 * SLICE_MEAN - 1, drawn at each slice);
 *  - with PPL_SCHED_CHAOS=p, a yield at each library entry point with
 *    probability p.
 * So a program that takes no input from outside (time, system calls,
 * signals, other processes) runs the same interleaving for the same seed.
 *
 * The state is one splitmix64 word, read and written relaxed: on one VP a
 * single kernel thread uses it, except while a spare stands in for a VP
 * blocked in the kernel, and then the schedule depends on timing anyway. */
#include "schedhooks.h"
#include "scheduler.h"
#include "ult.h"
#include "vproc.h"

#define SLICE_MEAN 64          /* library entry points in a seeded time slice, on average */

static _Atomic uint64_t rng;
static uint64_t chaos;         /* yield when a draw is below it (p * 2^64) */
static _Atomic unsigned slice_left;

static uint64_t draw(void)
{
	uint64_t s = atomic_load_explicit(&rng, memory_order_relaxed) + 0x9e3779b97f4a7c15ull;
	atomic_store_explicit(&rng, s, memory_order_relaxed);
	uint64_t z = s;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* 0 .. n-1, n > 0 (the bias of a modulo is irrelevant here). */
static unsigned below(unsigned long n)
{
	return (unsigned)(draw() % n);
}

static unsigned new_slice(void)
{
	return 1 + below(2 * SLICE_MEAN - 1);
}

void detsched_init(uint64_t seed, uint64_t p)
{
	atomic_store_explicit(&rng, seed, memory_order_relaxed);
	chaos = p;
	atomic_store_explicit(&slice_left, new_slice(), memory_order_relaxed);
}

void detsched_point(void)
{
	struct vproc *v = (struct vproc *)vp_current();
	/* Not from a foreign thread, the idle loop (a signal handler there), a
	 * bound VP, or inside one of libppl's locks. */
	if (v == NULL || v->current == NULL || v->bound_to != NULL || vp_in_crit(&v->vp))
		return;
	int why;
	if (chaos != 0 && draw() < chaos) {
		why = TW_CHAOS;
	} else {
		unsigned left = atomic_load_explicit(&slice_left, memory_order_relaxed);
		if (left > 1) {
			atomic_store_explicit(&slice_left, left - 1, memory_order_relaxed);
			return;
		}
		atomic_store_explicit(&slice_left, new_slice(), memory_order_relaxed);
		why = TW_SEED;
	}
	struct ult *cur = v->current;
	/* Counted and traced only if another thread is there to run (a due
	 * timer may still queue one at the yield). */
	if (atomic_load_explicit(&v->rq_len, memory_order_relaxed) > 0) {
		ppl_trace(TR_PREEMPT, cur->id, why);
		if (why == TW_SEED)
			v->stats.preempts++;
	}
	sched_yield_min(cur->prio, false);
}

void detsched_pick(struct vproc *v)
{
	long n = atomic_load_explicit(&v->rq_len, memory_order_relaxed);
	if (v->rt_head != NULL || v->rq_head == NULL || v->rq_head->next == NULL || n < 2)
		return;
	unsigned k = below((unsigned long)n);
	if (k == 0)
		return;
	/* Unlink the k-th thread (stopping early if the length hint is off)
	 * and put it first. */
	struct ult *prev = v->rq_head;
	for (unsigned i = 1; i < k && prev->next->next != NULL; i++)
		prev = prev->next;
	struct ult *t = prev->next;
	prev->next = t->next;
	if (v->rq_tail == t)
		v->rq_tail = prev;
	t->next = v->rq_head;
	v->rq_head = t;
}
