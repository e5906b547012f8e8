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
	unsigned long tls_sel;  /* x86_64 `ldt` method: the %fs selector whose LDT
				 * entry has base `tls` (ctx_tls_selector), loaded
				 * instead of writing the base; 0: write the base */
#ifdef PPL_CONTEXT_UCONTEXT
	ucontext_t uc;
	ctx_fn pending_fn;  /* run on this context right after it is entered */
	void *pending_arg;
#endif
};

/* Prepare `c` so that switching to it runs entry(arg) on the given stack
 * (stack_lo .. stack_lo+size).  entry must never return. */
void ctx_make(struct ctx *c, void *stack_lo, size_t size, ctx_fn entry, void *arg);
/* In arch/<cpu>/context.S, the return address of ctx_make's frame: calls
 * entry (x86_64: rbx, AArch64: x19) with arg (r12, x20), traps if it returns. */
void ctx_trampoline(void) __attribute__((visibility("hidden")));
#if defined(__x86_64__)
/* In arch/x86_64/context.S: the sa_restorer for handlers installed with
 * the raw rt_sigaction (SA_RESTORER); AArch64 uses the vDSO's. */
void ctx_sigreturn(void) __attribute__((visibility("hidden")));
#endif

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

/* How ctx_switch_tls* installs the thread pointer (docs/tls.md):
 *  INSN     an unprivileged write: wrfsbase (x86_64, when the kernel enables
 *           FSGSBASE), msr tpidr_el0 (AArch64);
 *  LDT      x86_64: a context whose tls_sel is nonzero loads that selector
 *           into %fs (the base comes from its LDT entry, set once per block
 *           with modify_ldt); the others make the system call;
 *  SYSCALL  arch_prctl(ARCH_SET_FS) on every switch. */
enum ctx_tls_switch { CTX_TLS_AUTO, CTX_TLS_INSN, CTX_TLS_LDT, CTX_TLS_SYSCALL };

/* Choose the method: `want` (PPL_TLS_SWITCH), or AUTO for the best that works
 * here.  A method that does not work here is replaced by the best that does,
 * and *why (if not NULL) says why.  Called once, before the first
 * ctx_switch_tls*.  Returns the method in use. */
enum ctx_tls_switch ctx_tls_setup(enum ctx_tls_switch want, const char **why);
/* The method in use and its name ("wrfsbase", "ldt", "arch_prctl", ...). */
enum ctx_tls_switch ctx_tls_switch_in_use(void);
const char *ctx_tls_switch_name(enum ctx_tls_switch m);
/* LDT method: `size` bytes aligned to `align` below 4 GiB for a TLS block,
 * for up to four times as many blocks as there are LDT entries (8,192);
 * NULL when the method is another one, past that, or when no memory is
 * left below 4 GiB.  Never freed
 * (blocks are pooled for the process's life). */
void *ctx_tls_low_alloc(size_t size, size_t align);
/* LDT method: a selector whose segment base is tp, for struct ctx's tls_sel;
 * 0 (the switch then makes the system call) when tp is above 4 GiB, the
 * LDT is full or the method is another one.  Once per block: the entry stays
 * with it.  A system call of 15-75 us (the kernel rebuilds the whole LDT). */
unsigned ctx_tls_selector(void *tp);
/* Would ctx_tls_selector(tp) give tp an entry (method, address, room)? */
bool ctx_tls_selectable(const void *tp);
/* LDT entries handed out so far (PPL_STATS). */
unsigned ctx_tls_selectors_used(void);
/* The calling context's thread pointer. */
void *ctx_tls_self(void);

#endif
