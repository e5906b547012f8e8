/* vp_clone_raw for AArch64 (prototype and contract in clone_raw.h).
 *
 *   long vp_clone_raw(unsigned long flags, void *stack_top, pid_t *ptid,
 *                     void *tls, pid_t *ctid, void (*fn)(void *), void *arg)
 *   x0 flags, x1 stack_top, x2 ptid, x3 tls, x4 ctid, x5 fn, x6 arg
 *
 * The kernel's clone takes flags, newsp, parent_tid, tls, child_tid in
 * x0..x4: the arguments are already in place.  The child keeps every
 * register but x0, so fn and arg stay in x5 and x6. */

	.text
	.globl	vp_clone_raw
	.hidden	vp_clone_raw
	.type	vp_clone_raw, %function
	.p2align 4
vp_clone_raw:
	.cfi_startproc
	and	x1, x1, #-16
	mov	x8, #220                /* SYS_clone */
	svc	#0
	cbz	x0, vp_clone_child
	ret                             /* the new tid, or -errno */
	.cfi_endproc
	.size	vp_clone_raw, .-vp_clone_raw

/* The child, on the new stack with the new thread pointer.  Its FDE marks
 * the return address undefined: unwinders and debuggers stop here. */
	.type	vp_clone_child, %function
	.p2align 4
	.cfi_startproc
	.cfi_undefined x30
	nop                             /* keeps (return address - 1) in this FDE */
vp_clone_child:
	mov	x29, #0
	mov	x30, #0
	mov	x0, x6
	blr	x5
	brk	#0                      /* fn never returns */
	.cfi_endproc
	.size	vp_clone_child, .-vp_clone_child

	.section .note.GNU-stack,"",%progbits
