/* Threads (thread.c, key.c, threadid.c, nice.c). */
#ifndef PPL_THREAD_H
#define PPL_THREAD_H

#include "base.h"

/* thread.c: the TCB of a kernel thread libppl did not create (made at its
 * first call), and the same without making one (NULL if it has none). */
struct ult *ult_foreign_self(void);
struct ult *ult_foreign_peek(void);
struct ult *ult_foreign_swap(struct ult *t);   /* vfork.c */
/* thread.c: an exited thread is off its stack now (sched_exit's callback). */
void ult_exited(struct ult *t);
/* thread.c: t, exiting, is not detached and has a user thread waiting in
 * pthread_join that may run on any VP at priority 0: take that joiner off
 * t's join queue (the caller switches to it) and return it; else NULL. */
struct ult *ult_exit_joiner(struct ult *t);

/* ---- threads (thread.c, key.c) ---------------------------------------------------- */

/* A pthread_t that names no thread (NULL, or a recycled TCB). */
bool ult_stale(struct ult *t);
/* The initial thread's nice value, from its kernel thread (nice.c). */
void nice_init(struct ult *m);

/* What gettid() returns to t: the process id for the initial thread, its
 * own kernel thread's id, or an id above every kernel id (threadid.c). */
pid_t thread_tid(struct ult *t);
/* Whether id is one of those ids above the kernel's. */
bool tid_is_virtual(pid_t id);
/* The thread a kernel-style id names for the calls that take one: 0 the
 * caller, the process id the initial thread, the caller's kernel thread
 * the caller, a gettid() value its thread; NULL: the kernel's business. */
struct ult *tid_thread(pid_t id);

void key_run_destructors(struct ult *t);
void ult_recycle(struct ult *t);
int ult_join(struct ult *t, void **res, const struct timespec *abstime, clockid_t clk,
	     bool try_only);

#endif
