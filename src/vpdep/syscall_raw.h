/* libppl's own raw system calls: what the C library's syscall() does, under
 * a hidden name.  libppl exports syscall() (src/preload/syscall.c maps the
 * ones that name a thread to user threads), so a plain syscall() inside
 * libppl.so would bind to that export (test/abi's self-binding check). */
#ifndef PPL_VPDEP_SYSCALL_RAW_H
#define PPL_VPDEP_SYSCALL_RAW_H

#include <signal.h>
#include <stdint.h>

/* rt_sigaction's argument as the kernel takes it (not the C library's
 * struct sigaction), for the handlers libppl installs with the raw call. */
struct vp_ksigaction {
	void (*handler)(int, siginfo_t *, void *);   /* NULL: SIG_DFL */
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};
#if defined(__x86_64__)
/* x86_64 returns from a handler only through sa_restorer (ctx_sigreturn,
 * context.h); AArch64 through the vDSO's trampoline. */
#define VP_SA_RESTORER 0x04000000UL
#else
#define VP_SA_RESTORER 0UL
#endif

/* syscall(2): up to six arguments; -1 with errno set on failure. */
long vp_syscall(long nr, ...) __attribute__((visibility("hidden")));
/* The same with its six arguments spelled out. */
long vp_syscall6(long nr, long a, long b, long c, long d, long e, long f)
	__attribute__((visibility("hidden")));

/* The same for the program's calls through libppl's syscall() export, and
 * whether a PC is in that sequence (the program's call, not libppl's). */
long vp_syscall6_user(long nr, long a, long b, long c, long d, long e, long f)
	__attribute__((visibility("hidden")));
_Bool vp_in_user_call(unsigned long pc) __attribute__((visibility("hidden")));

/* The bare sequence: returns -errno and never touches errno, for code that
 * runs on a kernel thread sharing another's TLS block (the process
 * backend's watcher, vp_process.c) or in a handler that may run there
 * (setxid.c), where errno is the other thread's. */
static inline long vp_syscall_raw(long nr, long a0, long a1, long a2, long a3, long a4, long a5)
{
#if defined(__x86_64__)
	register long r10 __asm__("r10") = a3;
	register long r8 __asm__("r8") = a4;
	register long r9 __asm__("r9") = a5;
	long r;
	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "0"(nr), "D"(a0), "S"(a1), "d"(a2), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return r;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a0;
	register long x1 __asm__("x1") = a1;
	register long x2 __asm__("x2") = a2;
	register long x3 __asm__("x3") = a3;
	register long x4 __asm__("x4") = a4;
	register long x5 __asm__("x5") = a5;
	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	return x0;
#else
#error "vp_syscall_raw: no raw system call sequence for this architecture"
#endif
}

#endif
