/* Thread attributes, decoded (attr.c). */
#ifndef PPL_ATTR_H
#define PPL_ATTR_H

#include "base.h"

/* ---- attributes (attr.c) -----------------------------------------------------------
 * pthread_attr_t is an opaque 56-byte overlay owned by attr.c; thread.c sees
 * only this decoded form. */

struct thread_attrs {
	size_t stacksize;          /* usable bytes (0 = default) */
	void *stackaddr;           /* user stack: lowest address, or NULL */
	size_t guardsize;
	int detachstate;           /* PTHREAD_CREATE_* */
	int scope;                 /* PTHREAD_SCOPE_* */
	int inheritsched;          /* PTHREAD_*_SCHED */
	int policy;
	struct sched_param param;
	/* GNU extensions (NULL: none), pointing into the caller's attribute,
	 * or for the process default into the copies below */
	const cpu_set_t *cpuset;   /* pthread_attr_setaffinity_np */
	size_t cpusetsize;
	const sigset_t *sigmask;   /* pthread_attr_setsigmask_np */
	cpu_set_t default_cpuset;
	sigset_t default_sigmask;
};

/* Decode `a` (NULL: the process default set by pthread_setattr_default_np). */
void attr_read(const pthread_attr_t *a, struct thread_attrs *out);
/* Initialise `a` and store `in` into it (for pthread_getattr_np). 0 or errno. */
int attr_write(pthread_attr_t *a, const struct thread_attrs *in) PPL_MUST_CHECK;

#endif
