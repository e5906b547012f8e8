/* How the kernel threads of one thread group are addressed: the backends
 * whose VPs are all kernel threads of this process (kthread, clone) share
 * these ops (VP_TGROUP_OPS in vp_backend.h).  Raw system calls: libppl
 * exports kill and its family itself. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "syscall_raw.h"
#include "vp_backend.h"

int vp_tgroup_kill(pid_t tid, int sig)
{
	return vp_syscall(SYS_tgkill, (pid_t)vp_syscall(SYS_getpid), tid, sig) == 0 ? 0 : errno;
}

int vp_tgroup_sigqueue(pid_t tid, int sig, siginfo_t *si)
{
	/* The kernel takes a forged si_code (< 0) only; to oneself, any. */
	return vp_syscall(SYS_rt_tgsigqueueinfo, (pid_t)vp_syscall(SYS_getpid), tid, sig, si) == 0 ? 0 : errno;
}

int vp_tgroup_kill_process(int sig, siginfo_t *si)
{
	if (si != NULL && vp_syscall(SYS_rt_sigqueueinfo, (pid_t)vp_syscall(SYS_getpid), sig, si) == 0)
		return 0;
	return vp_syscall(SYS_kill, (pid_t)vp_syscall(SYS_getpid), sig) == 0 ? 0 : errno;   /* not libppl's kill */
}

bool vp_tgroup_ours(pid_t pid)
{
	return pid == (pid_t)vp_syscall(SYS_getpid);
}

int vp_tgroup_task_path(pid_t tid, const char *leaf, char *buf, size_t len)
{
	int n = snprintf(buf, len, "/proc/self/task/%d/%s", tid, leaf);
	return n > 0 && (size_t)n < len ? 0 : ENAMETOOLONG;
}

/* The kernel's list of the thread group: it has every kernel thread,
 * including the C library's own helpers that libppl never sees made. */
int vp_tgroup_each_task(void (*fn)(pid_t tid, void *arg), void *arg)
{
	DIR *d = opendir("/proc/self/task");
	if (d == NULL)
		return errno;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		pid_t tid = (pid_t)atol(e->d_name);
		if (tid > 0)
			fn(tid, arg);
	}
	closedir(d);
	return 0;
}

void vp_helper_sigmask(void)
{
	/* Like the C library's own helper threads: the application's signals
	 * go to the threads that run its code, never to libppl's helpers
	 * (faults stay deliverable, to report a crash here). */
	uint64_t mask = ~0ULL;
	const int faults[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP };
	for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
		mask &= ~(1ULL << (faults[i] - 1));
	/* SIGSETXID (33), which carries setuid and co. to every kernel
	 * thread (setxid.c), as glibc's helpers leave it unblocked too. */
	mask &= ~(1ULL << (33 - 1));
	vp_syscall(SYS_rt_sigprocmask, SIG_SETMASK, &mask, NULL, sizeof mask);
}

pid_t vp_tgroup_pid(void)
{
	return (pid_t)vp_syscall(SYS_getpid);
}

pid_t vp_tgroup_ppid(void)
{
	return (pid_t)vp_syscall(SYS_getppid);
}

int vp_tgroup_each_process(void (*fn)(pid_t pid, void *arg), void *arg)
{
	fn(vp_tgroup_pid(), arg);
	return 1;
}

int vp_tgroup_in_group(pid_t tid, int (*fn)(void *), void *arg)
{
	(void)tid;
	return fn(arg);   /* one thread group */
}
