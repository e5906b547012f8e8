/* The C library's blocking calls, announced to the monitor (monitor.c):
 * sys_enter marks the VP "in a system call" (a few stores, no system call
 * of its own) and sys_leave takes the VP back if the monitor lent its
 * threads to a spare meanwhile.  The call itself is the C library's next
 * definition (vpdep's resolver, vp_libc_fn), so its ABI is glibc's.  The
 * list is api.def's PPL_CANCELLABLE and PPL_BLOCKING lines: one line there
 * makes the export, its version-script entry and the wrapper here.
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

#include "cancel.h"
#include "fork.h"
#include "monitor.h"
#include "preempt.h"
#include "vproc.h"

/* preload's door to vpdep's one resolver (dl.c's dlopen). */
void *ppl_next_fn(void *_Atomic *slot, const char *name, const char *version)
{
	return vp_libc_fn(slot, name, version);
}

/* ppl_<name>: announce, call the next definition, take the VP back.  errno
 * is the call's: sys_leave keeps it. */
#define BLOCKING(ret, name, params, args)                                          \
	static void *_Atomic next_##name;                                          \
	ret ppl_##name params                                                      \
	{                                                                          \
		ret (*f) params = (ret (*) params)vp_libc_fn(&next_##name, #name, NULL); \
		preempt_release_before_wait();                                     \
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
		ret (*f) params = (ret (*) params)vp_libc_fn(&next_##name, #name, NULL); \
		preempt_release_before_wait();                                     \
		struct vproc *cv = cancel_syscall_enter(NULL, NULL);                   \
		struct vproc *v = sys_enter();                                     \
		ret result = f args;                                               \
		int saved_errno = errno;                                           \
		sys_leave(v);                                                      \
		cancel_syscall_leave(cv, result == -1 && saved_errno == EINTR);    \
		errno = saved_errno;                                               \
		return result;                                                     \
	}

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
/* One per PPL_CANCELLABLE and PPL_BLOCKING line of api.def. */
#define PPL_FN(ret, name, params, args)
#define PPL_CANCELLABLE(ret, name, params, args) CANCELLABLE(ret, name, params, args)
#define PPL_BLOCKING(ret, name, params, args) BLOCKING(ret, name, params, args)
#define PPL_CANCELLABLE_INITIAL(ret, name, params, args) CANCELLABLE_ON_INITIAL(ret, name, params, args)
#include "api.def"
#undef PPL_FN

/* The kernel's part of sigtimedwait and sigsuspend (signal.c does the rest). */
CANCELLABLE_AS(sys_sigtimedwait, int, sigtimedwait,
	       (const sigset_t *set, siginfo_t *info, const struct timespec *ts), (set, info, ts))
CANCELLABLE_AS(sys_sigsuspend, int, sigsuspend, (const sigset_t *set), (set))
CANCELLABLE_AS(sys_ppoll, int, ppoll,
	       (struct pollfd *p, nfds_t n, const struct timespec *ts, const sigset_t *m),
	       (p, n, ts, m))
CANCELLABLE_AS(sys_pselect, int, pselect,
	       (int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *ts,
		const sigset_t *m),
	       (n, r, w, e, ts, m))
CANCELLABLE_AS(sys_epoll_pwait, int, epoll_pwait,
	       (int fd, struct epoll_event *ev, int n, int ms, const sigset_t *m),
	       (fd, ev, n, ms, m))
