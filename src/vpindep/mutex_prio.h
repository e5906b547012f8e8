/* The priority protocols of private mutexes (mutex_prio.c): mutex.c calls
 * these for the PTHREAD_PRIO_INHERIT and PTHREAD_PRIO_PROTECT kinds. */
#ifndef PPL_MUTEX_PRIO_H
#define PPL_MUTEX_PRIO_H

#include <pthread.h>

struct ult;

/* The caller is about to park on PI mutex m (again): raise its owner, and
 * the owners that owner waits for, to the caller's priority. */
void prio_block(pthread_mutex_t *m);
/* The caller no longer waits for m (it has it, or gave up). */
void prio_unblock(pthread_mutex_t *m);
/* The caller now holds m: PP with ceiling, or PI (ceiling -1). */
void prio_locked(pthread_mutex_t *m, int ceiling);
/* The caller released m: back to what it still holds entitles it to. */
void prio_unlocked(pthread_mutex_t *m);
/* t's policy or priority was set: keep the boosts it holds. */
void prio_base_changed(struct ult *t);
/* t exits holding some: take it off the list of holders. */
void prio_thread_exit(struct ult *t);
/* In the child of fork: the calling thread holds none, at its own priority. */
void prio_fork_child(void);
/* The caller's own priority, boosts left out (a PP ceiling below it: EINVAL). */
int prio_current(void);
/* t's sched_priority as the kernel's sched_getparam shows it on NPTL:
 * raised to the ceilings of the PP mutexes t holds (glibc's tpp.c sets
 * them on the kernel thread), a PI boost left out (the kernel's own). */
int prio_param_view(struct ult *t);
/* mutex.c: the priority of m's first waiter, -1 if none (takes m's lock). */
int mutex_top_waiter(pthread_mutex_t *m);

#endif
