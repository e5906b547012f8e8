/* The one resolver of the C library's functions that libppl also defines
 * (pthread_create for the kthread backend, clock_gettime, dlopen, the
 * blocking calls it wraps): the next definition after libppl's, found on
 * first use and cached by the caller's slot.  A plain call would bind to
 * libppl's own export (or the program's), which may be a cancellation point
 * or recurse; tests/abi's check_self_binding.sh keeps libppl.so free of
 * such bindings.  First use, not a constructor: another library's
 * constructor may call in before libppl's ran. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "vpdep.h"

void *vp_libc_lookup(const char *name, const char *version)
{
	void *f = version ? dlvsym(RTLD_NEXT, name, version) : NULL;
	/* A version this architecture's C library does not have: its default. */
	return f ? f : dlsym(RTLD_NEXT, name);
}

void *vp_libc_fn_resolve(void *_Atomic *slot, const char *name, const char *version)
{
	/* dlsym is idempotent: racing first callers store the same pointer. */
	void *f = vp_libc_lookup(name, version);
	if (f == NULL) {
		char buf[160];
		int n = snprintf(buf, sizeof buf, "libppl: the C library has no %s%s%s\n", name,
				 version ? "@" : "", version ? version : "");
		vp_write(2, buf, n > 0 && (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
		abort();
	}
	atomic_store_explicit(slot, f, memory_order_release);
	return f;
}

bool vp_symbol_present(const char *name)
{
	return dlsym(RTLD_DEFAULT, name) != NULL;
}
