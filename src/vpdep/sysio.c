/* libppl's own output (fatal messages, warnings, statistics): raw system
 * calls, never the write or writev that libppl exports (a cancellation
 * point: a fatal message would unwind the thread instead of aborting) nor
 * one the program defines. */
#include <errno.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "vpdep.h"

int vp_write(int fd, const void *buf, size_t n)
{
	int saved = errno, err = 0;
	const char *p = buf;
	while (n > 0) {
		long r = syscall(SYS_write, fd, p, n);
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
		r = syscall(SYS_writev, fd, iov, cnt);
	while (r < 0 && errno == EINTR);
	int err = r < 0 ? errno : 0;
	errno = saved;
	return err;
}
