/* Test helper: uint64_t regs_switch(struct ctx *from, struct ctx *to,
 *                                    const uint64_t in[6], uint64_t out[6])
 * Loads rbx, rbp, r12-r15 from in[], calls ctx_switch(from, to), and stores
 * the six registers as they are when the switch returns into out[].  C
 * cannot pin values in callee-saved registers across a call reliably. */
	.text
	.globl	regs_switch
	.type	regs_switch, @function
	.p2align 4
regs_switch:
	.cfi_startproc
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	pushq	%rbx
	.cfi_adjust_cfa_offset 8
	pushq	%r12
	.cfi_adjust_cfa_offset 8
	pushq	%r13
	.cfi_adjust_cfa_offset 8
	pushq	%r14
	.cfi_adjust_cfa_offset 8
	pushq	%r15
	.cfi_adjust_cfa_offset 8
	pushq	%rcx                    /* out[]; also realigns %rsp to 16 */
	.cfi_adjust_cfa_offset 8
	movq	0(%rdx), %rbx
	movq	8(%rdx), %rbp
	movq	16(%rdx), %r12
	movq	24(%rdx), %r13
	movq	32(%rdx), %r14
	movq	40(%rdx), %r15
	call	ctx_switch
	popq	%rcx
	.cfi_adjust_cfa_offset -8
	movq	%rbx, 0(%rcx)
	movq	%rbp, 8(%rcx)
	movq	%r12, 16(%rcx)
	movq	%r13, 24(%rcx)
	movq	%r14, 32(%rcx)
	movq	%r15, 40(%rcx)
	popq	%r15
	.cfi_adjust_cfa_offset -8
	popq	%r14
	.cfi_adjust_cfa_offset -8
	popq	%r13
	.cfi_adjust_cfa_offset -8
	popq	%r12
	.cfi_adjust_cfa_offset -8
	popq	%rbx
	.cfi_adjust_cfa_offset -8
	popq	%rbp
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size	regs_switch, .-regs_switch

	.section .note.GNU-stack,"",@progbits
