/* libppl's internal basics: visibility and checking macros, the fatal
 * error, the headers every part of vpindep needs. */
#ifndef PPL_BASE_H
#define PPL_BASE_H

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "vpdep.h"
#include "glibcabi.h"
#include "vpindep.h"

/* The two central types, for the headers that only point to them. */
struct ult;
struct vproc;

#define PPL_HIDDEN __attribute__((visibility("hidden")))
#define PPL_API __attribute__((visibility("default")))
#define PPL_MUST_CHECK __attribute__((warn_unused_result))

/* Always-on check of libppl's own invariants. */
#define ppl_assert(cond)                                                         \
	do {                                                                     \
		if (ppl_unlikely(!(cond)))                                       \
			ppl_fatal("assertion failed: %s (%s:%d)", #cond, __FILE__, __LINE__); \
	} while (0)

/* One line on stderr naming the current thread and the cause, then abort. */
_Noreturn void ppl_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* fatal.c: the stack-overflow handler, installed at start-up. */
void ppl_overflow_init(void);

#endif
