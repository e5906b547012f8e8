/* vp_syscall: the C library's syscall() under a hidden name (syscall_raw.h).
 * Six arguments are always read, as the C library's own syscall() does:
 * the kernel ignores those a call does not take. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "syscall_raw.h"

/* Not inlined: a kernel thread parked in a call must show a real frame #0
 * (an inline one is not unwound), where libppl's gdb extension grafts a
 * parked thread's saved context (tools/gdb/libppl.py). */
#define RAW_CALL __attribute__((noinline))

static RAW_CALL long raw6(long nr, long a, long b, long c, long d, long e, long f)
{
	return vp_syscall_raw(nr, a, b, c, d, e, f);
}

/* The program's own calls through libppl's syscall(): the same sequence in
 * a section of its own, so that a signal that finds a thread blocked there
 * (syscall(SYS_pause)) is taken as landing in the program's call, as in
 * the C library's syscall(), not in libppl's code (cancel.c's handler
 * acts on an asynchronous request only outside libppl). */
__attribute__((noinline, section("ppl_usercall"))) long vp_syscall6_user(long nr, long a, long b,
									    long c, long d, long e,
									    long f)
{
	long r = vp_syscall_raw(nr, a, b, c, d, e, f);
	if (__builtin_expect((unsigned long)r > -4096UL, 0)) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

extern const char __start_ppl_usercall[] __attribute__((visibility("hidden")));
extern const char __stop_ppl_usercall[] __attribute__((visibility("hidden")));

bool vp_in_user_call(unsigned long pc)
{
	return pc >= (uintptr_t)__start_ppl_usercall && pc < (uintptr_t)__stop_ppl_usercall;
}

long vp_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	long r = raw6(nr, a, b, c, d, e, f);
	if (__builtin_expect((unsigned long)r > -4096UL, 0)) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

long vp_syscall(long nr, ...)
{
	va_list ap;
	va_start(ap, nr);
	long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
	long d = va_arg(ap, long), e = va_arg(ap, long), f = va_arg(ap, long);
	va_end(ap);
	return vp_syscall6(nr, a, b, c, d, e, f);
}
