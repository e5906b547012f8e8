/* Resolves the C library's next definition of every interposed function,
 * once, from the library constructor (start.c).
 *
 * dlsym(RTLD_NEXT) returns the default version of a symbol.  Where glibc
 * keeps several, interposed.def names the one whose object layout is meant;
 * a symbol left only as a compat version (pthread_yield since 2.34) has no
 * default at all and must be asked for by version too. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "real.h"

/* The base symbol version of the C library on each architecture. */
#if defined(__x86_64__)
#define REAL_GLIBC_BASE_VERSION "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define REAL_GLIBC_BASE_VERSION "GLIBC_2.17"
#else
#error "add the C library's base symbol version for this architecture"
#endif

#define PPL_FN(ret, name, params, args) ret(*real_##name) params;
#include "../vpindep/api.def"
#undef PPL_FN

struct real_sym {
	const char *name;
	void *slot; /* the real_ pointer to fill */
};

static const struct real_sym syms[] = {
#define PPL_FN(ret, name, params, args) { #name, &real_##name },
#include "../vpindep/api.def"
#undef PPL_FN
};

static const struct {
	const char *name, *version;
} versioned[] = {
#define PPL_VERSIONED(name, version) { #name, version },
#define PPL_EXT(name)
#include "interposed.def"
#undef PPL_VERSIONED
#undef PPL_EXT
};

static const char *version_of(const char *name)
{
	for (size_t i = 0; i < sizeof versioned / sizeof versioned[0]; i++)
		if (strcmp(versioned[i].name, name) == 0)
			return versioned[i].version;
	return NULL;
}

static _Noreturn void missing(const char *name, const char *version)
{
	char buf[256];
	int n = snprintf(buf, sizeof buf, "libppl: the C library has no %s%s%s (needed by the preload layer)\n",
			 name, version ? "@" : "", version ? version : "");
	if (n > 0 && write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1) < 0) {
		/* stderr is gone: abort anyway */
	}
	abort();
}

void real_init(void)
{
	/* 0: not started, 1: resolving, 2: done.  dlsym may call back into an
	 * interposed function (its error path takes locks and keys); such a
	 * call, or any later one, must not start a second resolution. */
	static _Atomic int state;
	int expected = 0;
	if (!atomic_compare_exchange_strong_explicit(&state, &expected, 1, memory_order_acq_rel,
						     memory_order_acquire))
		return;
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
		const char *version = version_of(syms[i].name);
		void *f = version ? dlvsym(RTLD_NEXT, syms[i].name, version) : NULL;
		if (f == NULL)
			f = dlsym(RTLD_NEXT, syms[i].name);
		if (f == NULL)
			missing(syms[i].name, version);
		/* A data pointer to a function pointer: POSIX guarantees the
		 * representations agree, C does not, so copy the bytes. */
		memcpy(syms[i].slot, &f, sizeof f);
	}
	atomic_store_explicit(&state, 2, memory_order_release);
}
