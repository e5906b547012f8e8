/* The C library's private ABI (glibc): everything libppl knows about
 * glibc beyond its public headers, in one module of its own (docs/tls.md,
 * docs/vpdep.md) that vpindep and a VP backend both use.
 *
 * TLS blocks and thread descriptors (tls.c), the fork handlers' registration
 * and the single-threaded flag (libc_state.c).
 *
 * Thread-local storage modes:
 * shared:     user threads run on their VP's glibc TLS block; the scheduler
 *             saves and restores errno on every switch.
 * per-thread: every user thread owns a complete glibc TLS block and thread
 *             descriptor (struct pthread), installed as the thread pointer by
 *             the context switch. */
#ifndef PPL_GLIBCABI_H
#define PPL_GLIBCABI_H

#include <pthread.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "context.h"   /* vpdep's contract: enum ctx_tls_switch */

/* Set once by tls_mode_init, before the first VP starts; read-only after. */
extern bool tls_per_thread __attribute__((visibility("hidden")));

/* Decide the mode: `want_per_thread` from PPL_TLS or the build default.  If
 * the C library's layout is not one libppl knows, fall back to shared TLS
 * and say so once on stderr. */
void tls_mode_init(bool want_per_thread, enum ctx_tls_switch sw);
/* "shared", or "per-thread/<switch method>" (PPL_STATS, PPL_DEBUG). */
const char *tls_mode_name(void);
/* The main thread becomes a user thread that may migrate (ppl_runtime_start). */
void tls_adopt_main(void);
/* A fresh, fully initialised block; returns its thread pointer or NULL.
 * With the `ldt` switch method it is placed below 4 GiB while the LDT has
 * room, so that ctx_tls_selector can give it an entry (the caller decides
 * when).
 * Blocks are never freed: glibc keeps per-thread malloc state in them that
 * it frees only for threads it created, so the TCB pool reuses them. */
void *tls_block_new(void);
/* ---- a user thread's block at the top of its stack, as NPTL places it ----------
 * The block's memory is the stack's, so it goes when the stack goes
 * (tls_block_leave), and what the C library keeps per thread for malloc (its
 * tcache and arena, in its own static TLS, which it frees only for threads it
 * made) travels in a small record to the thread's next block. */
struct tls_libc;
/* The bytes a block takes at a stack's top, at most (0 without per-thread TLS). */
size_t tls_block_room(void);
/* With the `ldt` switch method, a block below 4 GiB while the LDT has room
 * (pooled with its TCB for good, like tls_block_new's); else NULL. */
void *tls_block_low(void);
/* Make a block at the top of the stack [lo, lo + size): its thread pointer,
 * or NULL (out of memory).  *used: the bytes it takes from the top, which
 * the thread's frames must stay below.  *rec: the C library's state of the
 * TCB's previous block, installed in this one; when it holds none, a
 * parked record's is taken (and *rec becomes that record). */
void *tls_block_in_stack(void *lo, size_t size, struct tls_libc **rec, size_t *used);
/* The stack of tp's block is freed or given back to the application: move
 * the C library's state into *rec (made on first use), free the block's
 * DTV and dynamic TLS, and forget the block. */
void tls_block_leave(void *tp, struct tls_libc **rec);
/* A TCB that goes cold (tcbpool.c) parks its record (*rec, may be NULL)
 * for the next block made without one; *rec becomes NULL. */
void tls_libc_park(struct tls_libc **rec);
/* Per-thread TLS: keep a pointer to the start of the DTV of the kernel
 * thread whose thread pointer is tp (NULL: the caller's), a VP's or the
 * monitor's, which glibc points into only at an offset: a leak checker
 * then finds it reachable, not "possibly lost". */
void tls_keep_kthread(void *tp);
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
/* The module list may have changed (dlclose; tls_after_dlopen says so
 * itself): the cached static TLS images are collected again. */
void tls_modules_changed(void);
/* fork: prepare (true) takes the locks of the block list, else releases them. */
void tls_atfork(bool prepare);

/* ---- a TLS block for a kernel thread the C library did not create -------------
 * For a VP backend whose kernel threads are not glibc's (raw clone): a
 * complete block (static TLS of every module initialised, a descriptor
 * glibc's functions accept, as a user thread's) whose thread pointer the
 * new thread installs (CLONE_SETTLS) before it runs any C.  NULL and errno
 * (ENOTSUP: the C library's layout is not one libppl knows; ENOMEM).
 * glibcabi_tls_free takes back a block no thread runs on any more: it goes
 * to a pool that glibcabi_tls_new takes from first (its malloc state stays
 * in it, as glibc's own is freed only for threads glibc made), and the
 * thread that gets a pooled block calls tls_thread_start(true) first. */
void *glibcabi_tls_new(bool *reused);
void glibcabi_tls_free(void *tp);

/* ---- the C library's process state (libc_state.c) ----------------------------- */

/* Register fork handlers with the C library as libppl's own (__register_atfork
 * with libppl's DSO handle): 0 or errno. */
int glibcabi_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void));

/* glibc's __libc_single_threaded: true until a second kernel thread exists.
 * libppl clears it when user threads may interleave (its VPs start, or a
 * thread is cancelled asynchronously); read on the mutex fast path.  A
 * program with a copy relocation of it has two (libc_state.c):
 * glibcabi_set_multi_threaded clears both, glibcabi_state_init (at
 * start-up, before any other thread) finds the C library's own. */
extern char __libc_single_threaded;
static inline bool glibcabi_single_threaded(void)
{
	return __atomic_load_n(&__libc_single_threaded, __ATOMIC_RELAXED) != 0;
}
void glibcabi_state_init(void);
void glibcabi_set_multi_threaded(void);


/* glibc's private view of __pthread_unwind_buf_t (its nptl/descr.h): the
 * buffers __pthread_register_cancel links (unwind.c), which glibc's own
 * unwinder reads too. */
struct unwind_buf {
	struct {
		__jmp_buf jmp_buf;
		int mask_was_saved;
	} cancel_jmp_buf[1];
	union {
		void *pad[4];
		struct {
			struct unwind_buf *prev;   /* next older registered buffer */
			struct _pthread_cleanup_buffer *cleanup;  /* old-style list then */
			int canceltype;            /* the _defer form's saved type */
		} data;
	} priv;
};

_Static_assert(sizeof(struct unwind_buf) == sizeof(__pthread_unwind_buf_t), "unwind buffer size");

/* ---- the C library's own cancellation points (per-thread TLS; docs/cancel.md) ----
 * The descriptor's cancelhandling bits (glibc 2.36, nptl/descr.h) that
 * libppl keeps in step with its own word.  TLS_CANCEL_ASYNC is also set by
 * the C library around each of its cancellable system calls. */
#define TLS_CANCEL_DISABLED 0x01
#define TLS_CANCEL_ASYNC    0x02
#define TLS_CANCEL_CANCELED 0x08
#define TLS_CANCEL_EXITING  0x10

/* Per-thread TLS and the descriptor's cancellation fields checked (set
 * once by tls_mode_init). */
extern bool tls_libc_cancel __attribute__((visibility("hidden")));
/* The main thread's descriptor (its original block). */
void *tls_main_block(void);
/* glibc's robust-list head in the block of thread pointer tp, which NPTL
 * registers for each thread; NULL with shared TLS. */
void *tls_robust_head(void *tp);
/* Replace the `clear` bits of tp's cancelhandling with `set`; the old word. */
int tls_cancel_bits(void *tp, int clear, int set);
/* A new thread's descriptor, before the thread can be cancelled (after
 * tls_block_set_stack): no request, and glibc's unwinder hands over to
 * the thread's hook (`redirect` is kept by the caller, per thread). */
void tls_cancel_reset(void *tp, __pthread_unwind_buf_t *redirect);
/* On the thread: make `hook` (in its bottom frame, above every frame a
 * longjmp can reach; NULL: the main thread's own) the last entry of the C
 * library's cleanup list, with routine fn, which glibc's unwinder runs
 * when the C library acts on a request.  fn calls tls_cancel_hooked()
 * first, then unwinds the thread and does not return. */
void tls_cancel_hook(struct _pthread_cleanup_buffer *hook, void (*fn)(void *));
void tls_cancel_hooked(void);
/* libppl's unwinder: run (off the list) the C library's own cleanup
 * entries below address `below`, or all of them; never the hook. */
void tls_cancel_run_cleanups(uintptr_t below, bool all);

/* The C library's entry points that libppl uses and no public header
 * declares (glibc exports them for its own runtime and for libstdc++). */
int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
		      void *dso_handle);
/* thread_local destructors of the calling kernel thread (libstdc++'s hook). */
int __cxa_thread_atexit_impl(void (*fn)(void *), void *obj, void *dso_handle);
/* This DSO's handle (crtbegin.o). */
extern void *__dso_handle;

#endif
