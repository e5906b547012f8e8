/* The raw clone system call with a C function as the child's start
 * (arch/<cpu>/clone_raw.S).  Private to vpdep: the VP backends that make
 * their kernel threads without the C library (vp_clone.c). */
#ifndef PPL_CLONE_RAW_H
#define PPL_CLONE_RAW_H

#include <sys/types.h>

/* clone(flags, stack_top, ptid, tls, ctid); in the child, on stack_top
 * (aligned down to 16 bytes) with thread pointer tls (if CLONE_SETTLS),
 * calls fn(arg), which must never return (it ends the thread with
 * SYS_exit).  The child starts with the caller's signal mask and nothing of
 * its C library state: until fn has made TLS usable (CLONE_SETTLS does it
 * atomically), no C library function may be called there.  Returns the
 * child's tid in the parent, or -errno. */
long vp_clone_raw(unsigned long flags, void *stack_top, pid_t *ptid, void *tls, pid_t *ctid,
		  void (*fn)(void *), void *arg) __attribute__((visibility("hidden")));

#endif
