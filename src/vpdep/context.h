/* Machine contexts of user-level threads.  Two interchangeable
 * implementations, chosen by meson (-Dcontext=asm|ucontext):
 *  - arch/<cpu>/context.S: saves callee-saved registers and the FP control
 *    words on the thread's own stack; `sp` points at that frame;
 *  - context_ucontext.c: the portable reference, built on swapcontext.
 * Neither makes a signal-mask system call on a switch in the asm version. */
#ifndef PPL_CONTEXT_H
#define PPL_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>

#ifdef PPL_CONTEXT_UCONTEXT
#include <ucontext.h>
#endif

typedef void (*ctx_fn)(void *arg);

struct ctx {
	void *sp;     /* asm: saved stack pointer of a suspended context */
	void *tls;    /* per-thread TLS mode: the thread pointer (FS base / TPIDR_EL0)
		       * that ctx_switch_tls* installs when resuming this context;
		       * set by the owner of the context, never by a switch */
#ifdef PPL_CONTEXT_UCONTEXT
	ucontext_t uc;
	ctx_fn pending_fn;  /* run on this context right after it is entered */
	void *pending_arg;
#endif
};

/* Prepare `c` so that switching to it runs entry(arg) on the given stack
 * (stack_lo .. stack_lo+size).  entry must never return. */
void ctx_make(struct ctx *c, void *stack_lo, size_t size, ctx_fn entry, void *arg);

/* Save the current context in `from` and resume `to`. */
void ctx_switch(struct ctx *from, struct ctx *to);

/* Save the current context in `from`, switch to `to`'s stack, call fn(arg)
 * there, then resume `to`.  fn runs after `from` is completely saved, so it
 * may publish `from` (release a lock, make it runnable) without a race. */
void ctx_switch_call(struct ctx *from, struct ctx *to, ctx_fn fn, void *arg);

/* Per-thread TLS variants: the same, and they also install to->tls as the
 * thread pointer before anything runs on `to` (fn included).  from->tls is
 * not saved: a context's thread pointer never changes while it lives. */
void ctx_switch_tls(struct ctx *from, struct ctx *to);
void ctx_switch_call_tls(struct ctx *from, struct ctx *to, ctx_fn fn, void *arg);

/* Choose how ctx_switch_tls* writes the thread pointer: the unprivileged
 * instruction (wrfsbase, when the kernel enables FSGSBASE) or a system call.
 * Called once, before the first ctx_switch_tls*.  Returns the choice made. */
bool ctx_tls_setup(void);
/* The calling context's thread pointer. */
void *ctx_tls_self(void);

#endif
