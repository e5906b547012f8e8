/* Intrusive queue of parked threads, FIFO within a priority.
 * Invariants: the owner's spin lock is held for every call; t->wait_q == q
 * exactly while t is on q (so a timed-out waiter and its waker agree, under
 * that lock, on who removes it).
 *  - In a forked child, the parent's threads may still sit on queues of
 *    objects the child inherited; they do not exist there.  Pop and the
 *    emptiness test drop them from the head (waitq_prune), so a wake-up
 *    never goes to one and a queue of them reads as empty. */
#include "runtime.h"
#include "ult.h"
#include "waitq.h"

/* FIFO within a priority, higher priorities first: POSIX wakes the
 * highest priority waiter of a mutex, cond or semaphore.  Priority 0 (the
 * usual case) stops at the tail at once. */
void waitq_push(struct waitq *q, struct ult *t)
{
	struct ult *after = q->tail;
	while (after && after->prio < t->prio)
		after = after->prev;
	t->prev = after;
	t->next = after ? after->next : q->head;
	if (t->next)
		t->next->prev = t;
	else
		q->tail = t;
	if (after)
		after->next = t;
	else
		q->head = t;
	t->wait_q = q;
}

static void unlink_ult(struct waitq *q, struct ult *t)
{
	if (t->prev)
		t->prev->next = t->next;
	else
		q->head = t->next;
	if (t->next)
		t->next->prev = t->prev;
	else
		q->tail = t->prev;
	t->next = t->prev = NULL;
	t->wait_q = NULL;
}

void waitq_prune(struct waitq *q)
{
	struct ult *t;
	while ((t = q->head) != NULL && ppl_unlikely(t->fork_gen != ppl_rt.fork_gen))
		unlink_ult(q, t);
}

struct ult *waitq_pop(struct waitq *q)
{
	waitq_prune(q);
	struct ult *t = q->head;
	if (t)
		unlink_ult(q, t);
	return t;
}

bool waitq_remove(struct waitq *q, struct ult *t)
{
	if (t->wait_q != q)
		return false;
	unlink_ult(q, t);
	return true;
}
