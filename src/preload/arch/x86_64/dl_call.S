/* dlopen and dlmopen, wrapped so that glibc still sees the program's call.
 *
 * glibc takes the caller's identity (its link map: RUNPATH, $ORIGIN, the
 * namespace of __LM_ID_CALLER) from the return address of its dlopen.  A
 * wrapper that calls it normally shows libppl.so instead.  So the real
 * function is entered with a return address inside the caller's own object:
 * a `ret` byte of that object (ppl_dl_enter finds one), with our
 * continuation as the next word on the stack.  The real function returns to
 * that byte, whose `ret` returns here; then ppl_dl_leave initialises the
 * new modules' static TLS in user threads, and we return to the caller.
 * Without a gadget (no readable text, a shadow stack in use) the real
 * function is called plainly, as before.
 *
 * A debugger's backtrace taken inside the real dlopen stops making sense
 * at the caller's frame (the return address there is the gadget). */

#ifdef __CET__
#include <cet.h>
#else
#define _CET_ENDBR
#endif

	.text

/* name, which (0 dlopen, 1 dlmopen).  At entry %rsp is 8 mod 16. */
.macro DL_WRAPPER name, which
	.globl export_\name
	.type export_\name, @function
	.globl compat_\name
	.type compat_\name, @function
	.p2align 4
export_\name:
compat_\name:
	.cfi_startproc
	_CET_ENDBR
	pushq %rbx
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbx, 0
	pushq %r12
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %r12, 0
	pushq %r13
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %r13, 0
	/* the arguments, across ppl_dl_enter */
	movq %rdi, %rbx
	movq %rsi, %r12
	movq %rdx, %r13
	movq 24(%rsp), %rdi          /* the caller's return address */
	movl $\which, %esi
	call ppl_dl_enter            /* %rax: the real function, %rdx: gadget or 0 */
	movq %rax, %r10
	movq %rdx, %r11
	movq %rbx, %rdi
	movq %r12, %rsi
	movq %r13, %rdx
	testq %r11, %r11
	jz 2f
	subq $8, %rsp                /* alignment: entry must see 8 mod 16 */
	.cfi_adjust_cfa_offset 8
	leaq 1f(%rip), %rax
	pushq %rax                   /* where the gadget's ret goes */
	.cfi_adjust_cfa_offset 8
	pushq %r11                   /* the real function's return address */
	.cfi_adjust_cfa_offset 8
	jmp *%r10
1:	/* the real function returned through the gadget: 16 bytes popped */
	.cfi_adjust_cfa_offset -16
	addq $8, %rsp
	.cfi_adjust_cfa_offset -8
	jmp 3f
2:	call *%r10
3:	movq %rax, %rbx
	movq %rax, %rdi
	call ppl_dl_leave
	movq %rbx, %rax
	popq %r13
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r13
	popq %r12
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r12
	popq %rbx
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbx
	ret
	.cfi_endproc
	.size export_\name, .-export_\name
	.size compat_\name, .-compat_\name
.endm

DL_WRAPPER dlopen, 0
DL_WRAPPER dlmopen, 1

/* The C library's versions of both names (docs/abi.md, symver.def): the
 * libdl one each had before glibc 2.34, and the current default. */
	.symver export_dlopen, dlopen@@GLIBC_2.34
	.symver compat_dlopen, dlopen@GLIBC_2.2.5
	.symver export_dlmopen, dlmopen@@GLIBC_2.34
	.symver compat_dlmopen, dlmopen@GLIBC_2.3.4

	.section .note.GNU-stack, "", @progbits
