/* libppl's own output (fatal messages, warnings, statistics, the trace
 * file): raw system calls, never the write or writev that libppl exports (a cancellation
 * point: a fatal message would unwind the thread instead of aborting) nor
 * one the program defines. */
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "vpdep.h"

int vp_write(int fd, const void *buf, size_t n)
{
	int saved = errno, err = 0;
	const char *p = buf;
	while (n > 0) {
		long r = vp_syscall(SYS_write, fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			err = r < 0 ? errno : EIO;
			break;
		}
		p += r;
		n -= (size_t)r;
	}
	errno = saved;
	return err;
}

int vp_writev(int fd, const struct iovec *iov, int cnt)
{
	int saved = errno;
	long r;
	do
		r = vp_syscall(SYS_writev, fd, iov, cnt);
	while (r < 0 && errno == EINTR);
	int err = r < 0 ? errno : 0;
	errno = saved;
	return err;
}

int vp_file_open(const char *name, bool truncate)
{
	return (int)vp_syscall(SYS_openat, AT_FDCWD, name,
			    O_WRONLY | O_CREAT | O_CLOEXEC | (truncate ? O_TRUNC : 0), 0644);
}

bool vp_file_lock(int fd)
{
	int saved = errno;
	bool ok = vp_syscall(SYS_flock, fd, LOCK_EX | LOCK_NB) == 0;
	errno = saved;
	return ok;
}

int vp_file_truncate(int fd)
{
	return vp_syscall(SYS_ftruncate, fd, 0) == 0 ? 0 : errno;
}

long long vp_file_size(int fd)
{
	struct stat st;
	return vp_syscall(SYS_fstat, fd, &st) == 0 ? (long long)st.st_size : -1;
}

void vp_file_close(int fd)
{
	int saved = errno;
	vp_syscall(SYS_close, fd);
	errno = saved;
}
