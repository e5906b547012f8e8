/* What a VP backend that makes its kernel threads without the C library
 * (vp_clone.c) needs of the C library's thread ABI: a TLS block and thread
 * descriptor like the ones glibc's pthread_create gives its threads, and
 * the process-wide switch glibc's first pthread_create throws.  The
 * glibc-ABI code implements them (today src/vpindep/tls_glibc.c).
 *
 * Weak: vpdep's unit tests link vpdep alone; without the implementation
 * the clone backend refuses to start a thread (ENOSYS). */
#ifndef PPL_GLIBCABI_KTHREAD_H
#define PPL_GLIBCABI_KTHREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define GLIBCABI_WEAK __attribute__((weak, visibility("hidden")))

/* A fresh block (static TLS of every loaded module, DTV, descriptor);
 * returns its thread pointer, or NULL with *why saying why (the C
 * library's layout is not one libppl knows, or no memory).  Never freed:
 * the C library keeps a thread's malloc state in it; pool it. */
void *glibcabi_kthread_block(const char **why) GLIBCABI_WEAK;
/* A pooled block whose kernel thread has ended: its descriptor fresh
 * again, before the next thread is made on it (not on that thread). */
void glibcabi_kthread_block_reset(void *tp) GLIBCABI_WEAK;
/* The kernel thread's stack, in the descriptor (alloca limits, and
 * pthread_getattr_np if the C library is asked about the thread). */
void glibcabi_kthread_block_stack(void *tp, void *lo, size_t size) GLIBCABI_WEAK;
/* The descriptor's thread id: CLONE_PARENT_SETTID stores the new thread's
 * id there (glibc's own locks record it as their owner) and
 * CLONE_CHILD_CLEARTID clears it when the thread is gone, as for glibc's
 * threads. */
pid_t *glibcabi_kthread_tid(void *tp) GLIBCABI_WEAK;
/* First thing on the new kernel thread (its block installed): make a
 * reused block's static TLS look fresh, reset errno and the locale, set up
 * the C library's per-thread caches. */
void glibcabi_kthread_start(bool reused) GLIBCABI_WEAK;
/* On a helper kernel thread the C library made (its pthread_create):
 * keep its DTV's start, which glibc points into only at an offset, so
 * that a leak checker finds it reachable (tls_keep_kthread). */
void glibcabi_kthread_keep_dtv(void) GLIBCABI_WEAK;
/* What the C library's first pthread_create does to the process: stdio
 * takes its locks from now on, and so does malloc on the initial thread.
 * Before the first thread is made; idempotent. */
void glibcabi_process_threaded(void) GLIBCABI_WEAK;

#endif
