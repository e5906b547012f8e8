/* Per-thread signals of user threads: pthread_kill, pthread_sigqueue,
 * pthread_sigmask and sigprocmask.
 *
 * The kernel knows only the VPs' kernel threads, so each user thread keeps
 * its own blocked set (ult.sigmask) and its own pending set (ult.sigpending),
 * and the kernel thread of a VP carries the mask of the thread it runs,
 * without the signals that have a handler (sig_kmask):
 *
 *  - The mask is installed lazily.  When a thread resumes on a VP whose
 *    kernel mask (vp.kmask) differs from its own, it installs its own
 *    (one system call).  Threads that share a mask, which is nearly always
 *    the case, switch with no system call at all.
 *  - A signal for a thread that runs on a VP right now is set pending on
 *    it, and that VP's kernel thread gets a poke (vp_poke: the same signal,
 *    queued with a mark and the target), so it interrupts a system call
 *    the thread is blocked in (EINTR), as on NPTL.  The trampoline runs the
 *    handler only if the thread the poke names (or, when two pokes merged,
 *    the one running there) still has it pending; otherwise it sees that
 *    the target gets it (sig_kick).  The kernel keeps one instance of a
 *    standard signal pending per kernel thread, so the signal itself, sent
 *    for two threads of one VP while that kernel thread blocked it, used
 *    to reach one of them only.  A signal with no handler (default action,
 *    ignored) goes to the kernel thread as it is.
 *  - A signal for a thread parked where a signal ends the park (PARK_INTR:
 *    semaphore, mutex, rwlock, barrier, cond, join, sleeps) is set pending and the
 *    thread woken with EINTR, under its queue's lock as its timer would
 *    (sig_wake); it raises the signal itself when it resumes, so the handler
 *    runs with its identity, and its caller waits again (or, for a cond,
 *    returns as a spurious wake-up; a sleep returns EINTR).  The pending
 *    bit is the handshake: whoever clears it (fetch_and) delivers it, once.
 *  - A ready thread gets it pending.  One parked elsewhere (once, the
 *    park lot) gets it at once on the sender's kernel thread,
 *    with the sender's identity (docs/posix.md lists this difference).
 *    If the sender blocks the signal, or the target does, it is left pending
 *    on the target and delivered when the target next resumes with it
 *    unblocked.
 *  - Pending signals of a thread are raised on its own kernel thread when
 *    it resumes (sig_resumed), or when pthread_sigmask unblocks them: a
 *    poke to itself for a signal with a handler, which the trampoline
 *    takes at once (or when a lock it holds is released).
 *  - A process-directed signal that the kernel gave to a VP goes to the
 *    user thread that should take it, as pthread_kill would send it there
 *    (sig_process_claim, below). */
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pthread_impl.h"

/* glibc's internal signals (SIGCANCEL, SIGSETXID): pthread_kill and
 * pthread_sigqueue refuse them and pthread_sigmask never blocks them, as
 * glibc does. */
#define SIG_INTERNAL (bit(32) | bit(33))
/* ... nor libppl's own (sigreserved.c): the cancellation signal and the
 * preemption tick, which a program that blocks "every signal" must still
 * get, as glibc keeps its SIGCANCEL. */
#define SIG_RESERVED (bit(PPL_SIGCANCEL) | bit(vp_tick_signal()))
#define SIG_UNBLOCKABLE (bit(SIGKILL) | bit(SIGSTOP) | SIG_INTERNAL | SIG_RESERVED)

static inline uint64_t bit(int sig)
{
	return 1ULL << (sig - 1);
}

static uint64_t to_bits(const sigset_t *s)
{
	uint64_t m;
	memcpy(&m, s, sizeof m);   /* glibc's sigset_t starts with the kernel's set */
	return m;
}

/* The application's sets, read and written as the kernel does (its first
 * 64 bits only): EFAULT where the pointer is bad (uaccess.c), not a crash. */
static int get_set(uint64_t *m, const sigset_t *user)
{
	return vp_copy_in(m, user, sizeof *m);
}

static int put_set(sigset_t *user, uint64_t m)
{
	return vp_copy_out(user, &m, sizeof m);   /* the kernel's 8 bytes, no more */
}

/* Raise on the calling kernel thread every pending signal of self that its
 * mask allows; the caller runs on self's VP with self's mask installed.  A
 * signal with a handler is poked (the trampoline takes the bit when the
 * handler runs, here and now unless a lock puts it off); one without (a
 * default action, ignored) is taken and raised as it is. */
/* Process-directed signals every user thread blocked when they came
 * (sig_process_claim): the first thread to unblock one takes it. */
static _Atomic uint64_t proc_pending;

static void take_proc_pending(struct ult *self)
{
	uint64_t p = atomic_load_explicit(&proc_pending, memory_order_seq_cst) & ~self->sigmask;
	for (; p != 0; p &= p - 1) {
		uint64_t b = p & -p;
		if (atomic_fetch_and_explicit(&proc_pending, ~b, memory_order_acq_rel) & b)
			atomic_fetch_or_explicit(&self->sigpending, b, memory_order_seq_cst);
	}
}

static void deliver_pending(struct ult *self)
{
	uint64_t poked = 0;
	if (ppl_unlikely(atomic_load_explicit(&proc_pending, memory_order_relaxed) != 0))
		take_proc_pending(self);
	for (;;) {
		uint64_t p = atomic_load_explicit(&self->sigpending, memory_order_acquire) &
			     ~self->sigmask & ~poked;
		if (p == 0)
			return;
		uint64_t b = p & -p;
		int sig = __builtin_ctzll(b) + 1;
		if (sig_has_handler(sig)) {
			poked |= b;
			vp_poke(NULL, sig, self);
		} else if (atomic_fetch_and_explicit(&self->sigpending, ~b, memory_order_acq_rel) & b) {
			vp_signal_self(sig);
		}
	}
}

void sig_resumed_slow(struct ult *self, struct vproc *v)
{
	uint64_t k = sig_kmask(self);
	if (k != v->vp.kmask)
		vp_set_sigmask(k);
	deliver_pending(self);
}

void sig_thread_init(struct ult *t, const struct ult *creator)
{
	/* A foreign creator's mask is its kernel thread's. */
	t->sigmask = creator->foreign ? vp_get_sigmask() & ~SIG_UNBLOCKABLE : creator->sigmask;
	atomic_store_explicit(&t->sigpending, 0, memory_order_relaxed);
	atomic_store_explicit(&t->sigwaiting, 0, memory_order_relaxed);
	t->altstack_on = false;   /* POSIX: a new thread has none */
}

void sig_thread_mask(struct ult *t, const sigset_t *set)
{
	t->sigmask = to_bits(set) & ~SIG_UNBLOCKABLE;
}

/* The main thread becomes a user thread (runtime start-up): signals it
 * blocked and got before then are pending on its kernel thread, which is
 * about to become VP 0, shared by every thread.  Take them off the kernel
 * thread and make them the main thread's own, as on NPTL, where a new
 * thread starts with nothing pending.  (Queued real-time signals collapse
 * into one.) */
void sig_adopt_pending(struct ult *m)
{
	if (m->sigmask == 0)
		return;
	for (uint64_t pend = vp_get_sigpending() & m->sigmask; pend != 0; pend &= pend - 1) {
		int sig = __builtin_ctzll(pend) + 1;
		if (vp_take_signal(sig, NULL))
			atomic_fetch_or_explicit(&m->sigpending, bit(sig), memory_order_relaxed);
	}
}

void sig_vp_init(struct vproc *v)
{
	v->vp.kmask = vp_get_sigmask();
}

/* ---- sending -------------------------------------------------------------------- */

/* t has an unblocked signal pending (set, seq_cst, before this call).  If t
 * is parked where a signal ends the wait (PARK_INTR), take it off its queue
 * under the queue's lock, as its timer would, and wake it with EINTR: it
 * raises the signal itself when it resumes (sig_resumed).  True also when
 * such a park was already ended by its waker or timer (it resumes anyway),
 * false when t is not in an interruptible park.  A park published after
 * our load of park_lock reads sigpending after publishing (sched.c park),
 * so one of the two sees the other. */
static bool sig_wake(struct ult *t)
{
	return sched_interrupt(t, PARK_INTR, EINTR);
}

/* sig is pending on t (set, seq_cst, before this call): see that t raises
 * it.  Every path leaves the bit to whoever clears it, which delivers it,
 * once:
 *  - blocked by t: it stays pending until t unblocks it;
 *  - t is parked where a signal ends the wait: woken (sig_wake), it raises
 *    it when it resumes;
 *  - t is parked elsewhere (or off every queue for good): taken and raised
 *    here, on the caller's kernel thread, unless the caller blocks it;
 *  - t runs on a VP: a poke to that VP's kernel thread (vp_poke), which
 *    interrupts a system call t is in, as on NPTL; its trampoline takes the
 *    bit if t still runs there, and otherwise calls this again.  Not the
 *    signal itself: two of them for two threads of one VP could merge in
 *    the kernel, which keeps one instance per kernel thread, and one
 *    thread would never get its own (pthread_cond_init/1-3 hung);
 *  - t is ready: it raises it when it resumes. */
static bool sig_kick(struct ult *t, int sig, bool here_ok)
{
	if (bit(sig) & t->sigmask)
		return false;
	if (sig_wake(t))
		return false;
	int state = atomic_load_explicit(&t->state, memory_order_acquire);
	if (state == ULT_BLOCKED) {
		/* The trampoline (here_ok), whose kernel mask blocks sig while
		 * it runs: it runs the handler itself, if it takes the bit. */
		if (here_ok)
			return atomic_fetch_and_explicit(&t->sigpending, ~bit(sig),
							 memory_order_acq_rel) & bit(sig);
		struct vproc *me = (struct vproc *)vp_current();
		uint64_t mine = me != NULL && me->current != NULL ? me->current->sigmask
								 : vp_get_sigmask();
		if (!(bit(sig) & mine) &&
		    (atomic_fetch_and_explicit(&t->sigpending, ~bit(sig), memory_order_acq_rel) &
		     bit(sig)))
			vp_signal_self(sig);
		return false;
	}
	/* It may have resumed since: then it is running and looks at its
	 * pending set only at its next resume or pthread_sigmask. */
	struct vproc *v = t->vp;
	if (state != ULT_RUNNING || v == NULL || v->current != t)
		return false;
	if (sig_has_handler(sig))
		vp_poke(&v->vp, sig, t);
	else if (atomic_fetch_and_explicit(&t->sigpending, ~bit(sig), memory_order_acq_rel) &
		 bit(sig))
		vp_signal(&v->vp, sig);
	return false;
}

void sig_tkill_info(siginfo_t *si, int sig)
{
	memset(si, 0, sizeof *si);
	si->si_signo = sig;
	si->si_code = SI_TKILL;
	si->si_pid = getpid();
	si->si_uid = getuid();
}

bool sig_poke_claim(void *target, int sig)
{
	struct vproc *v = (struct vproc *)vp_current();
	struct ult *self = v ? v->current : NULL;
	/* Two pokes of one signal may have merged into this one: the thread
	 * running here takes its own first, whoever the poke named. */
	bool mine = self != NULL && !(bit(sig) & self->sigmask) &&
		    (atomic_fetch_and_explicit(&self->sigpending, ~bit(sig), memory_order_acq_rel) &
		     bit(sig));
	struct ult *t = target;
	if (t != self && (atomic_load_explicit(&t->sigpending, memory_order_acquire) & bit(sig)) &&
	    sig_kick(t, sig, !mine))
		return true;   /* t is parked where a signal does not end the wait */
	return mine;
}

/* In si_errno of pthread_sigqueue's signal, which sets nothing else there:
 * the trampoline tells it from a process-directed sigqueue by it. */
#define DIRECTED_MARK 0x70706c54   /* "ppl" 'T' */

bool sig_thread_directed(siginfo_t *si)
{
	if (si->si_code == SI_TKILL)
		return true;
	if (si->si_code != SI_QUEUE || si->si_errno != DIRECTED_MARK || si->si_pid != getpid())
		return false;
	si->si_errno = 0;
	return true;
}

static int kill_ult(struct ult *t, int sig)
{
	if (sig < 0 || sig > 64 || (sig != 0 && (bit(sig) & (SIG_INTERNAL | SIG_RESERVED))))
		return EINVAL;
	int state = atomic_load_explicit(&t->state, memory_order_acquire);
	if (state == ULT_FREE)
		return ESRCH;
	/* glibc 2.34 and later: a thread that has exited but is not joined yet
	 * accepts (and drops) signals. */
	if (sig == 0 || state == ULT_EXITING || state == ULT_ZOMBIE)
		return 0;
	if (t->foreign) {
		if (syscall(SYS_tgkill, getpid(), t->ktid, sig) != 0)
			return errno;
		return 0;
	}
	struct vproc *me = (struct vproc *)vp_current();
	struct ult *self = me ? me->current : NULL;
	if (t == self) {
		if (bit(sig) & self->sigmask) {
			atomic_fetch_or_explicit(&t->sigpending, bit(sig), memory_order_release);
			return 0;
		}
		return vp_signal_self(sig);
	}
	if (state == ULT_RUNNING) {
		/* Running on a VP and waiting for it in sigwait (in the kernel
		 * on that kernel thread, or about to be): the kernel's wait
		 * takes it there.  Or running with no handler to run: the
		 * kernel thread gets the default action (or ignores it). */
		struct vproc *v = t->vp;
		if (v && v->current == t &&
		    ((atomic_load_explicit(&t->sigwaiting, memory_order_seq_cst) & bit(sig)) ||
		     (!(bit(sig) & t->sigmask) && !sig_has_handler(sig))))
			return vp_signal(&v->vp, sig);
	}
	atomic_fetch_or_explicit(&t->sigpending, bit(sig), memory_order_seq_cst);
	sig_kick(t, sig, false);
	return 0;
}

int ppl_pthread_kill(pthread_t th, int sig)
{
	return kill_ult((struct ult *)th, sig);
}

int ppl_pthread_sigqueue(pthread_t th, int sig, const union sigval value)
{
	struct ult *t = (struct ult *)th;
	if (sig < 0 || sig > 64 || (sig != 0 && (bit(sig) & (SIG_INTERNAL | SIG_RESERVED))))
		return EINVAL;
	int state = atomic_load_explicit(&t->state, memory_order_acquire);
	if (state == ULT_FREE || state == ULT_EXITING || state == ULT_ZOMBIE)
		return ESRCH;
	/* The value needs the kernel's queue: to the kernel thread that runs
	 * the target, or that is the target; a parked target gets it on the
	 * sender's kernel thread, like pthread_kill. */
	int tid;
	if (t->foreign) {
		tid = t->ktid;
	} else if (state == ULT_RUNNING && t->vp && t->vp->current == t) {
		tid = atomic_load_explicit(&t->vp->vp.tid, memory_order_acquire);
	} else {
		tid = (int)syscall(SYS_gettid);
	}
	siginfo_t info;
	memset(&info, 0, sizeof info);
	info.si_signo = sig;
	info.si_code = SI_QUEUE;
	info.si_pid = getpid();
	info.si_uid = getuid();
	info.si_value = value;
	info.si_errno = DIRECTED_MARK;
	if (syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, sig, &info) != 0)
		return errno;
	return 0;
}

/* ---- process-directed signals ------------------------------------------------------- */

/* The kernel gives a process-directed signal to a kernel thread that does
 * not block it: on libppl, a VP, which may run a user thread that is not
 * the one to take it, or none at all (its idle loop, where the handler
 * would run in no thread's TLS while the thread that waits for it stays
 * parked).  The trampoline asks sig_process_claim where it goes: to the
 * main thread if it does not block it (Linux prefers the thread group's
 * leader, and programs such as CPython rely on it), else to the thread
 * running here, else to any user thread that takes it now: running,
 * ready, or parked where a signal ends the park (kill_ult then wakes it
 * with EINTR, and it runs the handler itself).  A thread that waits for it
 * in sigwait comes next; failing all, it stays pending on the main thread
 * until it unblocks it.  The VPs' kernel masks never block a signal that
 * has a handler (sig_kmask), so such a signal finds a kernel thread at
 * once, whichever threads run or block it. */

/* The siginfo of process-directed signals passed on to another thread,
 * for the handler that thread runs (sig_claimed_info); one per signal, as
 * the kernel keeps one instance of a standard signal pending. */
static struct {
	spin_t lock;
	_Atomic uint64_t valid;
	siginfo_t info[65];
} passed;

void sig_claimed_info(siginfo_t *si, int sig)
{
	if (atomic_load_explicit(&passed.valid, memory_order_acquire) & bit(sig)) {
		spin_lock(&passed.lock);
		bool ok = atomic_fetch_and_explicit(&passed.valid, ~bit(sig),
						    memory_order_relaxed) & bit(sig);
		if (ok)
			*si = passed.info[sig];
		spin_unlock(&passed.lock);
		if (ok)
			return;
	}
	sig_tkill_info(si, sig);   /* the poker is this process */
}

bool sig_directed_claim(int sig)
{
	struct vproc *v = (struct vproc *)vp_current();
	struct ult *self = v != NULL ? v->current : NULL;
	if (self == NULL || !(bit(sig) & self->sigmask))
		return true;
	atomic_fetch_or_explicit(&self->sigpending, bit(sig), memory_order_seq_cst);
	return false;
}

/* t can run sig's handler now or soon: a user thread on a VP that does not
 * block it, running, ready, or parked where a signal ends the park. */
static bool takes(struct ult *t, int sig)
{
	if (t->foreign || t->fork_gen != ppl_rt.fork_gen || (bit(sig) & t->sigmask))
		return false;
	int st = atomic_load_explicit(&t->state, memory_order_acquire);
	if (st == ULT_BLOCKED)
		return atomic_load_explicit(&t->park_lock, memory_order_acquire) != NULL &&
		       (t->park_flags & PARK_INTR);
	return st == ULT_RUNNING || st == ULT_READY;
}

static bool alive(struct ult *t)
{
	int st = atomic_load_explicit(&t->state, memory_order_acquire);
	return !t->foreign && t->fork_gen == ppl_rt.fork_gen &&
	       (st == ULT_RUNNING || st == ULT_READY || st == ULT_BLOCKED);
}

static int kill_ult(struct ult *t, int sig);

static bool unblocked(struct ult *t, int sig)
{
	return alive(t) && !(bit(sig) & t->sigmask);
}

/* Passes sig to t; true if it is to run here after all.  A thread that
 * exits drops the signals sent to it, so t may leave with ours: t stores
 * ULT_EXITING before it looks at its pending set a last time (sig_exit),
 * and we set the bit before we look at its state: one of the two sees the
 * other, and whoever takes the bit back delivers it. */
static bool pass_to(struct ult *t, int sig, const siginfo_t *si)
{
	spin_lock(&passed.lock);
	passed.info[sig] = *si;
	atomic_fetch_or_explicit(&passed.valid, bit(sig), memory_order_release);
	spin_unlock(&passed.lock);
	if (atomic_load_explicit(&t->sigwaiting, memory_order_seq_cst) & bit(sig)) {
		kill_ult(t, sig);
		return false;
	}
	atomic_fetch_or_explicit(&t->sigpending, bit(sig), memory_order_seq_cst);
	if (!alive(t))
		return atomic_fetch_and_explicit(&t->sigpending, ~bit(sig), memory_order_acq_rel) &
		       bit(sig);
	return sig_kick(t, sig, true);
}

void sig_exit(struct ult *self)
{
	if (atomic_load_explicit(&self->sigpending, memory_order_seq_cst) & ~self->sigmask)
		deliver_pending(self);
}

bool sig_process_claim(int sig, const siginfo_t *si)
{
	struct vproc *v = (struct vproc *)vp_current();
	if (v == NULL)
		return true;   /* a kernel thread that is no VP: its own */
	struct ult *self = v->current;
	struct ult *m = &ppl_rt.main_ult;
	bool here = self != NULL && !(bit(sig) & self->sigmask);
	if (here && self == m)
		return true;
	if (m != self && takes(m, sig))
		return pass_to(m, sig, si);
	if (here)
		return true;
	for (struct ult *t = tcb_all(); t != NULL; t = t->all_next)
		if (t != self && t != m && takes(t, sig))
			return pass_to(t, sig, si);
	if (alive(m) && (atomic_load_explicit(&m->sigwaiting, memory_order_seq_cst) & bit(sig)))
		return pass_to(m, sig, si);
	for (struct ult *t = tcb_all(); t != NULL; t = t->all_next)
		if (t != m && alive(t) &&
		    (atomic_load_explicit(&t->sigwaiting, memory_order_seq_cst) & bit(sig)))
			return pass_to(t, sig, si);
	/* A thread takes it but is parked where a signal does not end the
	 * wait (a join, a mutex lock): run it here, on this kernel thread, as
	 * pthread_kill does for such a park, rather than hold it until that
	 * wait ends, which may be waiting for the handler (pthread_join/6-3). */
	if (unblocked(m, sig))
		return true;
	for (struct ult *t = tcb_all(); t != NULL; t = t->all_next)
		if (unblocked(t, sig))
			return true;
	if (!alive(m))
		return true;   /* the process is going away: as the kernel did */
	/* Every thread blocks it: pending on the process until one unblocks
	 * it (deliver_pending) or waits for it (sigtimedwait), as in the
	 * kernel.  A thread that unblocked it meanwhile saw no bit: look
	 * once more, after publishing it. */
	spin_lock(&passed.lock);
	passed.info[sig] = *si;
	atomic_fetch_or_explicit(&passed.valid, bit(sig), memory_order_release);
	spin_unlock(&passed.lock);
	atomic_fetch_or_explicit(&proc_pending, bit(sig), memory_order_seq_cst);
	for (struct ult *t = tcb_all(); t != NULL; t = t->all_next)
		if (unblocked(t, sig) &&
		    (atomic_fetch_and_explicit(&proc_pending, ~bit(sig), memory_order_acq_rel) &
		     bit(sig)))
			return true;
	return false;
}

/* raise in a user thread is pthread_kill to itself, as glibc's raise is:
 * not a tgkill of the VP's kernel thread, which other threads share.  -1
 * when the caller is not a user thread (the C library's raise serves). */
int sig_raise(int sig)
{
	struct vproc *v = (struct vproc *)vp_current();
	if (v == NULL || v->current == NULL)
		return -1;
	return kill_ult(v->current, sig);
}

void sig_vp_idle(struct vproc *v)
{
	/* After `sleeping` is set: sig_wrapped_grew sets the bit before it
	 * looks at `sleeping`, so either we see the bit or it wakes us. */
	uint64_t k = v->vp.kmask & ~atomic_load_explicit(&sig_wrapped, memory_order_seq_cst);
	if (k != v->vp.kmask)
		vp_set_sigmask(k);
}

void sig_wrapped_grew(void)
{
	if (!atomic_load_explicit(&ppl_rt.started, memory_order_acquire))
		return;
	for (int i = 0; i < ppl_rt.nvps_total; i++) {
		struct vproc *v = ppl_rt.vps[i];
		if (v != NULL && atomic_load_explicit(&v->sleeping, memory_order_seq_cst))
			vp_resume(&v->vp);
	}
}

/* ---- masks ------------------------------------------------------------------------ */

/* The mask `how` and `set` make of cur, in *next.  0 or EINVAL. */
static int new_mask(int how, const sigset_t *set, uint64_t cur, uint64_t *next)
{
	*next = cur;
	if (set == NULL)
		return 0;
	uint64_t s = to_bits(set) & ~SIG_UNBLOCKABLE;
	if (how == SIG_BLOCK)
		*next = cur | s;
	else if (how == SIG_UNBLOCK)
		*next = cur & ~s;
	else if (how == SIG_SETMASK)
		*next = s;
	else
		return EINVAL;
	return 0;
}

int ppl_pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	struct vproc *v = (struct vproc *)vp_current();
	struct ult *self = v ? v->current : NULL;
	/* A foreign kernel thread, or a VP's own loop: the kernel's mask is
	 * the thread's.  A user thread: its own, installed on its VP. */
	uint64_t cur = self ? self->sigmask : vp_get_sigmask(), next;
	if (new_mask(how, set, cur, &next) != 0)
		return EINVAL;
	if (self == NULL) {
		if (next != cur)
			vp_set_sigmask(next);
	} else if (set != NULL) {
		self->sigmask = next;
		uint64_t k = sig_kmask(self);
		if (v->vp.kmask != k)
			vp_set_sigmask(k);
		deliver_pending(self);
	}
	/* Last, as the kernel: set may be old, and a bad old is EFAULT
	 * with the new mask in force. */
	return old && put_set(old, cur) ? EFAULT : 0;
}

/* The kernel's pending set of the kernel thread (process-directed signals
 * and the few that wait on it) and the user thread's own. */
int ppl_sigpending(sigset_t *set)
{
	uint64_t pend = vp_get_sigpending() | atomic_load_explicit(&proc_pending, memory_order_acquire);
	struct vproc *v = (struct vproc *)vp_current();
	if (v != NULL && v->current != NULL)
		pend |= atomic_load_explicit(&v->current->sigpending, memory_order_acquire);
	if (put_set(set, pend) != 0) {
		errno = EFAULT;
		return -1;
	}
	return 0;
}

/* ---- waiting for signals ------------------------------------------------------------ */

/* sigwait and co.: a signal pthread_kill left pending on the thread itself
 * (it blocks the signal) is taken first; otherwise the kernel waits on the
 * VP's kernel thread, which has the thread's mask, and pthread_kill sends
 * signals it waits for to that kernel thread (sigwaiting). */
int ppl_sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *ts)
{
	struct vproc *v = (struct vproc *)vp_current();
	struct ult *self = v ? v->current : NULL;
	if (self == NULL || set == NULL)
		return sys_sigtimedwait(set, info, ts);
	uint64_t want;
	if (get_set(&want, set) != 0) {
		errno = EFAULT;
		return -1;
	}
	want &= ~SIG_UNBLOCKABLE;
	atomic_store_explicit(&self->sigwaiting, want, memory_order_seq_cst);
	uint64_t p = (atomic_load_explicit(&self->sigpending, memory_order_seq_cst) |
		      atomic_load_explicit(&proc_pending, memory_order_seq_cst)) & want;
	for (; p != 0; p &= p - 1) {
		uint64_t b = p & -p;
		if (!(atomic_fetch_and_explicit(&self->sigpending, ~b, memory_order_acq_rel) & b) &&
		    !(atomic_fetch_and_explicit(&proc_pending, ~b, memory_order_acq_rel) & b))
			continue;
		atomic_store_explicit(&self->sigwaiting, 0, memory_order_relaxed);
		int sig = __builtin_ctzll(b) + 1;
		if (info != NULL) {
			siginfo_t si;
			sig_claimed_info(&si, sig);
			if (vp_copy_out(info, &si, sizeof si) != 0) {
				errno = EFAULT;
				return -1;
			}
		}
		return sig;
	}
	siginfo_t si;
	int r;
	for (;;) {
		r = sys_sigtimedwait(set, &si, ts);
		void *target = r > 0 ? vp_poke_target(&si) : NULL;
		if (target == NULL)
			break;
		/* A poke (sig_kick): the signal itself is on a thread's
		 * pending set.  Ours: take it, unless it was taken meanwhile.
		 * Another thread's: see that it gets it, and wait on (a
		 * timeout starts again: a rare, short extension). */
		if (target == self) {
			if (atomic_fetch_and_explicit(&self->sigpending, ~bit(r),
						      memory_order_acq_rel) & bit(r)) {
				sig_tkill_info(&si, r);
				break;
			}
		} else if (atomic_load_explicit(&((struct ult *)target)->sigpending,
					       memory_order_acquire) & bit(r)) {
			sig_kick(target, r, false);
		}
	}
	/* The caller may have migrated while blocked: self, not v->current. */
	atomic_store_explicit(&self->sigwaiting, 0, memory_order_relaxed);
	/* The kernel takes the signal, then fails to write a bad info. */
	if (r > 0 && info != NULL && vp_copy_out(info, &si, sizeof si) != 0) {
		errno = EFAULT;
		return -1;
	}
	return r;
}

int ppl_sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	return ppl_sigtimedwait(set, info, NULL);
}

int ppl_sigwait(const sigset_t *set, int *sig)
{
	int r;
	do
		r = ppl_sigtimedwait(set, NULL, NULL);
	while (r == -1 && errno == EINTR);   /* sigwait does not fail with EINTR */
	if (r == -1)
		return errno;
	*sig = r;
	return 0;
}

int ppl_sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	int err = ppl_pthread_sigmask(how, set, old);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}
