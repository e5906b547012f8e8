/* AArch64 (AAPCS64) context switch for user-level threads.
 *
 * A suspended context is one 176-byte, 16-byte aligned frame on its own
 * stack; struct ctx's `sp` (offset 0) points at it:
 *
 *   sp + 0x00   x19  x20
 *   sp + 0x10   x21  x22
 *   sp + 0x20   x23  x24
 *   sp + 0x30   x25  x26
 *   sp + 0x40   x27  x28
 *   sp + 0x50   x29  x30 (lr)   a standard frame record
 *   sp + 0x60   d8   d9
 *   sp + 0x70   d10  d11
 *   sp + 0x80   d12  d13
 *   sp + 0x90   d14  d15
 *   sp + 0xa0   FPCR pad
 *
 * Only callee-saved state is kept (x19-x29, lr, the low halves of v8-v15)
 * plus FPCR, whose rounding mode the AAPCS64 makes thread state.  FPSR
 * (cumulative flags) is not preserved by the ABI.  No signal-mask system
 * call.  A fresh frame (context_make.c) holds entry in x19, its argument in
 * x20, x29 = 0 and lr = ctx_trampoline. */

#define FRAME_SIZE 176

	.text

.macro SAVE_FRAME
	sub	sp, sp, #FRAME_SIZE
	.cfi_adjust_cfa_offset FRAME_SIZE
	stp	x19, x20, [sp, #0x00]
	stp	x21, x22, [sp, #0x10]
	stp	x23, x24, [sp, #0x20]
	stp	x25, x26, [sp, #0x30]
	stp	x27, x28, [sp, #0x40]
	stp	x29, x30, [sp, #0x50]
	stp	d8, d9, [sp, #0x60]
	stp	d10, d11, [sp, #0x70]
	stp	d12, d13, [sp, #0x80]
	stp	d14, d15, [sp, #0x90]
	mrs	x9, fpcr
	str	x9, [sp, #0xa0]
	.cfi_offset x19, -176
	.cfi_offset x20, -168
	.cfi_offset x21, -160
	.cfi_offset x22, -152
	.cfi_offset x23, -144
	.cfi_offset x24, -136
	.cfi_offset x25, -128
	.cfi_offset x26, -120
	.cfi_offset x27, -112
	.cfi_offset x28, -104
	.cfi_offset x29, -96
	.cfi_offset x30, -88
	.cfi_offset d8, -80
	.cfi_offset d9, -72
	.cfi_offset d10, -64
	.cfi_offset d11, -56
	.cfi_offset d12, -48
	.cfi_offset d13, -40
	.cfi_offset d14, -32
	.cfi_offset d15, -24
.endm

.macro RESTORE_FRAME_AND_RETURN
	ldr	x9, [sp, #0xa0]
	msr	fpcr, x9
	ldp	x19, x20, [sp, #0x00]
	ldp	x21, x22, [sp, #0x10]
	ldp	x23, x24, [sp, #0x20]
	ldp	x25, x26, [sp, #0x30]
	ldp	x27, x28, [sp, #0x40]
	ldp	x29, x30, [sp, #0x50]
	ldp	d8, d9, [sp, #0x60]
	ldp	d10, d11, [sp, #0x70]
	ldp	d12, d13, [sp, #0x80]
	ldp	d14, d15, [sp, #0x90]
	add	sp, sp, #FRAME_SIZE
	.cfi_adjust_cfa_offset -FRAME_SIZE
	ret
.endm

/* void ctx_switch(struct ctx *from x0, struct ctx *to x1) */
	.globl	ctx_switch
	.hidden	ctx_switch
	.type	ctx_switch, %function
	.p2align 4
ctx_switch:
	.cfi_startproc
	SAVE_FRAME
	mov	x9, sp
	str	x9, [x0]
	ldr	x9, [x1]
	mov	sp, x9
	RESTORE_FRAME_AND_RETURN
	.cfi_endproc
	.size	ctx_switch, .-ctx_switch

/* void ctx_switch_call(struct ctx *from x0, struct ctx *to x1,
 *                      ctx_fn fn x2, void *arg x3)
 * fn runs on `to`'s stack below its frame, after `from` is fully stored. */
	.globl	ctx_switch_call
	.hidden	ctx_switch_call
	.type	ctx_switch_call, %function
	.p2align 4
ctx_switch_call:
	.cfi_startproc
	SAVE_FRAME
	mov	x9, sp
	str	x9, [x0]
	ldr	x9, [x1]
	mov	sp, x9
	/* Frame pointer at to's frame record: a walk from fn continues into
	 * to's callers, not into the stack we left. */
	add	x29, sp, #0x50
	mov	x0, x3
	blr	x2
	RESTORE_FRAME_AND_RETURN
	.cfi_endproc
	.size	ctx_switch_call, .-ctx_switch_call

/* Per-thread TLS variants: TPIDR_EL0 := to->tls (struct ctx offset 8)
 * before the frame is popped and before fn runs.  The register is writable
 * from user mode: no system call, no feature check. */
	.globl	ctx_switch_tls
	.hidden	ctx_switch_tls
	.type	ctx_switch_tls, %function
	.p2align 4
ctx_switch_tls:
	.cfi_startproc
	SAVE_FRAME
	mov	x9, sp
	str	x9, [x0]
	ldp	x9, x10, [x1]
	msr	tpidr_el0, x10
	mov	sp, x9
	RESTORE_FRAME_AND_RETURN
	.cfi_endproc
	.size	ctx_switch_tls, .-ctx_switch_tls

	.globl	ctx_switch_call_tls
	.hidden	ctx_switch_call_tls
	.type	ctx_switch_call_tls, %function
	.p2align 4
ctx_switch_call_tls:
	.cfi_startproc
	SAVE_FRAME
	mov	x9, sp
	str	x9, [x0]
	ldp	x9, x10, [x1]
	msr	tpidr_el0, x10
	mov	sp, x9
	add	x29, sp, #0x50
	mov	x0, x3
	blr	x2
	RESTORE_FRAME_AND_RETURN
	.cfi_endproc
	.size	ctx_switch_call_tls, .-ctx_switch_call_tls

/* First code of a fresh context; lr is undefined so unwinders stop, and
 * x29 = 0 ends frame-pointer walks.  entry must not return. */
	.globl	ctx_trampoline
	.hidden	ctx_trampoline
	.type	ctx_trampoline, %function
	.p2align 4
	.cfi_startproc
	.cfi_undefined x30
	/* Never executed: keeps (return address - 1) of a fresh frame inside
	 * this FDE for debuggers. */
	nop
ctx_trampoline:
	mov	x29, #0
	mov	x0, x20
	blr	x19
	brk	#1
	.cfi_endproc
	.size	ctx_trampoline, .-ctx_trampoline

	.section .note.GNU-stack,"",%progbits
