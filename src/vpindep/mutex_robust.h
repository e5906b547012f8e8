/* Robust mutexes (mutex_robust.c): glibc's lock word protocol, the
 * kernel's robust list and owner death.  mutex.c hands every robust kind
 * here. */
#ifndef PPL_MUTEX_ROBUST_H
#define PPL_MUTEX_ROBUST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct ult;

enum { ROBUST_LOCK, ROBUST_TRY, ROBUST_TIMED };

/* 0, EOWNERDEAD (acquired, inconsistent), ENOTRECOVERABLE, EDEADLK, EAGAIN,
 * EBUSY (ROBUST_TRY), ETIMEDOUT or EINVAL (ROBUST_TIMED). */
int robust_lock(pthread_mutex_t *m, int kind, int mode, const struct timespec *abstime,
		clockid_t clk);
/* 0, EPERM (not the holder) or ENOTRECOVERABLE (recursive, still held). */
int robust_unlock(pthread_mutex_t *m, int kind);
int robust_consistent(pthread_mutex_t *m);
/* A user thread ends: mark the robust mutexes it holds FUTEX_OWNER_DIED. */
void robust_thread_exit(struct ult *self);
/* Register the process's robust list: on the initial kernel thread, and in
 * a forked child (which also forgets the parent's list). */
void robust_init(void);
void robust_fork_child(void);

/* The kernel's release of a dead owner's robust word (handle_futex_death):
 * while *word (last read as w) holds tid it becomes FUTEX_OWNER_DIED with
 * FUTEX_WAITERS kept, and one waiter is woken unless the word is PI's. */
void robust_word_dead(_Atomic uint32_t *word, uint32_t w, uint32_t tid, bool pi);
/* A thread's robust list set by raw system call, walked at its end as the
 * kernel walks a dying kernel thread's (robustlist.c). */
void robust_list_exit(struct ult *self);
/* The kernel gives a fork child no robust list, and glibc registers its
 * own head again: heads set by raw system call are forgotten. */
void robust_list_fork_child(void);

#endif
