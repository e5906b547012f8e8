/* Thread-local storage modes (docs/tls.md).
 *
 * shared:     user threads run on their VP's glibc TLS block; the scheduler
 *             saves and restores errno on every switch.
 * per-thread: every user thread owns a complete glibc TLS block and thread
 *             descriptor (struct pthread), installed as the thread pointer by
 *             the context switch.  Only the glibc knowledge lives behind this
 *             header (tls_glibc.c). */
#ifndef PPL_TLS_H
#define PPL_TLS_H

#include <stdbool.h>
#include <stddef.h>

/* Set once by tls_mode_init, before the first VP starts; read-only after. */
extern bool tls_per_thread __attribute__((visibility("hidden")));

/* Decide the mode: `want_per_thread` from PPL_TLS or the build default.  If
 * the C library's layout is not one libppl knows, fall back to shared TLS
 * and say so once on stderr. */
void tls_mode_init(bool want_per_thread);
/* The main thread becomes a user thread that may migrate (ppl_runtime_start). */
void tls_adopt_main(void);
/* A fresh, fully initialised block; returns its thread pointer or NULL.
 * Blocks are never freed: glibc keeps per-thread malloc state in them that
 * it frees only for threads it created, so the TCB pool reuses them. */
void *tls_block_new(void);
/* Record the thread's stack in the block's descriptor (alloca limits). */
void tls_block_set_stack(void *tp, void *lo, size_t size);
/* First thing a user thread does on its own block: make a reused block look
 * fresh (static TLS images of every module but the C library's, errno,
 * locale) and set up the C library's per-thread caches. */
void tls_thread_start(bool reused);
/* Last thing before a user thread leaves for good: C++ thread_local
 * destructors and the C library's per-thread leftovers. */
void tls_thread_exit(void);
/* After a dlopen: copy the TLS init images of newly loaded modules that
 * use static TLS (initial-exec) into every live user-thread block. */
void tls_after_dlopen(void);

#endif
