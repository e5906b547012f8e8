/* Putting off the application's signal handlers while the VP holds one of
 * libppl's spin locks (vpdep.h explains why).
 *
 * The kernel has delivered the signal and the handler has been entered, so
 * it cannot simply be left pending.  Instead the handler adds the signal to
 * the mask the interrupted code gets back on sigreturn (uc_sigmask),
 * queues it again to this kernel thread with its siginfo, and returns.
 * The signal now waits, blocked, on this kernel thread.  The spin_unlock
 * that releases the VP's last lock (vp_crit_leave) unblocks it again, and
 * the kernel delivers it there, to a handler that finds no lock
 * held.  If a context switch installs a mask before that, the signal
 * arrives then; still inside a lock, it is simply put off once more.  If
 * by the last unlock this kernel thread blocks the signal (a thread that
 * blocks it runs here, or libppl's part of a handler holds it off), the
 * signal goes back to the process or to the runtime's routing, with its
 * siginfo (hand_back), as the kernel would have sent a process-directed
 * signal to a thread that does not block it. */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "vp_backend.h"
#include "vpdep.h"

int vp_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (sig == SIGSEGV && act != NULL)
		vp_uaccess_arm(false);   /* no longer libppl's handler (uaccess.c) */
	/* The C library's (it adds its restorer): libppl exports sigaction
	 * and __sigaction too. */
	static void *_Atomic real;
	int (*fn)(int, const struct sigaction *, struct sigaction *) =
		(int (*)(int, const struct sigaction *, struct sigaction *))vp_libc_fn(
			&real, "sigaction", "GLIBC_2.2.5");
	return fn(sig, act, old);
}

bool vp_signal_defer(int sig, siginfo_t *si, void *uc)
{
	const struct vp_backend *b = vp_backend_ops();
	if (b->stray != NULL && b->stray(sig, si))
		return true;   /* handled elsewhere: as if put off for good */
	struct vp *vp = vp_current();
	if (vp == NULL || vp->crit == 0)
		return false;
	int saved = errno;
	/* The first 64 bits of ucontext_t's sigset are the kernel's set. */
	sigaddset(&((ucontext_t *)uc)->uc_sigmask, sig);
	atomic_fetch_or_explicit(&vp->deferred, 1ULL << (sig - 1), memory_order_relaxed);
	siginfo_t again;
	memcpy(&again, si, sizeof again);
	/* To ourselves, so the kernel accepts any si_code (rt_tgsigqueueinfo(2)). */
	pid_t tid = (pid_t)vp_syscall(SYS_gettid);
	if (b->sigqueue(tid, sig, &again) != 0)
		b->kill(tid, sig);   /* the queue is full: no siginfo */
	errno = saved;
	return true;
}

static bool (*_Atomic router)(int sig, const siginfo_t *si);

void vp_signal_set_router(bool (*route)(int sig, const siginfo_t *si))
{
	atomic_store_explicit(&router, route, memory_order_release);
}

/* A signal put off on this kernel thread that it now blocks: as a
 * process-directed signal it would go to another thread that takes it, so
 * take it off this kernel thread and send it to the process again.  A
 * poke is no signal of the process: the runtime's router redirects it to
 * the thread it was for.  The kernel accepts the original siginfo only
 * for codes a process may forge (SI_QUEUE and other negative ones); the others
 * (kill, tgkill, kernel-generated) go to the runtime's routing, which
 * keeps their siginfo: kill() would make a new one naming this process as
 * the sender (a child's kill read as the program's own). */
static void hand_back(int sig)
{
	siginfo_t si;
	if (!vp_take_signal(sig, &si))
		return;
	bool (*route)(int, const siginfo_t *) = atomic_load_explicit(&router, memory_order_acquire);
	if (vp_poke_target(&si) != NULL) {
		/* A poke (vp_poke) is a wake-up for one thread, not an
		 * instance of sig: the runtime redirects it.  Sent to the
		 * process, the catcher took it for a signal of the process
		 * and its handler ran twice (tst-signal3: 10,001 runs). */
		if (route == NULL || !route(sig, &si))
			vp_backend_ops()->kill_process(sig, &si);
		return;
	}
	if (si.si_code < 0 && si.si_code != SI_TKILL) {
		vp_backend_ops()->kill_process(sig, &si);   /* sigqueue's: its siginfo kept */
		return;
	}
	if (route == NULL || !route(sig, &si))
		vp_backend_ops()->kill_process(sig, NULL);
}

/* vp_crit_leave: the last lock is gone and signals were put off.  Unblock
 * only those (not a handler's sa_mask, if this runs inside one); those the
 * thread running now blocks go back to the process. */
void vp_signal_flush(struct vp *vp)
{
	uint64_t d = atomic_exchange_explicit(&vp->deferred, 0, memory_order_relaxed);
	int saved = errno;
	for (uint64_t back = d & vp->kmask; back != 0; back &= back - 1)
		hand_back(__builtin_ctzll(back) + 1);
	d &= ~vp->kmask;
	if (d != 0)
		vp_syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &d, NULL, sizeof d);
	errno = saved;
}
