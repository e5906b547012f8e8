/* Initial frame of a fresh AArch64 context; the layout is the table at the
 * top of context.S, which this file must match word for word. */
#include <stdbool.h>
#include <stdint.h>

#include "context.h"

enum { FRAME_WORDS = 22 };

void ctx_make(struct ctx *c, void *stack_lo, size_t size, ctx_fn entry, void *arg)
{
	uintptr_t top = ((uintptr_t)stack_lo + size) & ~(uintptr_t)15;
	/* A null frame record above the trampoline's stack pointer. */
	uint64_t *w = (uint64_t *)(top - 16);
	w[0] = 0;
	w[1] = 0;
	uint64_t *f = w - FRAME_WORDS;
	for (int i = 0; i < FRAME_WORDS; i++)
		f[i] = 0;             /* x21-x28, d8-d15: nothing to inherit */
	f[0] = (uint64_t)(uintptr_t)entry;    /* x19 */
	f[1] = (uint64_t)(uintptr_t)arg;      /* x20 */
	f[10] = 0;                            /* x29: end of the frame chain */
	f[11] = (uint64_t)(uintptr_t)ctx_trampoline; /* x30 */
	f[20] = 0;  /* FPCR default: round to nearest, no traps, IEEE mode */
	c->sp = f;
	c->tls = NULL;
	c->tls_sel = 0;
}

#define NAME_INSN "msr"
static enum ctx_tls_switch tls_method = CTX_TLS_INSN;

enum ctx_tls_switch ctx_tls_setup(enum ctx_tls_switch want, const char **why)
{
	/* TPIDR_EL0 is always writable from user mode: the only way. */
	if (want != CTX_TLS_AUTO && want != CTX_TLS_INSN && why)
		*why = "AArch64 writes TPIDR_EL0";
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
	void *tp;
	__asm__ volatile("mrs %0, tpidr_el0" : "=r"(tp));
	return tp;
}
