/* The C library's process-wide state that libppl takes part in: its fork
 * handlers' list (the single-threaded flag is inline in glibcabi.h). */
#include <errno.h>

#include "glibcabi.h"

/* glibc's own entry point behind pthread_atfork (GLIBC_2.3.2): the
 * handlers are libppl's, unregistered if libppl's DSO were unloaded. */

int glibcabi_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
	return __register_atfork(prepare, parent, child, &__dso_handle);
}
