/* vp_clone_raw for x86_64 (prototype and contract in clone_raw.h).
 *
 *   long vp_clone_raw(unsigned long flags, void *stack_top, pid_t *ptid,
 *                     void *tls, pid_t *ctid, void (*fn)(void *), void *arg)
 *   rdi flags, rsi stack_top, rdx ptid, rcx tls, r8 ctid, r9 fn, 8(%rsp) arg
 *
 * The kernel's clone takes flags, newsp, parent_tid, child_tid, tls in rdi,
 * rsi, rdx, r10, r8.  fn and arg travel on the child's stack: the child
 * starts with rsp = the new stack and nothing else of the parent's but
 * registers. */

#ifdef __CET__
#include <cet.h>
#else
#define _CET_ENDBR
#endif

	.text
	.globl	vp_clone_raw
	.hidden	vp_clone_raw
	.type	vp_clone_raw, @function
	.p2align 4
vp_clone_raw:
	.cfi_startproc
	_CET_ENDBR
	andq	$-16, %rsi
	subq	$16, %rsi
	movq	8(%rsp), %rax
	movq	%r9, 0(%rsi)            /* fn */
	movq	%rax, 8(%rsi)           /* arg */
	movq	%r8, %r10               /* child_tid */
	movq	%rcx, %r8               /* tls */
	movl	$56, %eax               /* SYS_clone */
	syscall
	testq	%rax, %rax
	jz	vp_clone_child
	ret                             /* the new tid, or -errno */
	.cfi_endproc
	.size	vp_clone_raw, .-vp_clone_raw

/* The child, on the new stack with the new thread pointer.  Its FDE marks
 * the return address undefined: unwinders and debuggers stop here. */
	.type	vp_clone_child, @function
	.p2align 4
	.cfi_startproc
	.cfi_undefined %rip
	nop                             /* keeps (return address - 1) in this FDE */
vp_clone_child:
	xorl	%ebp, %ebp
	popq	%rax                    /* fn */
	popq	%rdi                    /* arg; rsp is the 16-aligned top again */
	call	*%rax
	ud2                             /* fn never returns */
	.cfi_endproc
	.size	vp_clone_child, .-vp_clone_child

	.section .note.GNU-stack,"",@progbits
