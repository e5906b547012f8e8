/* The exported POSIX names: one definition for each api.def entry, a tail
 * call to its ppl_ implementation (a single jmp at -O1 and above).  Nothing
 * else belongs on this path: switches such as tracing would cost every call
 * a load and a branch.
 *
 * Each export is defined under a C name of its own (export_<name>) and given
 * its public name with its symbol versions by .symver (symver.def): the
 * C library's headers may redirect a declaration to another symbol (glibc
 * 2.34+ declares pthread_yield as an asm alias of sched_yield) or decorate
 * it with attributes that do not fit a forwarding function, and a name has
 * one default version and may have older ones.  An unevaluated assignment
 * of the header's function to a pointer of the api.def type keeps the two
 * signatures equal: a mismatch is a compile error. */
#include "../vpindep/vpindep.h"

/* Deprecated names (pthread_yield, pthread_attr_setstackaddr) still have
 * callers in old binaries; defining them is the point. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#pragma GCC diagnostic error "-Wincompatible-pointer-types"

#define PPL_EXPORT __attribute__((visibility("default")))

#define PPL_FN(ret, name, params, args)                                              \
	PPL_EXPORT ret export_##name params;                                         \
	_Static_assert(sizeof(*(ret(**) params)0 = &name) != 0, #name);              \
	ret export_##name params                                                     \
	{                                                                            \
		return ppl_##name args;                                              \
	}
#include "../vpindep/api.def"
#undef PPL_FN

/* name@@default, and name@older for each older version: an alias of the
 * same function (the version script's "local: *" hides export_<name> and
 * the aliases' own names). */
#define PPL_NARGS(...) PPL_NARGS_(__VA_ARGS__, 4, 3, 2, 1, 0)
#define PPL_NARGS_(a, b, c, d, n, ...) n
#define PPL_CAT(a, b) PPL_CAT_(a, b)
#define PPL_CAT_(a, b) a##b
#define PPL_DEFAULT(name, v) __asm__(".symver export_" #name ", " #name "@@" v);
#define PPL_OLDER(name, v, i)                                                        \
	extern __typeof__(export_##name) compat##i##_##name                          \
		__attribute__((alias("export_" #name), visibility("default")));      \
	__asm__(".symver compat" #i "_" #name ", " #name "@" v);
#define PPL_SYMVER_1(name, d) PPL_DEFAULT(name, d)
#define PPL_SYMVER_2(name, d, o1) PPL_DEFAULT(name, d) PPL_OLDER(name, o1, 1)
#define PPL_SYMVER_3(name, d, o1, o2) PPL_SYMVER_2(name, d, o1) PPL_OLDER(name, o2, 2)
#define PPL_SYMVER(name, ...) PPL_CAT(PPL_SYMVER_, PPL_NARGS(__VA_ARGS__))(name, __VA_ARGS__)
#include "symver.def"
