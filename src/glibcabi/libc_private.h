/* The C library's entry points and objects that libppl uses and that no
 * public header declares (glibc exports them for its own runtime and for
 * libstdc++).  __libc_single_threaded comes from <sys/single_threaded.h>. */
#ifndef PPL_LIBC_PRIVATE_H
#define PPL_LIBC_PRIVATE_H

#include <sys/single_threaded.h>

/* pthread_atfork without the libpthread wrapper: handlers tied to a DSO. */
int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
		      void *dso_handle);
/* thread_local destructors of the calling kernel thread (libstdc++'s hook). */
int __cxa_thread_atexit_impl(void (*fn)(void *), void *obj, void *dso_handle);
/* This DSO's handle (crtbegin.o). */
extern void *__dso_handle;

#endif
