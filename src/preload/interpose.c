/* The exported POSIX names: one definition for each api.def entry, a tail
 * call to its ppl_ implementation (a single jmp at -O1 and above).  Nothing
 * else belongs on this path: switches such as tracing would cost every call
 * a load and a branch.
 *
 * Each export is defined under a C name of its own (export_<name>) with the
 * symbol name given as an asm label, because the C library's headers may
 * redirect a declaration to another symbol (glibc 2.34+ declares
 * pthread_yield as an asm alias of sched_yield) or decorate it with
 * attributes that do not fit a forwarding function.  An unevaluated
 * assignment of the header's function to a pointer of the api.def type
 * keeps the two signatures equal: a mismatch is a compile error. */
#include "../vpindep/vpindep.h"

/* Deprecated names (pthread_yield, pthread_attr_setstackaddr) still have
 * callers in old binaries; defining them is the point. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#pragma GCC diagnostic error "-Wincompatible-pointer-types"

#define PPL_EXPORT __attribute__((visibility("default")))

#define PPL_FN(ret, name, params, args)                                              \
	PPL_EXPORT ret export_##name params __asm__(#name);                          \
	_Static_assert(sizeof(*(ret(**) params)0 = &name) != 0, #name);              \
	ret export_##name params                                                     \
	{                                                                            \
		return ppl_##name args;                                              \
	}
#include "../vpindep/api.def"
#undef PPL_FN
