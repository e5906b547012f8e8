/* dlopen, wrapped: glibc initialises the static TLS of a newly loaded
 * module only in the threads it created, so libppl copies the module's
 * init image into the TLS blocks of its user threads afterwards. */
#include <dlfcn.h>
#include <stddef.h>

#include "../vpindep/vpindep.h"

#define PPL_API __attribute__((visibility("default")))

PPL_API void *dlopen(const char *file, int mode);
void *dlopen(const char *file, int mode)
{
	static void *(*_Atomic next)(const char *, int);
	void *(*fn)(const char *, int) = next;
	if (fn == NULL) {
		/* The C library's default version (GLIBC_2.34 on glibc 2.36). */
		fn = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
		if (fn == NULL)
			return NULL;
		next = fn;
	}
	void *h = fn(file, mode);
	if (h != NULL)
		ppl_after_dlopen();
	return h;
}
