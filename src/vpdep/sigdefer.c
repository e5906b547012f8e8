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
 * by the last unlock the code running here blocks the signal on its own
 * (a thread that blocks it runs here: the runtime's keeper says), the
 * signal goes back to the process or to the runtime's routing, with its
 * siginfo (hand_back), as the kernel would have sent a process-directed
 * signal to a thread that does not block it.  Inside libppl's part of a
 * handler, whose mask holds it off anyway, it waits for the frame's
 * sigreturn, which opens it (vp_signal_flush_uc).
 *
 * A handler over libppl's code with no lock held waits too (vindep decides
 * when: sigaction.c's held_in_libppl), but the signal is taken and its
 * siginfo kept in the VP (vp_signal_hold), to be sent to the kernel thread
 * again where the thread may move (vp_signal_release); vpdep.h says why. */
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

/* Block sig in the interrupted code's mask, note it in *set and queue it
 * again to this kernel thread with its siginfo. */
static void put_off(int sig, siginfo_t *si, void *uc, _Atomic uint64_t *set)
{
	int saved = errno;
	/* The first 64 bits of ucontext_t's sigset are the kernel's set. */
	sigaddset(&((ucontext_t *)uc)->uc_sigmask, sig);
	atomic_fetch_or_explicit(set, 1ULL << (sig - 1), memory_order_relaxed);
	siginfo_t again;
	memcpy(&again, si, sizeof again);
	/* To ourselves, so the kernel accepts any si_code (rt_tgsigqueueinfo(2)). */
	const struct vp_backend *b = vp_backend_ops();
	pid_t tid = (pid_t)vp_syscall(SYS_gettid);
	if (b->sigqueue(tid, sig, &again) != 0)
		b->kill(tid, sig);   /* the queue is full: no siginfo */
	errno = saved;
}

bool vp_signal_defer(int sig, siginfo_t *si, void *uc)
{
	const struct vp_backend *b = vp_backend_ops();
	if (b->stray != NULL && b->stray(sig, si))
		return true;   /* handled elsewhere: as if put off for good */
	struct vp *vp = vp_current();
	if (vp == NULL || vp->crit == 0)
		return false;
	put_off(sig, si, uc, &vp->deferred);
	return true;
}

/* A held signal's slot is written by its VP's kernel thread (in a
 * handler) and taken by that thread or by the monitor (vp_signal_reclaim):
 * each first claims the slot's bit in held_busy, and gives up rather than
 * wait for it (a handler may have interrupted the holder). */
static bool slot_claim(struct vp *vp, uint64_t b)
{
	return !(atomic_fetch_or_explicit(&vp->held_busy, b, memory_order_acquire) & b);
}

static void slot_free(struct vp *vp, uint64_t b)
{
	atomic_fetch_and_explicit(&vp->held_busy, ~b, memory_order_release);
}

/* Take sig's held instance into *si; false if there is none (or the slot
 * is busy: its other user sends it). */
static bool slot_take(struct vp *vp, int sig, siginfo_t *si)
{
	uint64_t b = 1ULL << (sig - 1);
	if (!slot_claim(vp, b))
		return false;
	bool got = atomic_fetch_and_explicit(&vp->held, ~b, memory_order_acq_rel) & b;
	if (got)
		memcpy(si, &vp->held_si[sig - 1], sizeof *si);
	slot_free(vp, b);
	return got;
}

void vp_signal_hold(int sig, const siginfo_t *si, void *uc)
{
	struct vp *vp = vp_current();
	uint64_t b = 1ULL << (sig - 1);
	if (slot_claim(vp, b)) {
		bool empty = !(atomic_load_explicit(&vp->held, memory_order_relaxed) & b);
		if (empty) {
			memcpy(&vp->held_si[sig - 1], si, sizeof *si);
			atomic_fetch_or_explicit(&vp->held, b, memory_order_relaxed);
		}
		slot_free(vp, b);
		if (empty)
			return;
	}
	/* Another instance while one is held: delivered already, as the
	 * first was, so on NPTL both run (and it may be a poke, a wake-up
	 * for a thread, not an instance at all: dropped, one was lost in 1
	 * run of 25 of tp_sigstorm).  Blocked and queued again here, as is
	 * one whose slot is being taken. */
	siginfo_t again;
	memcpy(&again, si, sizeof again);
	put_off(sig, &again, uc, &vp->held_blocked);
}

static bool (*_Atomic router)(int sig, const siginfo_t *si);

void vp_signal_set_router(bool (*route)(int sig, const siginfo_t *si))
{
	atomic_store_explicit(&router, route, memory_order_release);
}

/* A signal put off on this kernel thread that it now blocks (taken off it
 * by hand_back, or held: si): as a process-directed signal it would go to
 * another thread that takes it, so send it to the process again.  A
 * poke is no signal of the process: the runtime's router redirects it to
 * the thread it was for.  The kernel accepts the original siginfo only
 * for codes a process may forge (SI_QUEUE and other negative ones); the others
 * (kill, tgkill, kernel-generated) go to the runtime's routing, which
 * keeps their siginfo: kill() would make a new one naming this process as
 * the sender (a child's kill read as the program's own). */
static void give_back(int sig, siginfo_t *si)
{
	bool (*route)(int, const siginfo_t *) = atomic_load_explicit(&router, memory_order_acquire);
	if (vp_poke_target(si) != NULL) {
		/* A poke (vp_poke) is a wake-up for one thread, not an
		 * instance of sig: the runtime redirects it.  Sent to the
		 * process, the catcher took it for a signal of the process
		 * and its handler ran twice (tst-signal3: 10,001 runs). */
		if (route == NULL || !route(sig, si))
			vp_backend_ops()->kill_process(sig, si);
		return;
	}
	if (si->si_code < 0 && si->si_code != SI_TKILL) {
		vp_backend_ops()->kill_process(sig, si);   /* sigqueue's: its siginfo kept */
		return;
	}
	if (route == NULL || !route(sig, si))
		vp_backend_ops()->kill_process(sig, NULL);
}

static void hand_back(int sig)
{
	siginfo_t si;
	if (vp_take_signal(sig, &si))
		give_back(sig, &si);
}

/* The signals put off (put_off) in *set, taken: those in `blocked` go back
 * to the process; returns the others, for the caller to unblock. */
static uint64_t take_put_off(_Atomic uint64_t *set, uint64_t blocked)
{
	uint64_t d = atomic_exchange_explicit(set, 0, memory_order_relaxed);
	for (uint64_t back = d & blocked; back != 0; back &= back - 1)
		hand_back(__builtin_ctzll(back) + 1);
	return d & ~blocked;
}

static uint64_t (*_Atomic keeper)(uint64_t in_force, uint64_t put_off);

void vp_signal_set_keeper(uint64_t (*keep)(uint64_t in_force, uint64_t put_off))
{
	atomic_store_explicit(&keeper, keep, memory_order_release);
}

static uint64_t kept(uint64_t in_force, uint64_t put_off)
{
	uint64_t (*keep)(uint64_t, uint64_t) = atomic_load_explicit(&keeper, memory_order_acquire);
	return keep != NULL ? keep(in_force, put_off) : in_force;
}

/* Open `open`, signals put off here: in the mask uc's sigreturn gives
 * back, or (uc NULL) on this kernel thread now. */
static void open_put_off(struct vp *vp, uint64_t open, void *uc)
{
	if (open == 0)
		return;
	if (uc != NULL) {
		uint64_t m;
		memcpy(&m, &((ucontext_t *)uc)->uc_sigmask, sizeof m);
		m &= ~open;
		memcpy(&((ucontext_t *)uc)->uc_sigmask, &m, sizeof m);
		return;
	}
	vp_syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &open, NULL, sizeof open);
	/* Unless a handler the call let in moved the thread: the frame's
	 * sigreturn recorded the mask in the VP it left on. */
	if (vp_current() == vp)
		vp_note_sigmask(vp, vp->kmask & ~open);
}

/* The signals put off under a lock, now that none is held: opened (only
 * those: not a handler's sa_mask, if this runs inside one), or sent back
 * if the code running with in_force blocks them. */
static void flush(struct vp *vp, uint64_t in_force, void *uc)
{
	uint64_t keep = kept(in_force, atomic_load_explicit(&vp->deferred, memory_order_relaxed));
	if (keep != VP_SIGNALS_LATER)
		open_put_off(vp, take_put_off(&vp->deferred, keep), uc);
}

void vp_signal_flush(struct vp *vp)
{
	int saved = errno;
	flush(vp, vp->kmask, NULL);
	errno = saved;
}

void vp_signal_flush_uc(struct vp *vp, void *uc)
{
	if (vp->crit != 0 || atomic_load_explicit(&vp->deferred, memory_order_relaxed) == 0)
		return;
	int saved = errno;
	uint64_t m;
	memcpy(&m, &((ucontext_t *)uc)->uc_sigmask, sizeof m);
	flush(vp, m, uc);
	errno = saved;
}

void vp_signal_release(struct vp *vp, uint64_t blocked, void *uc)
{
	int saved = errno;
	const struct vp_backend *b = vp_backend_ops();
	for (uint64_t h = atomic_load_explicit(&vp->held, memory_order_relaxed); h != 0; h &= h - 1) {
		int sig = __builtin_ctzll(h) + 1;
		uint64_t bit = h & -h;
		siginfo_t si;
		if (!slot_take(vp, sig, &si))
			continue;
		if (blocked & bit) {
			give_back(sig, &si);
			continue;
		}
		pid_t tid = (pid_t)vp_syscall(SYS_gettid);   /* vp's: checked below */
		if (b->sigqueue(tid, sig, &si) != 0)
			b->kill(tid, sig);
		if (uc == NULL && vp_current() != vp)
			break;   /* its handler moved the thread: the rest at vp's next release */
	}
	if (vp_current() != vp) {
		errno = saved;
		return;
	}
	open_put_off(vp, take_put_off(&vp->held_blocked, blocked), uc);
	errno = saved;
}

void vp_signal_reclaim(struct vp *vp)
{
	int saved = errno;
	for (uint64_t h = atomic_load_explicit(&vp->held, memory_order_acquire); h != 0; h &= h - 1) {
		int sig = __builtin_ctzll(h) + 1;
		siginfo_t si;
		if (slot_take(vp, sig, &si))
			give_back(sig, &si);
	}
	errno = saved;
}
