/* The C library's blocking calls, announced to the monitor (monitor.c):
 * sys_enter marks the VP "in a system call" (a few stores, no system call
 * of its own) and sys_leave takes the VP back if the monitor lent its
 * threads to a spare meanwhile.  The call itself is the C library's next
 * definition, so its ABI is glibc's.
 *
 * The calls POSIX makes cancellation points (all here but flock) act on a
 * pending request before the call, can be interrupted by pthread_cancel
 * while in the kernel, and act on the request if it made the call fail
 * with EINTR (cancel.c, cancel_syscall_enter).  A call that completed is
 * returned, its cancel acted on at the next cancellation point, so no data
 * read or written is lost.
 *
 * Variadic calls (open of a FIFO, fcntl's F_SETLKW) cannot be forwarded
 * through this list; the monitor's unannounced path covers them, as it
 * covers raw syscall() (docs/blocking.md). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "pthread_impl.h"

/* Resolved on first use: a constructor of another library may read or
 * write before libppl's own ran.  dlsym is idempotent, so racing first
 * callers store the same pointer. */
void *ppl_next_fn(void *_Atomic *slot, const char *name)
{
	return vp_libc_fn(slot, name, NULL);
}

/* ppl_<name>: announce, call the next definition, take the VP back.  errno
 * is the call's: sys_leave keeps it. */
#define BLOCKING(ret, name, params, args)                                          \
	static void *_Atomic next_##name;                                          \
	ret ppl_##name params                                                      \
	{                                                                          \
		ret (*f) params = (ret (*) params)ppl_next_fn(&next_##name, #name);    \
		struct vproc *v = sys_enter();                                     \
		ret result = f args;                                               \
		sys_leave(v);                                                      \
		return result;                                                     \
	}

/* The same, as a cancellation point.  sys_enter is inside the mark, so
 * the signal handler that unwinds from the C library's call undoes both. */
#define CANCELLABLE(ret, name, params, args) CANCELLABLE_AS(ppl_##name, ret, name, params, args)
#define CANCELLABLE_AS(fn, ret, name, params, args)                                \
	static void *_Atomic next_##name;                                          \
	ret fn params                                                              \
	{                                                                          \
		ret (*f) params = (ret (*) params)ppl_next_fn(&next_##name, #name);    \
		struct vproc *cv = cancel_syscall_enter(NULL, NULL);                   \
		struct vproc *v = sys_enter();                                     \
		ret result = f args;                                               \
		int saved_errno = errno;                                           \
		sys_leave(v);                                                      \
		cancel_syscall_leave(cv, result == -1 && saved_errno == EINTR);    \
		errno = saved_errno;                                               \
		return result;                                                     \
	}

CANCELLABLE(ssize_t, read, (int fd, void *buf, size_t n), (fd, buf, n))
CANCELLABLE(ssize_t, write, (int fd, const void *buf, size_t n), (fd, buf, n))
CANCELLABLE(ssize_t, readv, (int fd, const struct iovec *iov, int n), (fd, iov, n))
CANCELLABLE(ssize_t, writev, (int fd, const struct iovec *iov, int n), (fd, iov, n))
CANCELLABLE(ssize_t, pread, (int fd, void *buf, size_t n, off_t off), (fd, buf, n, off))
CANCELLABLE(ssize_t, pwrite, (int fd, const void *buf, size_t n, off_t off), (fd, buf, n, off))
CANCELLABLE(ssize_t, pread64, (int fd, void *buf, size_t n, off64_t off), (fd, buf, n, off))
CANCELLABLE(ssize_t, pwrite64, (int fd, const void *buf, size_t n, off64_t off), (fd, buf, n, off))
CANCELLABLE(ssize_t, recv, (int fd, void *buf, size_t n, int fl), (fd, buf, n, fl))
CANCELLABLE(ssize_t, recvfrom, (int fd, void *buf, size_t n, int fl, __SOCKADDR_ARG a, socklen_t *al), (fd, buf, n, fl, a, al))
CANCELLABLE(ssize_t, recvmsg, (int fd, struct msghdr *m, int fl), (fd, m, fl))
CANCELLABLE(ssize_t, send, (int fd, const void *buf, size_t n, int fl), (fd, buf, n, fl))
CANCELLABLE(ssize_t, sendto, (int fd, const void *buf, size_t n, int fl, __CONST_SOCKADDR_ARG a, socklen_t al), (fd, buf, n, fl, a, al))
CANCELLABLE(ssize_t, sendmsg, (int fd, const struct msghdr *m, int fl), (fd, m, fl))
CANCELLABLE(int, accept, (int fd, __SOCKADDR_ARG a, socklen_t *al), (fd, a, al))
CANCELLABLE(int, accept4, (int fd, __SOCKADDR_ARG a, socklen_t *al, int fl), (fd, a, al, fl))
CANCELLABLE(int, connect, (int fd, __CONST_SOCKADDR_ARG a, socklen_t al), (fd, a, al))
CANCELLABLE(int, poll, (struct pollfd *p, nfds_t n, int ms), (p, n, ms))
CANCELLABLE(int, ppoll, (struct pollfd *p, nfds_t n, const struct timespec *ts, const sigset_t *m), (p, n, ts, m))
CANCELLABLE(int, select, (int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv), (n, r, w, e, tv))
CANCELLABLE(int, pselect, (int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *ts, const sigset_t *m), (n, r, w, e, ts, m))
CANCELLABLE(int, epoll_wait, (int fd, struct epoll_event *ev, int n, int ms), (fd, ev, n, ms))
CANCELLABLE(int, epoll_pwait, (int fd, struct epoll_event *ev, int n, int ms, const sigset_t *m), (fd, ev, n, ms, m))
/* The wait calls, on VP 0 if the VP backend needs it (fork.c). */
#define CANCELLABLE_ON_INITIAL(ret, name, params, args)                            \
	static ret initial_##name params;                                          \
	CANCELLABLE_AS(initial_##name, ret, name, params, args)                    \
	ret ppl_##name params                                                      \
	{                                                                          \
		struct vproc *home;                                                \
		bool moved = ppl_initial_enter(&home);                             \
		ret result = initial_##name args;                                  \
		if (moved) {                                                       \
			int saved_errno = errno;                                   \
			ppl_initial_leave(home);                                   \
			errno = saved_errno;                                       \
		}                                                                  \
		return result;                                                     \
	}
CANCELLABLE_ON_INITIAL(pid_t, wait, (int *st), (st))
CANCELLABLE_ON_INITIAL(pid_t, waitpid, (pid_t p, int *st, int o), (p, st, o))
CANCELLABLE_ON_INITIAL(int, waitid, (idtype_t t, id_t id, siginfo_t *i, int o), (t, id, i, o))
BLOCKING(int, flock, (int fd, int op), (fd, op))
/* The kernel's part of sigtimedwait (signal.c does the rest). */
CANCELLABLE_AS(sys_sigtimedwait, int, sigtimedwait,
	       (const sigset_t *set, siginfo_t *info, const struct timespec *ts), (set, info, ts))
