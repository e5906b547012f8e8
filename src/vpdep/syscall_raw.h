/* libppl's own raw system calls: what the C library's syscall() does, under
 * a hidden name.  libppl exports syscall() (src/preload/syscall.c maps the
 * ones that name a thread to user threads), so a plain syscall() inside
 * libppl.so would bind to that export (test/abi's self-binding check). */
#ifndef PPL_VPDEP_SYSCALL_RAW_H
#define PPL_VPDEP_SYSCALL_RAW_H

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

#endif
