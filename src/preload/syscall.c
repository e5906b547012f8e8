/* syscall(): the raw system calls that name a thread by its kernel id, or
 * act on "the calling thread", are answered for the calling user thread,
 * as NPTL's kernel thread per pthread would answer them; every other
 * number goes straight to the kernel (vp_syscall6).
 *
 * A user thread scheduled M:N has no kernel thread of its own (threadid.c):
 * gettid, set_tid_address, {set,get}_robust_list, rt_sigprocmask,
 * sigaltstack and a tid in tkill, tgkill, sched_* and {get,set}priority
 * mean the user thread, as through libppl's wrappers of
 * the same calls (stress-ng's pthread stressor compares gettid() with what
 * a raw set_tid_address returns; a raw sched_setaffinity(0, ...) must not
 * pin the VP).  getpid, getppid and kill are the program's ids on every VP
 * backend, and the CPU-time clocks the user thread's.  The results keep
 * the kernel's conventions where they differ from glibc's wrappers
 * (sched_getaffinity's byte count, getpriority's 20 - nice).
 *
 * This is on every raw call's path: six register or stack reads, one
 * range-checked jump, then the raw call (glibc's syscall() also reads six
 * arguments whatever the call takes, the sixth from the stack). */
#include <errno.h>
#include <stdarg.h>
#include <sys/syscall.h>

#include "../vpdep/syscall_raw.h"
#include "../vpindep/vpindep.h"

long export_syscall(long nr, ...) __asm__("syscall")
	__attribute__((visibility("default"), optimize("no-optimize-sibling-calls")));
__asm__(".symver syscall, syscall@@GLIBC_2.2.5");

/* The kernel's sched_getaffinity returns the size of its CPU mask in bytes
 * (at most n); glibc's wrapper, 0.  The mask is the user thread's. */
static long getaffinity(pid_t pid, size_t n, cpu_set_t *set)
{
	long bytes = vp_syscall6(SYS_sched_getaffinity, 0, (long)n, (long)set, 0, 0, 0);
	if (bytes < 0 || ppl_sched_getaffinity(pid, n, set) != 0)
		return -1;
	return bytes;
}

/* The kernel's getpriority returns 20 - nice, never negative. */
static long getpriority_raw(int which, id_t who)
{
	int save = errno;
	errno = 0;
	int nice = ppl_getpriority(which, who);
	if (nice == -1 && errno != 0)
		return -1;
	errno = save;
	return 20 - nice;
}

/* The user thread's answer (0 or an errno value), or the kernel's (-1:
 * not a user thread's to give), as syscall() returns it. */
static long answer(int r, long nr, long a, long b, long c)
{
	if (r < 0)
		return vp_syscall6_user(nr, a, b, c, 0, 0, 0);
	if (r > 0) {
		errno = r;
		return -1;
	}
	return 0;
}

long export_syscall(long nr, ...)
{
	va_list ap;
	va_start(ap, nr);
	long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
	long d = va_arg(ap, long), e = va_arg(ap, long), f = va_arg(ap, long);
	va_end(ap);
	switch (nr) {
	case SYS_gettid:
		return ppl_gettid();
	case SYS_getpid:
		return ppl_getpid();
	case SYS_getppid:
		return ppl_getppid();
	case SYS_set_tid_address: {
		/* The address stays the VP's kernel thread's, which outlives
		 * the user thread: the kernel would clear it, and wake it, at
		 * the kernel thread's end, not the user thread's. */
		pid_t me = ppl_tid_unless_kernel();
		if (me != 0)
			return me;
		break;
	}
	case SYS_tkill:
		if (ppl_tid_is_user_thread((pid_t)a))
			return ppl_tgkill(ppl_getpid(), (pid_t)a, (int)b);
		break;
	case SYS_tgkill:
		return ppl_tgkill((pid_t)a, (pid_t)b, (int)c);
	case SYS_kill:
		return ppl_kill((pid_t)a, (int)b);
	case SYS_set_robust_list:
		return answer(ppl_robust_list_set((void *)a, (size_t)b), nr, a, b, c);
	case SYS_get_robust_list:
		return answer(ppl_robust_list_get((pid_t)a, (void **)b, (size_t *)c), nr, a, b, c);
	case SYS_rt_sigprocmask:
		return answer(ppl_rt_sigprocmask((int)a, (const void *)b, (void *)c, (size_t)d), nr, a,
			      b, c);
	case SYS_sigaltstack:
		return ppl_sigaltstack((const stack_t *)a, (stack_t *)b);
	case SYS_sched_setaffinity:
		return ppl_sched_setaffinity((pid_t)a, (size_t)b, (const cpu_set_t *)c);
	case SYS_sched_getaffinity:
		return getaffinity((pid_t)a, (size_t)b, (cpu_set_t *)c);
	case SYS_sched_setscheduler:
		return ppl_sched_setscheduler((pid_t)a, (int)b, (const struct sched_param *)c);
	case SYS_sched_getscheduler:
		return ppl_sched_getscheduler((pid_t)a);
	case SYS_sched_setparam:
		return ppl_sched_setparam((pid_t)a, (const struct sched_param *)b);
	case SYS_sched_getparam:
		return ppl_sched_getparam((pid_t)a, (struct sched_param *)b);
	case SYS_getpriority:
		return getpriority_raw((int)a, (id_t)b);
	case SYS_setpriority:
		return ppl_setpriority((int)a, (id_t)b, (int)c);
	case SYS_clock_gettime:
	case SYS_clock_getres:
		/* The CPU-time clocks: the calling user thread's, or one named
		 * by its id (negative clock ids). */
		if ((clockid_t)a < 0 || a == CLOCK_THREAD_CPUTIME_ID || a == CLOCK_PROCESS_CPUTIME_ID)
			return nr == SYS_clock_gettime
				       ? ppl_clock_gettime((clockid_t)a, (struct timespec *)b)
				       : ppl_clock_getres((clockid_t)a, (struct timespec *)b);
		break;
	}
	return vp_syscall6_user(nr, a, b, c, d, e, f);
}
