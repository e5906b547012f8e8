/* The C library's process-wide state that libppl takes part in: its fork
 * handlers' list and the single-threaded flag. */
#include <errno.h>

#include "glibcabi.h"
#include "vpdep.h"

/* glibc's own entry point behind pthread_atfork (GLIBC_2.3.2): the
 * handlers are libppl's, unregistered if libppl's DSO were unloaded. */

int glibcabi_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
	return __register_atfork(prepare, parent, child, &__dso_handle);
}

/* __libc_single_threaded is two objects in a program with a copy relocation
 * of it (a PIE that reads it: every C++ program whose shared_ptr asks
 * __gnu_cxx::__is_single_threaded): the program's copy, which every other
 * object's GOT names (libppl's too), and the C library's own, which the C
 * library reads directly as its SINGLE_THREAD_P: malloc then skips its arena
 * locks, fork its prepare locks, and its internal mutexes (ld.so's
 * dl_load_lock under dlsym) take and release with plain stores, so a
 * waiter's futex wake is lost (tb_atomic_wait on the clone backend hung in
 * dlsym; tp_libc_threaded).  glibc's pthread_create clears both; a backend
 * whose kernel threads are not the C library's must too.  The next
 * definition after libppl's is the C library's own (libppl precedes it in
 * the search order, or it could not interpose it). */
static char *libc_flag;

void glibcabi_state_init(void)
{
	libc_flag = vp_libc_lookup("__libc_single_threaded", "GLIBC_2.32");
}

void glibcabi_set_multi_threaded(void)
{
	__atomic_store_n(&__libc_single_threaded, 0, __ATOMIC_RELAXED);
	if (libc_flag != NULL)
		__atomic_store_n(libc_flag, 0, __ATOMIC_RELAXED);
}
