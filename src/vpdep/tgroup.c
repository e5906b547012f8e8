/* How the kernel threads of one thread group are addressed: the backends
 * whose VPs are all kernel threads of this process (kthread, clone) share
 * these ops (VP_TGROUP_OPS in vp_backend.h).  Raw system calls: libppl
 * exports kill and its family itself. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* fn(tgid, tid, arg) for each kernel thread of thread group tgid (0: the
 * caller's, /proc/self/task) as the kernel lists it, which has every one,
 * the C library's own helpers that libppl never sees made included.  Raw
 * openat, getdents64 into a stack buffer until it returns 0, close: no
 * opendir's fstat nor its heap buffer, four system calls for a small
 * process (setxid.c's broadcast scans twice per call).  A getdents64 that
 * stops short is not the end (the kernel stops early when a signal is
 * pending), so only its 0 is.  0, or errno if the directory cannot be read
 * (ENOENT: the thread group has ended). */
int vp_task_dir_each(pid_t tgid, void (*fn)(pid_t tgid, pid_t tid, void *arg), void *arg)
{
	char path[32];
	if (tgid == 0)
		snprintf(path, sizeof path, "/proc/self/task");
	else
		snprintf(path, sizeof path, "/proc/%d/task", (int)tgid);
	int fd = (int)vp_syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	_Alignas(8) char buf[2048];
	int err = 0;
	for (;;) {
		long n = vp_syscall(SYS_getdents64, fd, buf, sizeof buf);
		if (n <= 0) {
			err = n < 0 ? errno : 0;
			break;
		}
		for (long off = 0; off < n;) {
			/* struct linux_dirent64: ino, off, reclen, type, name */
			const char *d = buf + off;
			unsigned short reclen;
			memcpy(&reclen, d + 16, sizeof reclen);
			pid_t tid = (pid_t)atol(d + 19);
			if (tid > 0)
				fn(tgid, tid, arg);
			off += reclen;
		}
	}
	vp_syscall(SYS_close, fd);
	return err;
}

int vp_tgroup_each_task(void (*fn)(pid_t tgid, pid_t tid, void *arg), void *arg)
{
	return vp_task_dir_each(0, fn, arg);
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
