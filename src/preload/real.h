/* The C library's own definitions of the interposed functions: real_<name>
 * points at the next definition of <name> after libppl's, resolved once at
 * start-up by real_init. */
#ifndef PPL_REAL_H
#define PPL_REAL_H

#include "../vpindep/vpindep.h"

#define PPL_FN(ret, name, params, args) extern ret(*real_##name) params;
#include "../vpindep/api.def"
#undef PPL_FN

/* Resolve every real_ pointer; one line on stderr and abort if the C library
 * lacks one.  Runs once: later calls, and calls made from inside dlsym while
 * it runs, return at once. */
void real_init(void);

#endif
