/* Test helper: void regs_switch(struct ctx *from, struct ctx *to,
 *                               const uint64_t in[18], uint64_t out[18])
 * Loads x19-x28 and d8-d15 from in[], calls ctx_switch(from, to), and
 * stores those registers as they are when the switch returns into out[]. */
	.text
	.globl	regs_switch
	.type	regs_switch, %function
	.p2align 4
regs_switch:
	.cfi_startproc
	sub	sp, sp, #176
	.cfi_adjust_cfa_offset 176
	stp	x19, x20, [sp, #0x00]
	stp	x21, x22, [sp, #0x10]
	stp	x23, x24, [sp, #0x20]
	stp	x25, x26, [sp, #0x30]
	stp	x27, x28, [sp, #0x40]
	stp	x29, x30, [sp, #0x50]
	.cfi_offset x29, -96
	.cfi_offset x30, -88
	stp	d8, d9, [sp, #0x60]
	stp	d10, d11, [sp, #0x70]
	stp	d12, d13, [sp, #0x80]
	stp	d14, d15, [sp, #0x90]
	str	x3, [sp, #0xa0]
	ldp	x19, x20, [x2, #0x00]
	ldp	x21, x22, [x2, #0x10]
	ldp	x23, x24, [x2, #0x20]
	ldp	x25, x26, [x2, #0x30]
	ldp	x27, x28, [x2, #0x40]
	ldp	d8, d9, [x2, #0x50]
	ldp	d10, d11, [x2, #0x60]
	ldp	d12, d13, [x2, #0x70]
	ldp	d14, d15, [x2, #0x80]
	bl	ctx_switch
	ldr	x3, [sp, #0xa0]
	stp	x19, x20, [x3, #0x00]
	stp	x21, x22, [x3, #0x10]
	stp	x23, x24, [x3, #0x20]
	stp	x25, x26, [x3, #0x30]
	stp	x27, x28, [x3, #0x40]
	stp	d8, d9, [x3, #0x50]
	stp	d10, d11, [x3, #0x60]
	stp	d12, d13, [x3, #0x70]
	stp	d14, d15, [x3, #0x80]
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
	add	sp, sp, #176
	.cfi_adjust_cfa_offset -176
	ret
	.cfi_endproc
	.size	regs_switch, .-regs_switch

	.section .note.GNU-stack,"",%progbits
