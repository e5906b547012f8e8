/* Per-thread signals of user threads: pthread_kill, pthread_sigqueue,
 * pthread_sigmask and sigprocmask.
 *
 * The kernel knows only the VPs' kernel threads, so each user thread keeps
 * its own blocked set (ult.sigmask) and its own pending set (ult.sigpending),
 * and the kernel thread of a VP carries the mask of the thread it runs:
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
 *    mutex, rwlock, barrier, cond, join, sleeps) is set pending and the
 *    thread woken with EINTR, under its queue's lock as its timer would
 *    (sig_wake); it raises the signal itself when it resumes, so the handler
 *    runs with its identity, and its caller waits again (or, for a cond,
 *    returns as a spurious wake-up; a sleep returns EINTR).  The pending
 *    bit is the handshake: whoever clears it (fetch_and) delivers it, once.
 *  - A ready thread gets it pending.  One parked elsewhere (semaphores,
 *    once, the park lot) gets it at once on the sender's kernel thread,
 *    with the sender's identity (docs/posix.md lists this difference).
 *    If the sender blocks the signal, or the target does, it is left pending
 *    on the target and delivered when the target next resumes with it
 *    unblocked.
 *  - Pending signals of a thread are raised on its own kernel thread when
 *    it resumes (sig_resumed), or when pthread_sigmask unblocks them: a
 *    poke to itself for a signal with a handler, which the trampoline
 *    takes at once (or when a lock it holds is released). */
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "monitor.h"
#include "preempt.h"
#include "runtime.h"
#include "scheduler.h"
#include "sig.h"
#include "tcbpool.h"
#include "ult.h"
#include "vproc.h"

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
static void deliver_pending(struct ult *self)
{
	uint64_t poked = 0;
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

void sig_resumed_look(struct ult *self, struct vproc *v, unsigned long gen)
{
	/* The generation before the looks: a change made meanwhile, or by
	 * them (an install), makes the next resume look again. */
	self->ks_vp = v;
	self->ks_gen = gen;
	sched_cpus_sync(self, v, false);
	sched_class_sync(self, v);
	if (ppl_unlikely(self->alt.ss_sp != vp_altstack_current(&v->vp)))
		sig_alt_switch(self, v);
	if (ppl_unlikely(self->sigmask != vp_kmask(&v->vp) || self->in_sigframe ||
			 vp_signals_held(&v->vp) ||
			 atomic_load_explicit(&self->sigpending, memory_order_relaxed) != 0 ||
			 atomic_load_explicit(&sig_claims, memory_order_relaxed) != 0))
		sig_resumed_slow(self, v);
	/* Not all of it could be given (an install the kernel refused), or a
	 * handler moved self: look again at the next resume, as before. */
	if ((struct vproc *)vp_current() != v || ult_kclass(self) != vp_kclass(&v->vp) ||
	    self->alt.ss_sp != vp_altstack_current(&v->vp) || self->sigmask != vp_kmask(&v->vp))
		self->ks_vp = NULL;
}

/* self resumes inside libppl's part of a signal handler (it was switched
 * out there: the preemption tick, or a preemption owed when an
 * application's handler returned to the trampoline): its signals raised now
 * would stack their frames on that one's (the kernel's signal frame, about
 * 3 KiB with this CPU's xsave area, and the switch path's), and a handler
 * on a PTHREAD_STACK_MIN stack had half the room NPTL gives it.  So they
 * are raised blocked on this kernel thread, and the handler's sigreturn,
 * which restores the interrupted code's mask, lets the kernel deliver them
 * there, at the depth the thread was interrupted at (sig_frame_leave notes
 * that mask in the VP).  A claim of the process becomes a poke to itself,
 * which the trampoline takes then. */
/* The application's signals a handler frame of libppl's holds off: all
 * but the faults (a fault there must still be reported) and those no
 * mask blocks. */
#define SIG_FAULTS (bit(SIGSEGV) | bit(SIGBUS) | bit(SIGFPE) | bit(SIGILL) | bit(SIGTRAP) | bit(SIGSYS))
#define SIG_HELD (~(SIG_UNBLOCKABLE | SIG_FAULTS))

uint64_t sig_held_set(void)
{
	return SIG_HELD;
}

/* What self's mask lets in, sent to it or claimed for the process, raised
 * on this kernel thread, whose mask holds them until the handler frame's
 * sigreturn. */
static void raise_at_sigreturn(struct ult *self)
{
	deliver_pending(self);
	for (uint64_t c = sig_claims_for(self); c != 0; c &= c - 1)
		vp_poke(NULL, __builtin_ctzll(c) + 1, self);
}

static void held_till_sigreturn(struct ult *self)
{
	self->sigframe_held = true;
	vp_set_sigmask(self->sigmask | SIG_HELD);
	raise_at_sigreturn(self);
}

struct ult *sig_frame_enter(struct sig_frame *f)
{
	struct vproc *v = (struct vproc *)vp_current();
	struct ult *self = v != NULL ? v->current : NULL;
	if (self == NULL)
		return NULL;
	f->in = self->in_sigframe;   /* nested: a tick inside a handler */
	f->held = self->sigframe_held;
	self->in_sigframe = true;
	self->sigframe_held = false;
	/* Signals sent meanwhile wait too: a poke landing in the rest of
	 * the handler (before or after a switch) would nest its frame.  (The
	 * trampoline holds them already when it does not run the handler.) */
	uint64_t k = vp_kmask(&v->vp);
	if ((k | SIG_HELD) != k)
		vp_set_sigmask(k | SIG_HELD);
	return self;
}

/* vp_signal_flush's keeper: the signals put off on this kernel thread
 * that the code running there blocks on its own, or VP_SIGNALS_LATER for
 * libppl's part of a handler, whose mask holds every application signal
 * that the thread's own does not (put_off: those the put-off added). */
static uint64_t flush_keeps(uint64_t in_force, uint64_t put_off)
{
	struct vproc *v = (struct vproc *)vp_current();
	struct ult *t = v != NULL ? v->current : NULL;
	if (t == NULL)
		return in_force;   /* the idle loop */
	uint64_t wants = sig_thread_blocks(t);
	if ((in_force & SIG_HELD) == SIG_HELD && ((wants | put_off) & SIG_HELD) != SIG_HELD)
		return VP_SIGNALS_LATER;
	return wants;
}

void sig_flush_keeper_set(void)
{
	vp_signal_set_keeper(flush_keeps);
}

void sig_note_sigreturn(void *uc)
{
	struct vp *vp = vp_current();
	if (vp != NULL) {
		/* Put off under a lock the frame interrupted, released since:
		 * they open with the frame's sigreturn. */
		vp_signal_flush_uc(vp, uc);
		uint64_t m;
		memcpy(&m, &((const ucontext_t *)uc)->uc_sigmask, sizeof m);
		vp_note_sigmask(vp, m);
	}
}

void sig_frame_leave(struct ult *self, const struct sig_frame *f, void *uc)
{
	/* sigreturn installs the interrupted code's mask, which lets the
	 * held signals in. */
	sig_note_sigreturn(uc);
	if (self == NULL)
		return;
	self->in_sigframe = f->in;
	self->sigframe_held = f->held;
}

/* While an application's handler runs, its mask is the thread's own, as
 * the kernel makes a kernel thread's: the signal (unless SA_NODEFER) and
 * sa_mask added to `base` (the thread's mask, or that of the sigsuspend it
 * interrupts).  Not only the kernel thread's: it holds when the handler is
 * switched out (it waits, yields, is preempted) and resumed, maybe on
 * another VP, pthread_sigmask reports it, and a new instance of the signal
 * waits for the handler's return instead of nesting in it.  (The Open
 * POSIX test pthread_setschedparam/5-1 nested two handlers that each post a
 * semaphore until the stack overflowed.)  Returns the mask to give back. */
uint64_t sig_handler_begin(struct ult *self, uint64_t base, uint64_t blocks)
{
	uint64_t was = self->sigmask;
	self->sigmask = (base | blocks) & ~SIG_UNBLOCKABLE;
	return was;
}

/* The handler returned: the thread's mask `was` again, and what it opens,
 * sent to the thread or claimed for the process meanwhile, raised on this
 * kernel thread: by the trampoline's sigreturn when `in_frame` (libppl's
 * part of a handler, whose sig_frame_enter holds the application's
 * signals), else now.  A handler left by siglongjmp does not come here:
 * the mask sigsetjmp saved is given by the jump (src/preload/jump.c); by
 * longjmp, the handler's stays, as on NPTL. */
void sig_handler_end(struct ult *self, uint64_t was, bool in_frame)
{
	self->sigmask = was;
	if (in_frame) {
		raise_at_sigreturn(self);   /* sig_frame_enter and sigreturn note the kernel's mask */
		return;
	}
	vp_set_sigmask(was);
	deliver_pending(self);
}

void sig_resumed_slow(struct ult *self, struct vproc *v)
{
	if (self->in_sigframe) {
		held_till_sigreturn(self);
		return;
	}
	/* A switch: the thread may move, so what was held on this VP while
	 * another thread ran libppl's code runs here, as the mask goes in. */
	uint8_t safe = sig_safe_enter(self);
	if (ppl_unlikely(vp_signals_held(&v->vp))) {
		preempt_release_held(v, sig_thread_blocks(self), NULL);
		v = (struct vproc *)vp_current();   /* a handler may have moved self */
	}
	if (self->sigmask != vp_kmask(&v->vp))
		vp_set_sigmask(self->sigmask);
	deliver_pending(self);
	if (atomic_load_explicit(&sig_claims, memory_order_seq_cst) & ~self->sigmask)
		sig_take_claims(self, false);
	sig_safe_leave(self, safe);
}

void sig_thread_init(struct ult *t, const struct ult *creator)
{
	/* A foreign creator's mask is its kernel thread's. */
	t->sigmask = creator->foreign ? vp_get_sigmask() & ~SIG_UNBLOCKABLE : creator->sigmask;
	atomic_store_explicit(&t->sigpending, 0, memory_order_relaxed);
	atomic_store_explicit(&t->sigwaiting, 0, memory_order_relaxed);
	atomic_store_explicit(&t->sig_done, false, memory_order_relaxed);
	t->in_sigframe = false;
	t->sigframe_held = false;
	sig_alt_init(t);   /* NPTL: a new thread has no alternate stack */
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

void sig_discard(int sig)
{
	uint64_t b = bit(sig);
	atomic_fetch_and_explicit(&ppl_rt.main_ult.sigpending, ~b, memory_order_acq_rel);
	for (struct ult *t = tcb_pool_first(); t != NULL; t = tcb_pool_next(t))
		atomic_fetch_and_explicit(&t->sigpending, ~b, memory_order_acq_rel);
	sig_claims_discard(sig);
}

void sig_vp_init(struct vproc *v)
{
	vp_note_sigmask(&v->vp, vp_get_sigmask());
}

/* ---- sending -------------------------------------------------------------------- */

/* t has an unblocked signal pending (set, seq_cst, before this call).  If t
 * is parked where a signal ends the wait (PARK_INTR), take it off its queue
 * under the queue's lock, as its timer would, and wake it with EINTR: it
 * raises the signal itself when it resumes (sig_resumed).  True also when
 * such a park was already ended by its waker or timer (it resumes anyway),
 * false when t is not in an interruptible park.  A park published after
 * our load of park_lock reads sigpending after publishing (park.c park),
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
static void sig_kick(struct ult *t, int sig)
{
	if (bit(sig) & t->sigmask)
		return;
	if (sig_wake(t))
		return;
	int state = atomic_load_explicit(&t->state, memory_order_acquire);
	if (state == ULT_BLOCKED) {
		if (!(bit(sig) & vp_get_sigmask()) &&
		    (atomic_fetch_and_explicit(&t->sigpending, ~bit(sig), memory_order_acq_rel) &
		     bit(sig)))
			vp_signal_self(sig);
		return;
	}
	/* It may have resumed since: then it is running and looks at its
	 * pending set only at its next resume or pthread_sigmask. */
	struct vproc *v = t->vp;
	if (state != ULT_RUNNING || v == NULL || v->current != t)
		return;
	if (sig_has_handler(sig))
		vp_poke(&v->vp, sig, t);
	else if (atomic_fetch_and_explicit(&t->sigpending, ~bit(sig), memory_order_acq_rel) &
		 bit(sig))
		vp_signal(&v->vp, sig);
}

void sig_tkill_info(siginfo_t *si, int sig)
{
	memset(si, 0, sizeof *si);
	si->si_signo = sig;
	si->si_code = SI_TKILL;
	si->si_pid = vp_process_id();
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
	if (t != self && (atomic_load_explicit(&t->sigpending, memory_order_acquire) & bit(sig)))
		sig_kick(t, sig);
	return mine;
}

void sig_poke_redirect(void *target, int sig)
{
	struct ult *t = target;
	if (atomic_load_explicit(&t->sigpending, memory_order_acquire) & bit(sig))
		sig_kick(t, sig);
	sig_claim_nudge(sig);   /* if the process has a claim of sig */
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
		if (vp_kthread_kill(t->ktid, sig) != 0)
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
		uint8_t safe = sig_safe_enter(self);   /* the handler runs before we return */
		int err = vp_signal_self(sig);
		sig_safe_leave(self, safe);
		return err;
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
	sig_kick(t, sig);
	return 0;
}

int ppl_pthread_kill(pthread_t th, int sig)
{
	int err = kill_ult((struct ult *)th, sig);
	preempt_point();   /* a thread woken from sigwait may outrank the caller */
	return err;
}

/* *si to thread t through the kernel's queue: to the kernel thread that
 * runs t, or that is t; a parked t gets it on the caller's kernel thread,
 * like pthread_kill.  0 or errno (ESRCH: t has exited). */
int sig_queue_ult(struct ult *t, siginfo_t *si)
{
	int state = atomic_load_explicit(&t->state, memory_order_acquire);
	if (state == ULT_FREE || state == ULT_EXITING || state == ULT_ZOMBIE)
		return ESRCH;
	int tid;
	if (t->foreign) {
		tid = t->ktid;
	} else if (state == ULT_RUNNING && t->vp && t->vp->current == t) {
		tid = vp_kthread_id(&t->vp->vp);
	} else {
		tid = vp_gettid();
	}
	/* Marked, so that the trampoline runs it there and does not take it
	 * for a signal of the process's (sigaction.c). */
	si->si_errno = SIG_DIRECT_MARK;
	struct vproc *me = (struct vproc *)vp_current();
	struct ult *self = me != NULL && me->current == t ? t : NULL;
	uint8_t safe = self != NULL ? sig_safe_enter(self) : 0;   /* to itself: runs at once */
	int r = vp_kthread_sigqueue(tid, si->si_signo, si);
	int err = r != 0 ? errno : 0;
	if (self != NULL)
		sig_safe_leave(self, safe);
	return err;
}

int ppl_pthread_sigqueue(pthread_t th, int sig, const union sigval value)
{
	if (sig < 0 || sig > 64 || (sig != 0 && (bit(sig) & (SIG_INTERNAL | SIG_RESERVED))))
		return EINVAL;
	siginfo_t info;
	memset(&info, 0, sizeof info);
	info.si_signo = sig;
	info.si_code = SI_QUEUE;
	info.si_pid = vp_process_id();
	info.si_uid = getuid();
	info.si_value = value;
	return sig_queue_ult((struct ult *)th, &info);
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
		/* What it unblocks runs before it returns, as on NPTL. */
		uint8_t safe = sig_safe_enter(self);
		self->sigmask = next;
		vp_kstate_changed();
		if (vp_kmask(&v->vp) != next)
			vp_set_sigmask(next);
		deliver_pending(self);
		sig_take_claims(self, true);
		sig_safe_leave(self, safe);
	}
	/* Last, as the kernel: set may be old, and a bad old is EFAULT
	 * with the new mask in force. */
	return old && put_set(old, cur) ? EFAULT : 0;
}

/* The program's process-directed signals wherever the VP backend keeps
 * them (the process backend's forwarder holds one every thread blocks:
 * vp_program_sigpending), the few that wait on the kernel thread, and the
 * user thread's own; never libppl's own signals. */
int ppl_sigpending(sigset_t *set)
{
	uint64_t pend = vp_program_sigpending() & ~(SIG_INTERNAL | SIG_RESERVED);
	struct vproc *v = (struct vproc *)vp_current();
	if (v != NULL && v->current != NULL)
		pend |= atomic_load_explicit(&v->current->sigpending, memory_order_acquire);
	/* The process's, taken off the kernel by a VP or the catcher. */
	pend |= atomic_load_explicit(&sig_claims, memory_order_acquire);
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
	uint64_t p = atomic_load_explicit(&self->sigpending, memory_order_seq_cst) & want;
	for (; p != 0; p &= p - 1) {
		uint64_t b = p & -p;
		if (!(atomic_fetch_and_explicit(&self->sigpending, ~b, memory_order_acq_rel) & b))
			continue;
		atomic_store_explicit(&self->sigwaiting, 0, memory_order_relaxed);
		int sig = __builtin_ctzll(b) + 1;
		if (info != NULL) {
			siginfo_t si;
			sig_tkill_info(&si, sig);
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
		/* The process's: claimed and waiting for a thread (sigroute.c). */
		uint64_t c = atomic_load_explicit(&sig_claims, memory_order_seq_cst) & want;
		for (r = 0; c != 0 && r == 0; c &= c - 1)
			if (sig_take(self, __builtin_ctzll(c) + 1, &si, true))
				r = __builtin_ctzll(c) + 1;
		if (r > 0)
			break;
		r = sys_sigtimedwait(set, &si, ts);
		if (r > 0 && si.si_errno == SIG_DIRECT_MARK)
			si.si_errno = 0;   /* sig_queue_ult's mark: not the application's */
		if (r > 0)
			vp_siginfo_own(&si);   /* the sender as the program knows it */
		void *target = r > 0 ? vp_poke_target(&si) : NULL;
		if (target == NULL)
			break;
		if (sig_take(self, r, &si, true))
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
			sig_kick(target, r);
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

/* The calls that run with a temporary mask (sigsuspend, ppoll, pselect,
 * epoll_pwait): the kernel's, on the VP's kernel thread, which then has the
 * call's mask.  A process-directed signal the call unblocks may already be
 * a claim (sigroute.c: the catcher or another VP took it off the kernel
 * while the thread still blocked it), which the kernel's wait would never
 * see: the thread publishes the signals it takes for the call's duration
 * (sigwaiting, as sigwait does), so that a claim made from then on
 * chooses it and pokes its kernel thread, where the call lets the poke in
 * and the trampoline runs the claim; then takes the claims made before,
 * and its own pending ones.  One the call blocks that the thread does not
 * stays away from its kernel thread until the call returns (the kernel
 * delivers the poke then): the call is not interrupted.  True: a signal
 * was taken and its handler run before the call, which must fail with
 * EINTR without being made. */
bool sig_mask_call_enter(const sigset_t *set, struct sig_mask_call *c)
{
	struct vproc *v = (struct vproc *)vp_current();
	c->self = v ? v->current : NULL;
	uint64_t m;
	if (c->self == NULL || set == NULL || get_set(&m, set) != 0) {
		c->self = NULL;   /* none, or the kernel's EFAULT */
		return false;
	}
	struct ult *self = c->self;
	m &= ~SIG_UNBLOCKABLE;
	uint64_t opened = self->sigmask & ~m;
	c->outer = atomic_exchange_explicit(&self->sigwaiting, opened, memory_order_seq_cst);
	/* pthread_kill's, left pending while blocked: to this kernel thread,
	 * where the call unblocks it (the trampoline runs its own SI_TKILL). */
	for (uint64_t p = atomic_load_explicit(&self->sigpending, memory_order_seq_cst) & ~m;
	     p != 0; p &= p - 1) {
		uint64_t b = p & -p;
		if (atomic_fetch_and_explicit(&self->sigpending, ~b, memory_order_acq_rel) & b)
			vp_signal_self(__builtin_ctzll(b) + 1);
	}
	bool took = false;
	for (uint64_t cl = atomic_load_explicit(&sig_claims, memory_order_seq_cst) & ~m;
	     cl != 0 && !took; cl &= cl - 1) {
		int sig = __builtin_ctzll(cl) + 1;
		siginfo_t si;
		if (sig_take(self, sig, &si, true)) {
			sig_run_taken(self, sig, &si, m);   /* with the call's mask, as in it */
			took = true;
		}
	}
	if (took)
		sig_mask_call_leave(c);
	return took;
}

void sig_mask_call_leave(struct sig_mask_call *c)
{
	if (c->self == NULL)
		return;
	int saved = errno;
	atomic_store_explicit(&c->self->sigwaiting, c->outer, memory_order_seq_cst);
	errno = saved;
}

int ppl_sigsuspend(const sigset_t *set)
{
	struct sig_mask_call c;
	if (sig_mask_call_enter(set, &c)) {
		errno = EINTR;
		return -1;
	}
	int r = sys_sigsuspend(set);
	sig_mask_call_leave(&c);
	return r;
}

int ppl_ppoll(struct pollfd *p, nfds_t n, const struct timespec *ts, const sigset_t *m)
{
	struct sig_mask_call c;
	if (sig_mask_call_enter(m, &c)) {
		errno = EINTR;
		return -1;
	}
	int r = sys_ppoll(p, n, ts, m);
	sig_mask_call_leave(&c);
	return r;
}

int ppl_pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *ts,
		const sigset_t *m)
{
	struct sig_mask_call c;
	if (sig_mask_call_enter(m, &c)) {
		errno = EINTR;
		return -1;
	}
	int res = sys_pselect(n, r, w, e, ts, m);
	sig_mask_call_leave(&c);
	return res;
}

int ppl_epoll_pwait(int fd, struct epoll_event *ev, int n, int ms, const sigset_t *m)
{
	struct sig_mask_call c;
	if (sig_mask_call_enter(m, &c)) {
		errno = EINTR;
		return -1;
	}
	int r = sys_epoll_pwait(fd, ev, n, ms, m);
	sig_mask_call_leave(&c);
	return r;
}

/* The raw rt_sigprocmask (src/preload/syscall.c), with the kernel's 8-byte
 * sets: the calling user thread's mask, not its VP's. */
int ppl_rt_sigprocmask(int how, const void *set, void *old, size_t size)
{
	sigset_t s;
	sigemptyset(&s);
	if (size != sizeof(uint64_t))
		return EINVAL;
	if (set != NULL && vp_copy_in(&s, set, sizeof(uint64_t)) != 0)
		return EFAULT;
	return ppl_pthread_sigmask(how, set != NULL ? &s : NULL, old);
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
