/* Copies from and to memory an application passed by pointer, which fail
 * with EFAULT where the kernel would, instead of crashing inside libppl.
 *
 * The copy's loads and stores are a few instructions at known addresses
 * (word moves and rep movsb on x86_64, a byte loop on aarch64).  While libppl's own SIGSEGV handler is the
 * process's (fatal.c arms it), a fault at that address is "fixed up" as the
 * kernel fixes up its copy_from_user: the handler moves the interrupted
 * program counter to the copy's failure exit, which returns EFAULT.  No
 * system call on the way.  When the application has a SIGSEGV handler of
 * its own (vp_sigaction disarms), process_vm_readv/writev on the process
 * itself does the same copy in the kernel, at the price of a system call. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include "vpdep.h"

static _Atomic bool armed;

#if defined(__x86_64__)
/* int uaccess_copy(void *dst, const void *src, size_t n): 0 or EFAULT.
 * Words first (a timespec, a signal set: no rep movsb start-up), then
 * the bytes left. */
__asm__(".text\n"
	".p2align 4\n"
	".type uaccess_copy, @function\n"
	"uaccess_copy:\n"
	"	cmpq $8, %rdx\n"
	"	jb 2f\n"
	"1:\n"
	"uaccess_ld:\n"
	"	movq (%rsi), %rax\n"
	"uaccess_st:\n"
	"	movq %rax, (%rdi)\n"
	"	addq $8, %rsi\n"
	"	addq $8, %rdi\n"
	"	subq $8, %rdx\n"
	"	cmpq $8, %rdx\n"
	"	jae 1b\n"
	"2:	movq %rdx, %rcx\n"
	"uaccess_insn:\n"
	"	rep movsb\n"
	"	xorl %eax, %eax\n"
	"	ret\n"
	"uaccess_fail:\n"
	"	movl $14, %eax\n"       /* EFAULT */
	"	ret\n"
	".size uaccess_copy, .-uaccess_copy\n");
#define UACCESS_ASM 1
#define UC_PC(u) ((u)->uc_mcontext.gregs[REG_RIP])
#elif defined(__aarch64__)
__asm__(".text\n"
	".p2align 4\n"
	".type uaccess_copy, %function\n"
	"uaccess_copy:\n"
	"	cbz x2, 2f\n"
	"1:\n"
	"uaccess_insn:\n"
	"	ldrb w3, [x1], #1\n"
	"uaccess_insn2:\n"
	"	strb w3, [x0], #1\n"
	"	subs x2, x2, #1\n"
	"	b.ne 1b\n"
	"2:	mov w0, #0\n"
	"	ret\n"
	"uaccess_fail:\n"
	"	mov w0, #14\n"
	"	ret\n"
	".size uaccess_copy, .-uaccess_copy\n");
#define UACCESS_ASM 1
#define UC_PC(u) ((u)->uc_mcontext.pc)
#endif

#ifdef UACCESS_ASM
int uaccess_copy(void *dst, const void *src, size_t n);
extern const char uaccess_insn[], uaccess_fail[];
#if defined(__aarch64__)
extern const char uaccess_insn2[];
#define AT_COPY(pc) ((pc) == (uintptr_t)uaccess_insn || (pc) == (uintptr_t)uaccess_insn2)
#else
extern const char uaccess_ld[], uaccess_st[];
#define AT_COPY(pc)                                                                  \
	((pc) == (uintptr_t)uaccess_insn || (pc) == (uintptr_t)uaccess_ld ||         \
	 (pc) == (uintptr_t)uaccess_st)
#endif

bool vp_uaccess_fixup(void *uc)
{
	ucontext_t *u = uc;
	if (!AT_COPY((uintptr_t)UC_PC(u)))
		return false;
	UC_PC(u) = (uintptr_t)uaccess_fail;
	return true;
}
#else
bool vp_uaccess_fixup(void *uc)
{
	(void)uc;
	return false;
}
#endif

void vp_uaccess_arm(bool on)
{
	atomic_store_explicit(&armed, on, memory_order_release);
}

/* The kernel's copy: the process reading or writing itself. */
static int kernel_copy(void *dst, const void *src, size_t n, bool out)
{
	struct iovec local = { out ? (void *)src : dst, n };
	struct iovec remote = { out ? dst : (void *)src, n };
	ssize_t r = out ? process_vm_writev((pid_t)vp_syscall(SYS_getpid), &local, 1, &remote, 1, 0)
			: process_vm_readv((pid_t)vp_syscall(SYS_getpid), &local, 1, &remote, 1, 0);
	if (r == (ssize_t)n)
		return 0;
	if (r >= 0 || errno == EFAULT)
		return EFAULT;
	/* Not allowed here (seccomp, ENOSYS): copy as the caller would. */
	memcpy(dst, src, n);
	return 0;
}

static int copy(void *dst, const void *src, size_t n, bool out)
{
	if (n == 0)
		return 0;
#ifdef UACCESS_ASM
	/* A fault with SIGSEGV blocked kills the process: not on a VP whose
	 * thread blocks it (the mask of the user thread it runs). */
	struct vp *vp = vp_current();
	if (atomic_load_explicit(&armed, memory_order_relaxed) &&
	    (vp == NULL || !(vp->kmask & (1ULL << (SIGSEGV - 1)))))
		return uaccess_copy(dst, src, n);
#endif
	return kernel_copy(dst, src, n, out);
}

int vp_copy_in(void *dst, const void *user, size_t n)
{
	return copy(dst, user, n, false);
}

int vp_copy_out(void *user, const void *src, size_t n)
{
	return copy(user, src, n, true);
}
