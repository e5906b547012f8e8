/* long vp_clone_raw(unsigned long flags, void *stack_top, void *tls,
 *                   pid_t *parent_tid, pid_t *child_tid,
 *                   int (*fn)(void *), void *arg);
 *
 * The raw clone system call for a child that shares the caller's memory
 * (CLONE_VM) and so cannot return into the caller's frames: the child
 * starts on stack_top (aligned down to 16) with the thread pointer tls
 * (if CLONE_SETTLS), calls fn(arg) and ends its kernel thread (SYS_exit)
 * with fn's result.  Returns the child's id, or -errno, in the caller.
 *
 * fn and arg travel on the child's stack, which the caller writes before
 * the call: the child owns no register the kernel preserves for it except
 * those, and %rsp.  The kernel's argument order on x86_64 is flags, stack,
 * parent_tid, child_tid, tls. */

#ifdef __CET__
#include <cet.h>
#else
#define _CET_ENDBR
#endif

#define SYS_clone 56
#define SYS_exit 60

	.text
	.globl	vp_clone_raw
	.hidden	vp_clone_raw
	.type	vp_clone_raw, @function
	.align	16
vp_clone_raw:
	.cfi_startproc
	_CET_ENDBR
	movq	8(%rsp), %rax		/* arg, the seventh argument */
	andq	$-16, %rsi
	subq	$16, %rsi
	movq	%r9, 0(%rsi)		/* fn */
	movq	%rax, 8(%rsi)		/* arg */
	movq	%rdx, %r11		/* tls */
	movq	%rcx, %rdx		/* parent_tid */
	movq	%r8, %r10		/* child_tid */
	movq	%r11, %r8		/* tls */
	movl	$SYS_clone, %eax
	syscall
	testq	%rax, %rax
	jz	1f
	ret				/* the caller: the child's id or -errno */
1:
	/* The child, on the new stack.  Nothing above this frame: the
	 * return address is undefined for unwinders, %rbp ends frame walks. */
	.cfi_undefined %rip
	xorl	%ebp, %ebp
	popq	%rax			/* fn */
	popq	%rdi			/* arg; %rsp is back at the aligned top */
	callq	*%rax
	movl	%eax, %edi
	movl	$SYS_exit, %eax
	syscall
	hlt
	.cfi_endproc
	.size	vp_clone_raw, .-vp_clone_raw

	.section .note.GNU-stack,"",@progbits
