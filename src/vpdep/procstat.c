/* The kernel's view of the process's threads, read from /proc with raw
 * system calls: libppl interposes read and write (cancellation points),
 * and these run on the monitor of blocking calls, which must never block
 * on libppl itself.  The states are hints for heuristics: the answer may
 * be stale by the time the caller looks at it.  Kernel thread names too:
 * pthread_setname_np and pthread_getname_np are no cancellation points. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vp_backend.h"
#include "vpdep.h"

/* Read a /proc file into buf (NUL-terminated).  Length or -1. */
static long read_proc(const char *path, char *buf, size_t size)
{
	long fd = vp_syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	long n = vp_syscall(SYS_read, (int)fd, buf, size - 1);
	vp_syscall(SYS_close, (int)fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/* The fields after "(comm)": comm may hold spaces and parentheses, so
 * start after the last ')'.  Returns a pointer to the state letter. */
static const char *after_comm(const char *stat)
{
	const char *p = strrchr(stat, ')');
	return p != NULL && p[1] == ' ' ? p + 2 : NULL;
}

int vp_kernel_state(struct vp *vp)
{
	int tid = atomic_load_explicit(&vp->tid, memory_order_relaxed);
	if (tid <= 0)
		return 0;
	char path[64], buf[512];
	if (vp_backend_ops()->task_path(tid, "stat", path, sizeof path) != 0 ||
	    read_proc(path, buf, sizeof buf) < 0)
		return 0;
	const char *p = after_comm(buf);
	return p != NULL ? *p : 0;
}

/* Kernel threads in thread group pid (0: the calling one), or -1. */
int vp_tgroup_kthreads(pid_t pid)
{
	char path[48], buf[1024];
	if (pid == 0)
		snprintf(path, sizeof path, "/proc/self/stat");
	else
		snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (read_proc(path, buf, sizeof buf) < 0)
		return -1;
	const char *p = after_comm(buf);
	/* num_threads is field 20; p is at field 3 (state). */
	for (int field = 3; p != NULL && field < 20; field++) {
		p = strchr(p, ' ');
		if (p != NULL)
			p++;
	}
	int n;
	if (p == NULL || sscanf(p, "%d", &n) != 1)
		return -1;
	return n;
}

int vp_process_kthreads(void)
{
	const struct vp_backend *b = vp_backend_ops();
	return b->kthreads != NULL ? b->kthreads() : vp_tgroup_kthreads(0);
}

struct comm_write {
	int tid;
	const char *name;
};

/* The kernel takes a comm write from the thread group itself only. */
static int comm_write(void *arg)
{
	struct comm_write *c = arg;
	char path[64];
	int err = vp_backend_ops()->task_path(c->tid, "comm", path, sizeof path);
	if (err)
		return err;
	long fd = vp_syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	size_t n = strlen(c->name);
	long r = vp_syscall(SYS_write, (int)fd, c->name, n);
	err = r == (long)n ? 0 : r < 0 ? errno : EIO;
	vp_syscall(SYS_close, (int)fd);
	return err;
}

int vp_kthread_set_name(int tid, const char *name)
{
	if (tid == 0)
		return vp_syscall(SYS_prctl, PR_SET_NAME, name, 0, 0, 0) == 0 ? 0 : errno;
	struct comm_write c = { tid, name };
	return vp_backend_ops()->in_group(tid, comm_write, &c);
}

int vp_process_name(char *buf, size_t len)
{
	if (len == 0)
		return ERANGE;
	long fd = vp_syscall(SYS_openat, AT_FDCWD, "/proc/self/comm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	long r = vp_syscall(SYS_read, (int)fd, buf, len - 1);
	int err = r < 0 ? errno : 0;
	vp_syscall(SYS_close, (int)fd);
	if (err)
		return err;
	if (r > 0 && buf[r - 1] == '\n')
		r--;
	buf[r] = '\0';
	return 0;
}

int64_t vp_kthread_runtime_ns(pid_t tid)
{
	char path[96], buf[128];
	if (vp_backend_ops()->task_path(tid, "schedstat", path, sizeof path) != 0 ||
	    read_proc(path, buf, sizeof buf) < 0)
		return -1;
	return strtoll(buf, NULL, 10);
}

/* Whether the page holding addr is shared with other processes: bit 61 of
 * its /proc/self/pagemap entry (a file page or shared anonymous memory).
 * A page of private memory that was written is an anonymous page of its
 * own, and a spin lock that is held was written.  -1 if the kernel does
 * not say (no pagemap, or the page is not present). */
int vp_page_shared(const void *addr)
{
	int saved = errno;
	long fd = vp_syscall(SYS_openat, AT_FDCWD, "/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		errno = saved;
		return -1;
	}
	uint64_t entry = 0;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	long n = vp_syscall(SYS_pread64, (int)fd, &entry, sizeof entry,
			    (long)((uintptr_t)addr / page * sizeof entry));
	vp_syscall(SYS_close, (int)fd);
	errno = saved;
	if (n != (long)sizeof entry || (entry & (1ULL << 63)) == 0)
		return -1;   /* unreadable, or not present */
	return (entry & (1ULL << 61)) != 0;
}
