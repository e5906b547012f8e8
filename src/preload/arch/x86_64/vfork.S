/* vfork and __vfork, interposed.
 *
 * A vfork child runs on its parent's memory, stack and TLS until it execs
 * or exits, with kernel state of its own (signal actions, mask, ids).
 * libppl's wrappers keep a user thread's signal mask and the program's
 * signal actions in that memory, so a child that resets its handlers or
 * blocks signals before exec (CPython's subprocess does both) changed
 * them for the parent.  ppl_vfork_enter (vfork.c) marks the thread: in
 * the child it is no VP (the wrappers act on the child's own kernel
 * state, as they do for a kernel thread libppl did not make), then the
 * parent gets its VP back in ppl_vfork_leave.
 *
 * The system call is made here, as the C library's vfork makes it, because
 * the child returns first and reuses the stack below its caller's frame:
 * the return address and the result live in registers, never in a frame
 * of ours across the call. */

#ifdef __CET__
#include <cet.h>
#else
#define _CET_ENDBR
#endif

	.text
	.globl export_vfork
	.type export_vfork, @function
	.globl export___vfork
	.type export___vfork, @function
	.p2align 4
export_vfork:
export___vfork:
	.cfi_startproc
	_CET_ENDBR
	subq $8, %rsp                /* entry is 8 mod 16: align the call */
	.cfi_adjust_cfa_offset 8
	call ppl_vfork_enter
	addq $8, %rsp
	.cfi_adjust_cfa_offset -8
	popq %rdi                    /* the return address, kept in a register */
	.cfi_adjust_cfa_offset -8
	.cfi_register %rip, %rdi
	movl $58, %eax               /* SYS_vfork */
	syscall
	pushq %rdi
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rip, 0
	testq %rax, %rax
	jz 1f                        /* the child: 0, straight back */
	subq $8, %rsp
	.cfi_adjust_cfa_offset 8
	movq %rax, %rdi
	call ppl_vfork_leave         /* the parent: the child's id, or -1 and errno */
	addq $8, %rsp
	.cfi_adjust_cfa_offset -8
1:	ret
	.cfi_endproc
	.size export_vfork, .-export_vfork

	.symver export_vfork, vfork@@GLIBC_2.2.5
	.symver export___vfork, __vfork@@GLIBC_2.2.5

	.section .note.GNU-stack, "", @progbits
