/* The raw futex system call, shared by futex.c and vp.c.  Returns 0 or a
 * positive errno value (the kernel's answer, never retried here). */
#ifndef PPL_FUTEX_H
#define PPL_FUTEX_H

#include <errno.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "syscall_raw.h"

static inline int futex_sys(_Atomic uint32_t *addr, int op, uint32_t val,
			    const struct timespec *ts, uint32_t bitset)
{
	/* The kernel reads the word itself: the atomic type only documents
	 * that everybody else must access it atomically. */
	long r = vp_syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, bitset);
	return r < 0 ? errno : 0;
}

#endif
