/* Initial frame of a fresh x86_64 context; the layout is the table at the
 * top of context.S, which this file must match word for word. */
#include <stdint.h>

#include "context.h"

enum {
	FRAME_WORDS = 8,
	/* ABI defaults: all exceptions masked, round to nearest; x87 in
	 * extended precision.  Inheriting the creator's modes would make a
	 * thread's arithmetic depend on who happened to create it. */
	MXCSR_DEFAULT = 0x1F80,
	X87CW_DEFAULT = 0x037F,
};

void ctx_make(struct ctx *c, void *stack_lo, size_t size, ctx_fn entry, void *arg)
{
	uintptr_t top = ((uintptr_t)stack_lo + size) & ~(uintptr_t)15;
	/* Two zero words at the top form a null frame record just above the
	 * trampoline's stack pointer, so even a naive walker stops there.
	 * They also keep that pointer 16-byte aligned for the call to entry. */
	uint64_t *w = (uint64_t *)(top - 16);
	w[0] = 0;
	w[1] = 0;
	uint64_t *f = w - FRAME_WORDS;
	f[0] = (uint64_t)MXCSR_DEFAULT | (uint64_t)X87CW_DEFAULT << 32;
	f[1] = 0;                      /* r15 */
	f[2] = 0;                      /* r14 */
	f[3] = 0;                      /* r13 */
	f[4] = (uint64_t)(uintptr_t)arg;   /* r12 */
	f[5] = (uint64_t)(uintptr_t)entry; /* rbx */
	f[6] = 0;                      /* rbp: end of the frame-pointer chain */
	f[7] = (uint64_t)(uintptr_t)ctx_trampoline;
	c->sp = f;
	c->tls = NULL;
	c->tls_sel = 0;
}

void *ctx_tls_self(void)
{
	void *tp;
	/* glibc's TCB starts with a pointer to itself (TLS variant II). */
	__asm__ volatile("movq %%fs:0, %0" : "=r"(tp));
	return tp;
}
