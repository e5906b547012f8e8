/* The C library's entry points that vpdep calls under names libppl does not
 * interpose, and that no public header declares. */
#ifndef PPL_LIBC_ENTRY_H
#define PPL_LIBC_ENTRY_H

#include <signal.h>

/* glibc's own sigaction (sigdefer.c). */
int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);

#endif
