/* What mutex.c offers the other objects. */
#ifndef PPL_MUTEX_H
#define PPL_MUTEX_H

#include "base.h"

/* mutex.c, for pthread_cond_*wait: count the caller (who holds m) as a
 * user of m from before it releases m to after it has it again, so that
 * pthread_mutex_destroy says EBUSY meanwhile, as glibc's __nusers does. */
void mutex_cond_enter(pthread_mutex_t *m);
void mutex_cond_leave(pthread_mutex_t *m);
/* pthread_mutex_lock for a cond waiter taking m back: it spins a little
 * before parking, since the thread that woke it is about to unlock. */
int mutex_cond_relock(pthread_mutex_t *m);

#endif
