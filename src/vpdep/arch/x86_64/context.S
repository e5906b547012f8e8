/* x86_64 System V context switch for user-level threads.
 *
 * A suspended context is one frame on its own stack; struct ctx's `sp`
 * (offset 0) points at it.  The frame is 64 bytes and 16-byte aligned:
 *
 *   sp + 0x00   MXCSR (4 bytes)   x87 control word (2 bytes)   pad (2)
 *   sp + 0x08   r15
 *   sp + 0x10   r14
 *   sp + 0x18   r13
 *   sp + 0x20   r12
 *   sp + 0x28   rbx
 *   sp + 0x30   rbp       \  together a standard frame record, so a
 *   sp + 0x38   rip        / frame-pointer walk crosses the switch too
 *
 * Only callee-saved state is kept: the caller of ctx_switch has already
 * spilled everything else, as for any call.  The MXCSR status flags and the
 * x87 status word are not part of the ABI's preserved state, but their
 * control fields are, so both control words travel with the thread.
 * The signal mask is deliberately not switched (no system call): all user
 * threads of a VP share its kernel thread's mask.
 *
 * A fresh frame (ctx_make, context_make.c) holds entry in rbx, its argument
 * in r12, rbp = 0 and rip = ctx_trampoline.
 *
 * The CFI is valid on both sides of the stack switch because every frame,
 * saved or fresh, has the same shape. */

#ifdef __CET__
#include <cet.h>
#else
#define _CET_ENDBR
#endif

#define FRAME_SIZE 0x40

	.text

/* Push the callee-saved registers and the control words; leaves %rsp at the
 * new frame (16-byte aligned, since %rsp was 8 mod 16 on entry). */
.macro SAVE_FRAME
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbp, 0
	pushq	%rbx
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbx, 0
	pushq	%r12
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %r12, 0
	pushq	%r13
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %r13, 0
	pushq	%r14
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %r14, 0
	pushq	%r15
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %r15, 0
	subq	$8, %rsp
	.cfi_adjust_cfa_offset 8
	stmxcsr	(%rsp)
	fnstcw	4(%rsp)
.endm

/* Pop the frame at %rsp and return into the context it describes. */
.macro RESTORE_FRAME_AND_RETURN
	ldmxcsr	(%rsp)
	fldcw	4(%rsp)
	addq	$8, %rsp
	.cfi_adjust_cfa_offset -8
	popq	%r15
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r15
	popq	%r14
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r14
	popq	%r13
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r13
	popq	%r12
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r12
	popq	%rbx
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbx
	popq	%rbp
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbp
	ret
.endm

/* void ctx_switch(struct ctx *from %rdi, struct ctx *to %rsi) */
	.globl	ctx_switch
	.hidden	ctx_switch
	.type	ctx_switch, @function
	.p2align 4
ctx_switch:
	.cfi_startproc
	_CET_ENDBR
	SAVE_FRAME
	movq	%rsp, (%rdi)
	movq	(%rsi), %rsp
	RESTORE_FRAME_AND_RETURN
	.cfi_endproc
	.size	ctx_switch, .-ctx_switch

/* void ctx_switch_call(struct ctx *from %rdi, struct ctx *to %rsi,
 *                      ctx_fn fn %rdx, void *arg %rcx)
 *
 * fn runs on `to`'s stack just below `to`'s saved frame: `from` is complete
 * in memory by then, so fn may hand it to another VP, which may resume it
 * at once; nothing here touches `from` or its stack after the store. */
	.globl	ctx_switch_call
	.hidden	ctx_switch_call
	.type	ctx_switch_call, @function
	.p2align 4
ctx_switch_call:
	.cfi_startproc
	_CET_ENDBR
	SAVE_FRAME
	movq	%rsp, (%rdi)
	movq	(%rsi), %rsp
	/* %rsp is 16-byte aligned here, so fn sees the ABI's alignment.
	 * Point %rbp at to's frame record: a frame-pointer walk from fn then
	 * continues into to's callers, never into the stack we just left. */
	leaq	0x30(%rsp), %rbp
	movq	%rcx, %rdi
	call	*%rdx
	RESTORE_FRAME_AND_RETURN
	.cfi_endproc
	.size	ctx_switch_call, .-ctx_switch_call

/* ---- per-thread TLS variants ----------------------------------------------
 *
 * Same frames; in addition, to->tls (struct ctx offset 8) becomes the FS base
 * before the frame is popped (and before fn runs), one of three ways, chosen
 * once by ctx_tls_setup (tls_switch.c):
 *  - to->tls_sel (offset 16) nonzero (the `ldt` method): load that LDT
 *    selector into %fs; the CPU takes the base from the entry, which
 *    tls_switch.c wrote once for this block (a base below 4 GiB);
 *  - else, with FSGSBASE (ctx_have_wrfsbase): wrfsbase, a few cycles;
 *  - else the kernel's arch_prctl(ARCH_SET_FS), which also sets the %fs
 *    selector to 0.
 * Well-predicted branches, cheaper than an indirect call.
 *
 * SET_FS: FS base := %rax, %rsi = to.  Clobbers %rax, %rdi, %rsi, %rcx, %r11
 * and %rdx on the system-call path; callers keep what they need in
 * callee-saved registers, which are dead here (the frame saved them, the pop
 * restores to's). */
.macro SET_FS
	movl	16(%rsi), %ecx
	testl	%ecx, %ecx
	jz	3f
	movw	%cx, %fs
	jmp	2f
3:	cmpb	$0, ctx_have_wrfsbase(%rip)
	je	1f
	wrfsbase %rax
	jmp	2f
1:	movq	%rax, %rsi
	movl	$0x1002, %edi          /* ARCH_SET_FS */
	movl	$158, %eax             /* SYS_arch_prctl */
	syscall
2:
.endm

/* void ctx_switch_tls(struct ctx *from %rdi, struct ctx *to %rsi) */
	.globl	ctx_switch_tls
	.hidden	ctx_switch_tls
	.type	ctx_switch_tls, @function
	.p2align 4
ctx_switch_tls:
	.cfi_startproc
	_CET_ENDBR
	SAVE_FRAME
	movq	%rsp, (%rdi)
	movq	(%rsi), %rbx
	movq	8(%rsi), %rax
	SET_FS
	movq	%rbx, %rsp
	RESTORE_FRAME_AND_RETURN
	.cfi_endproc
	.size	ctx_switch_tls, .-ctx_switch_tls

/* void ctx_switch_call_tls(struct ctx *from %rdi, struct ctx *to %rsi,
 *                          ctx_fn fn %rdx, void *arg %rcx)
 * The FS base is written while still on from's stack, but after from's
 * frame is stored; nothing publishes from until fn runs. */
	.globl	ctx_switch_call_tls
	.hidden	ctx_switch_call_tls
	.type	ctx_switch_call_tls, @function
	.p2align 4
ctx_switch_call_tls:
	.cfi_startproc
	_CET_ENDBR
	SAVE_FRAME
	movq	%rsp, (%rdi)
	movq	%rdx, %r12
	movq	%rcx, %r13
	movq	(%rsi), %rbx
	movq	8(%rsi), %rax
	SET_FS
	movq	%rbx, %rsp
	leaq	0x30(%rsp), %rbp
	movq	%r13, %rdi
	call	*%r12
	RESTORE_FRAME_AND_RETURN
	.cfi_endproc
	.size	ctx_switch_call_tls, .-ctx_switch_call_tls

/* First code of a fresh context, reached by the `ret` of a switch with %rsp
 * 16-byte aligned.  %rip is marked undefined so unwinders stop here, and
 * %rbp = 0 ends frame-pointer walks.  entry must not return: trap if it does. */
	.globl	ctx_trampoline
	.hidden	ctx_trampoline
	.type	ctx_trampoline, @function
	.p2align 4
	.cfi_startproc
	.cfi_undefined %rip
	/* Never executed: a debugger looks up the caller of a frame at its
	 * return address minus one, which for a fresh frame must still fall
	 * inside this FDE (the one saying "no caller"). */
	nop
ctx_trampoline:
	xorl	%ebp, %ebp
	movq	%r12, %rdi
	call	*%rbx
	ud2
	.cfi_endproc
	.size	ctx_trampoline, .-ctx_trampoline

/* The sa_restorer of the handlers libppl installs with the raw system call
 * (x86_64 returns from a handler only through one): rt_sigreturn. */
	.globl	ctx_sigreturn
	.hidden	ctx_sigreturn
	.type	ctx_sigreturn, @function
	.p2align 4
ctx_sigreturn:
	movq	$15, %rax	/* SYS_rt_sigreturn */
	syscall
	.size	ctx_sigreturn, .-ctx_sigreturn

	.section .note.GNU-stack,"",@progbits
