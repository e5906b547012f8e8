/* Wait queues (waitq.c). */
#ifndef PPL_WAITQ_H
#define PPL_WAITQ_H

#include "base.h"

/* ---- wait queues (waitq.c) --------------------------------------------------
 * An intrusive FIFO of parked threads.  Always protected by a spin lock that
 * belongs to the object the queue is part of. */

struct ult;

struct waitq {
	struct ult *head;
	struct ult *tail;
};

void waitq_push(struct waitq *q, struct ult *t);
struct ult *waitq_pop(struct waitq *q);         /* NULL if empty */
bool waitq_remove(struct waitq *q, struct ult *t); /* false if t was not queued */
/* Drop the parent's threads from the head of q (in a forked child). */
void waitq_prune(struct waitq *q);
static inline bool waitq_empty(struct waitq *q)
{
	if (ppl_likely(q->head == NULL))
		return true;
	waitq_prune(q);
	return q->head == NULL;
}

#endif
