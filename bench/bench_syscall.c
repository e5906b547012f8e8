/* bench_syscall [N]: what the machine charges for the system calls that
 * decide libppl's switch cost without FSGSBASE (docs/tls.md, "Cost"): a
 * trivial one (getppid), the thread-pointer write a switch makes
 * (arch_prctl(ARCH_SET_FS) with the current value: harmless), and
 * sched_yield with nothing else to run.  Minimum of 5 repetitions of N calls
 * each (default 20000): the machine's cost, free of interference.  One
 * result line, getppid's cost first; arch_prctl is 0 where it does not
 * exist (not x86_64). */
#define _GNU_SOURCE 1
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <asm/prctl.h>
#endif

#include "bench.h"

static unsigned long fs_base;

static void call(int which)
{
	switch (which) {
	case 0: syscall(SYS_getppid); break;
#if defined(__x86_64__)
	case 1: syscall(SYS_arch_prctl, ARCH_SET_FS, fs_base); break;
#endif
	default: syscall(SYS_sched_yield); break;
	}
}

static double least(int which, long n)
{
	double best = 1e30;
	for (int rep = 0; rep < 5; rep++) {
		long long t0 = bench_now_ns();
		for (long i = 0; i < n; i++)
			call(which);
		double ns = (double)(bench_now_ns() - t0) / (double)n;
		best = ns < best ? ns : best;
	}
	return best;
}

int main(int argc, char **argv)
{
	long n = bench_arg(argc, argv, 1, 20000);
	double prctl = 0;
#if defined(__x86_64__)
	if (syscall(SYS_arch_prctl, ARCH_GET_FS, &fs_base) != 0) {
		perror("arch_prctl(ARCH_GET_FS)");
		return 1;
	}
	prctl = least(1, n);
#endif
	double plain = least(0, n);
	printf("syscall %.0f ns arch_prctl=%.0f sched_yield=%.0f\n", plain, prctl, least(2, n));
	return 0;
}
