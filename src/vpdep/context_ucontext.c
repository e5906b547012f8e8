/* Portable reference implementation of context.h on getcontext/makecontext/
 * swapcontext.  Slow (swapcontext changes the signal mask with a system
 * call) but independent of any hand-written assembly: the assembly versions
 * are tested against it.
 *
 * ucontext_t points into itself (uc_mcontext.fpregs on x86_64), so a
 * struct ctx must not be copied or moved once ctx_make has filled it. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <ucontext.h>

#include "syscall_raw.h"
#include "context.h"

/* Run the callback a ctx_switch_call left for the context now resuming.
 * Cleared before the call: fn may switch again and come back here. */
static void run_pending(struct ctx *self)
{
	ctx_fn fn = self->pending_fn;
	if (fn != NULL) {
		self->pending_fn = NULL;
		fn(self->pending_arg);
	}
}

/* makecontext passes only int arguments, so each 64-bit pointer arrives as
 * two 32-bit halves (this also works where pointers are 32 bits). */
static uintptr_t join(unsigned hi, unsigned lo)
{
	return (uintptr_t)(((uint64_t)hi << 32) | lo);
}

static void split(uintptr_t v, unsigned *hi, unsigned *lo)
{
	*hi = (unsigned)((uint64_t)v >> 32);
	*lo = (unsigned)((uint64_t)v & 0xffffffffu);
}

static void trampoline(unsigned c_hi, unsigned c_lo, unsigned e_hi, unsigned e_lo,
		       unsigned a_hi, unsigned a_lo)
{
	struct ctx *self = (struct ctx *)join(c_hi, c_lo);
	ctx_fn entry = (ctx_fn)join(e_hi, e_lo);
	run_pending(self);
	entry((void *)join(a_hi, a_lo));
	abort(); /* entry must never return */
}

void ctx_make(struct ctx *c, void *stack_lo, size_t size, ctx_fn entry, void *arg)
{
	/* getcontext cannot fail on Linux for the calling thread's own context. */
	getcontext(&c->uc);
	c->uc.uc_stack.ss_sp = stack_lo;
	c->uc.uc_stack.ss_size = size;
	c->uc.uc_link = NULL;
	c->pending_fn = NULL;
	c->pending_arg = NULL;
	c->sp = NULL;
	c->tls = NULL;
	c->tls_sel = 0;
	unsigned c_hi, c_lo, e_hi, e_lo, a_hi, a_lo;
	split((uintptr_t)c, &c_hi, &c_lo);
	split((uintptr_t)entry, &e_hi, &e_lo);
	split((uintptr_t)arg, &a_hi, &a_lo);
	makecontext(&c->uc, (void (*)(void))trampoline, 6, c_hi, c_lo, e_hi, e_lo, a_hi, a_lo);
}

void ctx_switch(struct ctx *from, struct ctx *to)
{
	swapcontext(&from->uc, &to->uc);
	/* Resumed, possibly by a ctx_switch_call that left work for us. */
	run_pending(from);
}

void ctx_switch_call(struct ctx *from, struct ctx *to, ctx_fn fn, void *arg)
{
	to->pending_fn = fn;
	to->pending_arg = arg;
	swapcontext(&from->uc, &to->uc);
	run_pending(from);
}

/* The thread pointer is written before swapcontext: what still runs on
 * from's side (the signal-mask system call) uses no TLS. */
static void set_tp(void *tp)
{
#if defined(__x86_64__)
	vp_syscall(SYS_arch_prctl, 0x1002 /* ARCH_SET_FS */, tp);
#elif defined(__aarch64__)
	__asm__ volatile("msr tpidr_el0, %0" : : "r"(tp));
#else
#error "per-thread TLS: no thread-pointer write for this architecture"
#endif
}

void ctx_switch_tls(struct ctx *from, struct ctx *to)
{
	set_tp(to->tls);
	ctx_switch(from, to);
}

void ctx_switch_call_tls(struct ctx *from, struct ctx *to, ctx_fn fn, void *arg)
{
	set_tp(to->tls);
	ctx_switch_call(from, to, fn, arg);
}

#define NAME_INSN "insn"
static enum ctx_tls_switch tls_method = CTX_TLS_SYSCALL;

/* The reference implementation always makes the system call (x86_64) or
 * writes the register (AArch64, which has no other way). */
enum ctx_tls_switch ctx_tls_setup(enum ctx_tls_switch want, const char **why)
{
#if defined(__aarch64__)
	tls_method = CTX_TLS_INSN;
#endif
	if (want != CTX_TLS_AUTO && want != tls_method && why)
		*why = "the ucontext build has one way";
	return tls_method;
}

enum ctx_tls_switch ctx_tls_switch_in_use(void)
{
	return tls_method;
}

const char *ctx_tls_switch_name(enum ctx_tls_switch m)
{
	return m == CTX_TLS_INSN ? NAME_INSN : m == CTX_TLS_SYSCALL ? "arch_prctl" : m == CTX_TLS_LDT ? "ldt" : "auto";
}

void *ctx_tls_low_alloc(size_t size, size_t align)
{
	return NULL;   /* no LDT method here */
}

unsigned ctx_tls_selector(void *tp)
{
	return 0;
}

bool ctx_tls_selectable(const void *tp)
{
	return false;
}

unsigned ctx_tls_selectors_used(void)
{
	return 0;
}

void *ctx_tls_self(void)
{
	return __builtin_thread_pointer();
}
