/* The exported POSIX names: one definition for each api.def entry, a call
 * of its ppl_ implementation (a call and a return, see PPL_EXPORT).  Nothing
 * else belongs on this path: switches such as tracing would cost every call
 * a load and a branch.
 *
 * Each export is defined under a C name of its own (export_<name>) with the
 * symbol name given as an asm label, because the C library's headers may
 * redirect a declaration to another symbol (glibc 2.34+ declares
 * pthread_yield as an asm alias of sched_yield) or decorate it with
 * attributes that do not fit a forwarding function; .symver then gives it
 * its versions (symver.def).  An unevaluated assignment
 * of the header's function to a pointer of the api.def type keeps the two
 * signatures equal: a mismatch is a compile error. */
#include "../vpindep/vpindep.h"

/* Deprecated names (pthread_yield, pthread_attr_setstackaddr) still have
 * callers in old binaries; defining them is the point. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#pragma GCC diagnostic error "-Wincompatible-pointer-types"

/* A call, not a tail jump: with two names at one address (the versions),
 * gdb no longer rebuilds the jumped-over frame from call-site information,
 * and its backtraces and libppl's extension would lose the API name.  The
 * hottest entry points (api.def's PPL_FN_INLINE) pay neither: their ppl_
 * is a macro whose uncontended path inlines here, with no frame, and whose
 * slow path is a call from here, under the export's name. */
#define PPL_EXPORT __attribute__((visibility("default"), optimize("no-optimize-sibling-calls")))

#define PPL_FN(ret, name, params, args)                                              \
	PPL_EXPORT ret export_##name params __asm__(#name);                          \
	_Static_assert(sizeof(*(ret(**) params)0 = &name) != 0, #name);              \
	ret export_##name params                                                     \
	{                                                                            \
		return ppl_##name args;                                              \
	}
#include "../vpindep/api.def"
#undef PPL_FN

/* name@@default, and name@older for each older version: an alias of the
 * same function (the version script's "local: *" hides the aliases' own
 * names).  Nothing in libppl calls these: a call would bind to the export. */
#define PPL_NARGS(...) PPL_NARGS_(__VA_ARGS__, 4, 3, 2, 1, 0)
#define PPL_NARGS_(a, b, c, d, n, ...) n
#define PPL_CAT(a, b) PPL_CAT_(a, b)
#define PPL_CAT_(a, b) a##b
#define PPL_DEFAULT(name, v) __asm__(".symver " #name ", " #name "@@" v);
#define PPL_OLDER(name, v, i)                                                        \
	extern __typeof__(export_##name) compat##i##_##name                          \
		__attribute__((alias(#name), visibility("default")));              \
	__asm__(".symver compat" #i "_" #name ", " #name "@" v);
#define PPL_SYMVER_1(name, d) PPL_DEFAULT(name, d)
#define PPL_SYMVER_2(name, d, o1) PPL_DEFAULT(name, d) PPL_OLDER(name, o1, 1)
#define PPL_SYMVER_3(name, d, o1, o2) PPL_SYMVER_2(name, d, o1) PPL_OLDER(name, o2, 2)
#define PPL_SYMVER(name, ...) PPL_CAT(PPL_SYMVER_, PPL_NARGS(__VA_ARGS__))(name, __VA_ARGS__)
#include "symver.def"
