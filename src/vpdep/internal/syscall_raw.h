/* A system call that returns -errno and never touches errno: for code that
 * runs on a kernel thread sharing another's TLS block (the process
 * backend's watcher, vp_process.c) or in a handler that may run there
 * (setxid.c), where the C library's syscall() would write the other
 * thread's errno.  Private to vpdep. */
#ifndef PPL_SYSCALL_RAW_H
#define PPL_SYSCALL_RAW_H

#include <errno.h>
#include <unistd.h>

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
	int saved = errno;   /* no raw entry here: the C library's, errno kept */
	long r = syscall(nr, a0, a1, a2, a3, a4, a5);
	if (r < 0)
		r = -errno;
	errno = saved;
	return r;
#endif
}

#endif
