/* The memory of TCBs (tcbpool.c): carved from chunks of libppl's own,
 * never unmapped; TCBs the cache does not keep go cold, and their pages
 * go back to the kernel. */
#ifndef PPL_TCBPOOL_H
#define PPL_TCBPOOL_H

#include "base.h"
#include "fork.h"

struct ult;

/* A TCB's memory, or NULL (out of memory).  Its contents are stale or
 * zero: the caller clears it. */
struct ult *tcb_pool_take(void);
struct ult *tcb_pool_take_new(void);
/* t (state ULT_FREE, holding nothing) is not needed now: once every TCB
 * of its group is cold the group's pages go back to the kernel, and t
 * reads as zeros (state ULT_FREE) until it is taken again. */
void tcb_pool_cool(struct ult *t);
bool tcb_pool_ended_detached(const struct ult *t);
/* Every TCB ever carved, live or not, skipping the released groups:
 * for (t = tcb_pool_first(); t; t = tcb_pool_next(t)).  Lock-free; a
 * TCB may read as zeros (ULT_FREE) if it was released meanwhile. */
struct ult *tcb_pool_first(void);
struct ult *tcb_pool_next(struct ult *t);
/* The pool's lock across fork (thread.c's ult_cache_atfork). */
void tcb_pool_atfork(enum fork_phase ph);

#endif
