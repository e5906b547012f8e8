/* Initial frame of a fresh AArch64 context; the layout is the table at the
 * top of context.S, which this file must match word for word. */
#include <stdbool.h>
#include <stdint.h>

#include "context.h"

/* In context.S: calls entry (x19) with arg (x20), traps if it returns. */
extern void ctx_trampoline(void) __attribute__((visibility("hidden")));

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
}

bool ctx_tls_setup(void)
{
	return true;   /* TPIDR_EL0 is always writable from user mode */
}

void *ctx_tls_self(void)
{
	void *tp;
	__asm__ volatile("mrs %0, tpidr_el0" : "=r"(tp));
	return tp;
}
