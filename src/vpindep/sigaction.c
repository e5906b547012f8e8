/* sigaction, signal, bsd_signal, sysv_signal, sigset and siginterrupt:
 * the application's signal handlers, installed behind a trampoline.
 *
 * A process-directed signal lands on any VP, possibly while it holds one of
 * libppl's spin locks (a run queue, a semaphore's wait queue).  A handler
 * that calls sem_post or pthread_kill there would take the same lock again
 * on the same kernel thread and spin forever.  So the kernel runs
 * trampoline(), which asks vpdep whether the VP holds a lock; if it does,
 * the signal is put off until the last lock is released (sigdefer.c), and
 * otherwise the application's handler runs at once, with the siginfo and
 * context the kernel gave.
 *
 * The application sees its own actions: oldact returns what it installed.
 * Faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS), SIG_DFL and
 * SIG_IGN go to the kernel as they are.  libppl's own signals (64 for
 * cancellation, 63 for preemption, above SIGRTMAX as programs see it:
 * sigreserved.c) are refused with EINVAL, as glibc refuses its internal
 * SIGCANCEL and SIGSETXID. */
#include <signal.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "preempt.h"
#include "runtime.h"
#include "sig.h"
#include "ult.h"
#include "vproc.h"

#define NSIGS 65   /* signals 1..64 */

static struct {
	spin_t lock;                         /* serialises changes */
	struct sigaction app[NSIGS];         /* as the application gave it, if wrapped */
	void *_Atomic handler[NSIGS];        /* app[sig]'s handler, for the trampoline */
	_Atomic int flags[NSIGS];            /* app[sig].sa_flags, for the trampoline */
	_Atomic uint64_t blocks[NSIGS];      /* what app[sig]'s handler blocks (handler_blocks) */
	_Atomic uint64_t wrapped;            /* bit sig-1: the kernel runs trampoline */
	_Atomic uint64_t dfl;                /* bit sig-1: the default action, behind
					      * the trampoline too (caught_default) */
	bool dfl_on;                         /* the runtime started: catch them */
	uint64_t interrupt;                  /* siginterrupt(sig, 1): no SA_RESTART */
} acts;

static inline uint64_t bit(int sig)
{
	return 1ULL << (sig - 1);
}

static bool is_wrapped(int sig)
{
	return atomic_load_explicit(&acts.wrapped, memory_order_acquire) & bit(sig);
}

/* The signals whose default action ends or stops the process, not faults:
 * SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM,
 * SIGTERM, SIGSTKFLT, SIGTSTP, SIGTTIN, SIGTTOU, SIGXCPU, SIGXFSZ,
 * SIGVTALRM, SIGPROF, SIGIO, SIGPWR and the program's real-time ones.
 * With that action the kernel would take one from whichever kernel thread
 * does not block it, an idle VP's (its mask is the last thread's it ran)
 * or a VP's between two threads, and end the process while every user
 * thread blocks it, where NPTL keeps it pending.  So the trampoline gets
 * them too, and routes them as it routes a handler's (sigroute.c): the
 * action is taken in a thread that does not block it, or the signal is a
 * claim of the process (sigpending shows it, sigwait takes it) until one
 * unblocks it.  The exact mask of each thread decides, read when the
 * signal arrives: no kernel mask has to be published to other kernel
 * threads first.  Not SIGABRT: abort() (libppl's own fatal errors too, in
 * whatever state the runtime is) must reach the kernel's action at once. */
static bool ends_or_stops(int sig)
{
	static const uint64_t std = (1ULL << (SIGHUP - 1)) | (1ULL << (SIGINT - 1)) |
				    (1ULL << (SIGQUIT - 1)) |
				    (1ULL << (SIGUSR1 - 1)) | (1ULL << (SIGUSR2 - 1)) |
				    (1ULL << (SIGPIPE - 1)) | (1ULL << (SIGALRM - 1)) |
				    (1ULL << (SIGTERM - 1)) | (1ULL << (SIGSTKFLT - 1)) |
				    (1ULL << (SIGTSTP - 1)) | (1ULL << (SIGTTIN - 1)) |
				    (1ULL << (SIGTTOU - 1)) | (1ULL << (SIGXCPU - 1)) |
				    (1ULL << (SIGXFSZ - 1)) | (1ULL << (SIGVTALRM - 1)) |
				    (1ULL << (SIGPROF - 1)) | (1ULL << (SIGIO - 1)) |
				    (1ULL << (SIGPWR - 1));
	if (sig >= 34 && sig < 64)
		return !sig_reserved(sig);
	return sig < 32 && (std & bit(sig));
}

/* Action a ignores sig: SIG_IGN, or SIG_DFL of a signal whose default
 * action is to ignore it (the kernel's sig_kernel_ignore). */
static bool ignores(int sig, const struct sigaction *a)
{
	if (a->sa_handler == SIG_IGN)
		return true;
	return a->sa_handler == SIG_DFL &&
	       (sig == SIGCHLD || sig == SIGCONT || sig == SIGURG || sig == SIGWINCH);
}

static bool stops(int sig)
{
	return sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

uint64_t sig_wrapped_set(void)
{
	return atomic_load_explicit(&acts.wrapped, memory_order_acquire);
}

bool sig_has_handler(int sig)
{
	return is_wrapped(sig);
}

static void trampoline(int sig, siginfo_t *si, void *uc);
bool caught_default(int sig);

/* What the thread blocks while a's handler for sig runs, beyond its mask:
 * sa_mask, and sig itself unless SA_NODEFER (sig_handler_begin). */
static uint64_t handler_blocks(int sig, const struct sigaction *a)
{
	uint64_t m;
	memcpy(&m, &a->sa_mask, sizeof m);
	return (a->sa_flags & SA_NODEFER) ? m : m | bit(sig);
}

/* tramp_decide's "no user thread ran the handler": never a thread's mask,
 * which leaves SIGKILL unblocked. */
#define NO_THREAD_MASK UINT64_MAX

/* What the kernel gets for the application's action a: the trampoline. */
static struct sigaction wrapped_action(const struct sigaction *a)
{
	struct sigaction k = *a;
	k.sa_sigaction = trampoline;
	k.sa_flags |= SA_SIGINFO;
	return k;
}

/* A signal sent to this kernel thread for the thread it runs: tgkill from
 * this process (pthread_kill, raise), sig_queue_ult's (pthread_sigqueue, a
 * SIGEV_THREAD_ID timer: marked), or the kernel's own for the call the
 * thread made (SIGPIPE, SIGXFSZ). */
static bool directed_here(int sig, siginfo_t *si)
{
	if (si->si_errno == SIG_DIRECT_MARK && (si->si_code == SI_QUEUE || si->si_code == SI_TIMER)) {
		si->si_errno = 0;   /* the application sees what the kernel would give */
		return true;
	}
	if (!vp_process_own(si->si_pid))
		return false;
	if (si->si_code == SI_TKILL)
		return true;
	return si->si_code == SI_USER && (sig == SIGPIPE || sig == SIGXFSZ);
}

/* The kernel's default action for sig, a thread that does not block it
 * having taken it: ends the process (with a core where it makes one) or
 * stops it, then the trampoline again for the next one. */
void sig_default_action(int sig)
{
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	spin_lock(&acts.lock);
	bool still = atomic_load_explicit(&acts.dfl, memory_order_acquire) & bit(sig);
	if (still)
		vp_sigaction(sig, &dfl, NULL);
	spin_unlock(&acts.lock);
	if (!still)
		return;
	/* Unblocked on this kernel thread (the trampoline runs with it
	 * blocked) and raised here: delivered as the call returns. */
	uint64_t was = vp_get_sigmask();
	vp_set_sigmask(was & ~bit(sig));
	vp_signal_self(sig);
	vp_set_sigmask(was);
	if (!stops(sig))
		return;
	/* Continued: catch the next one again, unless it changed meanwhile. */
	spin_lock(&acts.lock);
	if (atomic_load_explicit(&acts.dfl, memory_order_acquire) & bit(sig)) {
		struct sigaction k = wrapped_action(&acts.app[sig]);
		k.sa_flags = SA_SIGINFO | SA_RESTART;
		vp_sigaction(sig, &k, NULL);
	}
	spin_unlock(&acts.lock);
}

/* Words above the interrupted stack pointer searched for a return into
 * libppl: the C library's and the vDSO's functions libppl calls (memcpy,
 * __errno_location, clock_gettime) keep small frames. */
#define CALLER_WORDS 32

/* The signal interrupted libppl's code, or a function of the C library or
 * the vDSO that libppl called (a return address into libppl's text just
 * above the stack pointer).  Not a system call of the C library's, nor the
 * program's own syscall(2) that libppl makes for it (its section of its
 * own): a program's blocking call that libppl does not announce must see
 * its handler as on NPTL, and a stale return address left in its frame
 * must not hold it off. */
static bool interrupted_libppl(const void *uc)
{
	uintptr_t pc = vp_signal_pc(uc);
	if (preempt_own_pc(pc))
		return !vp_in_user_call(pc);   /* the program's own raw call, made by libppl */
	if (!preempt_foreign_pc(pc) || vp_signal_in_syscall(uc))
		return false;
	uintptr_t w[CALLER_WORDS];
	if (vp_copy_in(w, (const void *)vp_signal_sp(uc), sizeof w) != 0)
		return false;
	for (int i = 0; i < CALLER_WORDS; i++)
		if (preempt_own_pc(w[i]))
			return true;
	return false;
}

/* The thread's own signal, raised by the system call it just made from the
 * C library (abort's raise, which libppl's fatal errors call: glibc's
 * tst-setuid2 catches that SIGABRT and exits 0; a write's SIGPIPE): it
 * runs before the call returns, as on NPTL, even below libppl's code. */
static bool synchronous(int sig, siginfo_t *si, const void *uc)
{
	return directed_here(sig, si) && preempt_foreign_pc(vp_signal_pc(uc)) &&
	       vp_signal_after_syscall(uc);
}

/* A handler over libppl's own code waits (sig.h): true if sig was held.
 * Otherwise the thread is where it may move, and *release says whether
 * signals held earlier on this VP may run there too (at this frame's
 * sigreturn: release_at_sigreturn).  Only the program's handlers wait:
 * libppl's routing of a default action (caught while every thread blocks
 * it) never switches the thread out. */
static bool held_in_libppl(int sig, siginfo_t *si, void *uc, bool *release)
{
	struct vproc *v = (struct vproc *)vp_current();
	struct ult *t = v != NULL ? v->current : NULL;
	if (t == NULL || v->bound_to != NULL)
		return false;   /* a foreign thread, the idle loop, a thread that never moves */
	void *h = atomic_load_explicit(&acts.handler[sig], memory_order_acquire);
	if ((t->sig_safe && vp_signal_after_syscall(uc)) || h == (void *)SIG_DFL || h == (void *)SIG_IGN ||
	    atomic_load_explicit(&v->in_syscall, memory_order_relaxed) != SYS_OUT ||
	    synchronous(sig, si, uc) || !interrupted_libppl(uc)) {
		*release = vp_signals_held(&v->vp);
		return false;
	}
	vp_signal_hold(sig, si, uc);
	preempt_note_held(v);
	return true;
}

/* Send the signals held on this VP again from inside a trampoline frame
 * that blocks them (its entry did) and returns to a point where they may
 * run: the kernel delivers them at its sigreturn.  Not before the
 * application's handler, whose mask would let them nest in it. */
static void release_at_sigreturn(void *uc)
{
	struct vproc *v = (struct vproc *)vp_current();
	if (v != NULL && v->current != NULL && vp_signals_held(&v->vp))
		preempt_release_held(v, sig_thread_blocks(v->current), uc);
}

/* tramp_decide tells tramp_after to release_at_sigreturn (with the
 * thread's sig_safe, in the same byte). */
#define SAFE_RELEASE 0x80

/* Whether the handler runs here and now (the trampoline's decision); a
 * siginfo the handler gets instead of the kernel's is written over the
 * kernel's, in the signal frame.  Not inlined, nor is what follows the
 * handler: the trampoline's own frame, under the handler's on the
 * thread's stack, stays a few words (a handler on a PTHREAD_STACK_MIN
 * stack has the room it has on NPTL, where the kernel calls it directly;
 * this decision's frame and its callees' are gone by then). */
__attribute__((noinline)) static bool tramp_decide(int sig, siginfo_t *si, void *uc, int flags,
						   uint64_t kmask, uint64_t *was, uint8_t *safe,
						   bool *nested)
{
	bool release = false;
	if (vp_signal_defer(sig, si, uc) || held_in_libppl(sig, si, uc, &release)) {
		/* The kernel reset the action on this delivery: the one it
		 * will deliver later must find the trampoline again. */
		if (flags & SA_RESETHAND) {
			struct sigaction k = wrapped_action(&acts.app[sig]);
			vp_sigaction(sig, &k, NULL);
		}
		sig_note_sigreturn(uc);
		return false;
	}
	vp_siginfo_own(si);   /* a VP process's pid is the program's */
	siginfo_t tkill;
	struct vproc *here_vp = (struct vproc *)vp_current();
	struct ult *here = here_vp ? here_vp->current : NULL;
	void *target = vp_poke_target(si);
	bool run;
	if (target != NULL) {
		/* pthread_kill's nudge (signal.c): the handler runs only for
		 * the thread it was for, if that thread runs here; or a wake-up
		 * for a claim of the process (sigroute.c) this thread may take. */
		run = sig_poke_claim(target, sig);
		if (run)
			sig_tkill_info(&tkill, sig);   /* the poker is this process */
		else if (here != NULL)   /* in a call whose mask lets it in (sigsuspend, ppoll):
				     * as if unblocked (its uc_sigmask is the thread's) */
			run = sig_take(here, sig, &tkill,
				       atomic_load_explicit(&here->sigwaiting, memory_order_relaxed) &
					       bit(sig));
		if (run)
			*si = tkill;
	} else if (directed_here(sig, si)) {
		run = true;   /* pthread_kill, raise: its own */
	} else if (here_vp == NULL) {
		/* A kernel thread that is no VP: the program's own (foreign),
		 * or one of libppl's helpers before it has blocked every signal
		 * (it starts with its creator's mask).  A default action runs
		 * there only if the user threads do not exist yet or any more:
		 * else it goes to a user thread that takes it, or is pending.
		 * A vfork child is a process of its own: it runs there. */
		run = vp_in_vfork_child() || !(caught_default(sig) && ppl_env_sigroute &&
			atomic_load_explicit(&ppl_rt.started, memory_order_acquire) == 1) ||
		      sig_route_here(sig, si, NULL, false);
	} else {
		/* Process-directed: in the thread that should run it. */
		bool asked = here != NULL && (here->sigmask & bit(sig)) &&
			     (((ucontext_t *)uc)->uc_sigmask.__val[0] & bit(sig));
		run = sig_route_here(sig, si, here, asked);
	}
	if (!run) {
		if (flags & SA_RESETHAND) {
			struct sigaction k = wrapped_action(&acts.app[sig]);
			vp_sigaction(sig, &k, NULL);
		}
		struct sig_frame f;
		struct ult *self = sig_frame_enter(&f);
		if (release)
			release_at_sigreturn(uc);
		preempt_handler_leave(uc);   /* it may have woken its target */
		sig_frame_leave(self, &f, uc);
		return false;
	}
	void *h = atomic_load_explicit(&acts.handler[sig], memory_order_acquire);
	if (flags & SA_RESETHAND)   /* the kernel has SIG_DFL now */
		atomic_fetch_and_explicit(&acts.wrapped, ~bit(sig), memory_order_acq_rel);
	if (h == (void *)SIG_DFL && (atomic_load_explicit(&acts.dfl, memory_order_acquire) & bit(sig)))
		sig_default_action(sig);   /* taken by a thread that does not block it */
	if (h == (void *)SIG_DFL || h == (void *)SIG_IGN) {
		if (release)
			release_at_sigreturn(uc);
		sig_note_sigreturn(uc);
		return false;   /* changed while the signal was on its way */
	}
	/* The kernel thread runs the handler with kmask (the trampoline
	 * installs it, which records it in the VP: a thread switched in while
	 * the handler is away then installs its own mask instead).  And the
	 * thread: it keeps it wherever it resumes.  Inside sigsuspend, ppoll
	 * and the like the kernel built it on the call's mask (the frame's
	 * uc_sigmask is the one before the call), so a signal the call opens
	 * may still nest, as on NPTL. */
	if (here != NULL) {
		uint64_t base = here->sigmask;
		if (atomic_load_explicit(&here->sigwaiting, memory_order_relaxed) != 0)
			base = kmask;
		*was = sig_handler_begin(here, base,
					 atomic_load_explicit(&acts.blocks[sig], memory_order_acquire));
		/* The handler's own calls into libppl are no safe point. */
		*safe = here->sig_safe | (release ? SAFE_RELEASE : 0);
		here->sig_safe = 0;
		*nested = here->sig_nest++ != 0;
	}
	preempt_handler_enter(uc);
	return true;
}

__attribute__((noinline)) static void tramp_after(void *uc, uint64_t was, uint8_t safe)
{
	struct sig_frame f;
	struct ult *self = sig_frame_enter(&f);
	if (self != NULL && was != NO_THREAD_MASK) {
		if (self->sig_nest != 0)
			self->sig_nest--;
		sig_handler_end(self, was, true);
		self->sig_safe = safe & ~SAFE_RELEASE;
		if (safe & SAFE_RELEASE)
			release_at_sigreturn(uc);
	}
	preempt_handler_leave(uc);   /* an owed preemption: may switch out */
	sig_frame_leave(self, &f, uc);
}

/* The application's other signals wait while libppl decides where this
 * one runs: one landing in the decision would stack its kernel frame
 * (about 3 KiB with this CPU's xsave area) on this one's, under libppl's
 * frames, before any handler ran, and two such nested in one thread on a
 * PTHREAD_STACK_MIN stack overflowed it (the Open POSIX test
 * pthread_detach/4-3, signals sent to the process in a loop, on the
 * process backend, whose getpid is a system call in that window).  The
 * handler then runs with the mask the kernel gave this frame.
 *
 * The tick waits too, and all through a handler nested in another: its
 * frame is one more than NPTL would stack, and on such a stack (glibc's
 * TLS block takes 4.5 KiB of the 16) the SIGUSR2 handler that libppl
 * released inside the SIGUSR1 handler's sem_post, and a tick on top of
 * both, overflowed it (the same test, 8 runs of 12 on the process
 * backend).  A handler that interrupted plain code keeps the tick: it may
 * be preempted there, as the kernel would preempt it. */
static void trampoline(int sig, siginfo_t *si, void *uc)
{
	uint64_t tick = bit(vp_tick_signal());
	uint64_t kmask = vp_block_sigmask(sig_held_set() | tick);
	int flags = atomic_load_explicit(&acts.flags[sig], memory_order_acquire);
	uint64_t was = NO_THREAD_MASK;   /* the thread's mask, back after the handler */
	uint8_t safe = 0;                /* ... and its sig_safe */
	bool nested = false;
	if (!tramp_decide(sig, si, uc, flags, kmask, &was, &safe, &nested))
		return;   /* it noted the mask sigreturn gives back */
	vp_set_sigmask(nested ? kmask | tick : kmask);
	void *h = atomic_load_explicit(&acts.handler[sig], memory_order_acquire);
	if (flags & SA_SIGINFO)
		((void (*)(int, siginfo_t *, void *))h)(sig, si, uc);
	else
		((void (*)(int))h)(sig);
	tramp_after(uc, was, safe);
}

/* The handler, and a ucontext for one that takes three arguments, whose
 * uc_sigmask is the mask its return gives back (`was`).  Not inlined: the
 * ucontext (about 1 KiB) is off the stack when sig_handler_end unblocks
 * what waited, which the kernel then delivers at the caller's depth. */
__attribute__((noinline)) static void run_taken_handler(int sig, siginfo_t *si,
							const struct sigaction *a, uint64_t was)
{
	ucontext_t uc;
	getcontext(&uc);
	memcpy(&uc.uc_sigmask, &was, sizeof was);
	if (a->sa_flags & SA_SIGINFO)
		a->sa_sigaction(sig, si, &uc);
	else
		a->sa_handler(sig);
}

void sig_run_taken(struct ult *self, int sig, siginfo_t *si, uint64_t base)
{
	spin_lock(&acts.lock);
	bool wrapped = is_wrapped(sig);
	struct sigaction a = acts.app[sig];
	if (wrapped && (a.sa_flags & SA_RESETHAND)) {
		/* One delivery, as the kernel's reset on delivery. */
		struct sigaction dfl;
		memset(&dfl, 0, sizeof dfl);
		dfl.sa_handler = SIG_DFL;
		if (vp_sigaction(sig, &dfl, NULL) == 0)
			atomic_fetch_and_explicit(&acts.wrapped, ~bit(sig), memory_order_release);
	}
	spin_unlock(&acts.lock);
	if (!wrapped) {
		/* Ignored or the default action since it was claimed: the
		 * kernel's, here. */
		vp_signal_self(sig);
		return;
	}
	/* As the kernel runs a handler: sa_mask and the signal itself blocked
	 * while it runs, the thread's mask again after (maybe on another VP
	 * by then). */
	uint64_t was = sig_handler_begin(self, base, handler_blocks(sig, &a));
	/* On the kernel thread too before anything else enters the kernel
	 * (getcontext does): a signal the handler's mask blocks would land
	 * there and stack its frame under the handler's.  Nested in another
	 * handler: the tick waits, as in the trampoline's. */
	vp_set_sigmask(self->sigmask | (self->sig_nest++ != 0 ? bit(vp_tick_signal()) : 0));
	uint8_t safe = self->sig_safe;
	self->sig_safe = 0;
	run_taken_handler(sig, si, &a, was);
	if (self->sig_nest != 0)
		self->sig_nest--;
	self->sig_safe = safe;
	sig_handler_end(self, was, false);
}

static bool fault(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL ||
	       sig == SIGTRAP || sig == SIGSYS;
}

/* In a vfork child (vfork.c): the actions are the child's own in the
 * kernel, and the table above is its parent's.  The child inherited the
 * parent's view, so a signal whose kernel action is still the trampoline
 * reports the application's action; any change goes to the kernel alone. */
static int vfork_child_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction k;
	if (vp_sigaction(sig, NULL, &k) != 0)
		return -1;
	if (k.sa_sigaction == trampoline) {
		spin_lock(&acts.lock);
		k = acts.app[sig];
		spin_unlock(&acts.lock);
	}
	if (act != NULL && vp_sigaction(sig, act, NULL) != 0)
		return -1;
	if (old != NULL)
		*old = k;
	return 0;
}

bool caught_default(int sig)
{
	return atomic_load_explicit(&acts.dfl, memory_order_acquire) & bit(sig);
}

uint64_t sig_caught_set(void)
{
	return atomic_load_explicit(&acts.wrapped, memory_order_acquire) |
	       atomic_load_explicit(&acts.dfl, memory_order_acquire);
}

/* The application's default action a for sig (ends_or_stops) behind the
 * trampoline; acts.lock held.  0 or -1 (errno). */
static int catch_default(int sig, const struct sigaction *a)
{
	acts.app[sig] = *a;
	atomic_store_explicit(&acts.handler[sig], (void *)SIG_DFL, memory_order_release);
	atomic_store_explicit(&acts.flags[sig], 0, memory_order_release);
	/* Before the kernel has it: a signal may arrive at once. */
	atomic_fetch_or_explicit(&acts.dfl, bit(sig), memory_order_release);
	atomic_fetch_and_explicit(&acts.wrapped, ~bit(sig), memory_order_release);
	struct sigaction k;
	memset(&k, 0, sizeof k);
	k.sa_sigaction = trampoline;
	k.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&k.sa_mask);
	int rc = vp_sigaction(sig, &k, NULL);
	if (rc != 0)
		atomic_fetch_and_explicit(&acts.dfl, ~bit(sig), memory_order_release);
	return rc;
}

void sig_catch_defaults(void)
{
	spin_lock(&acts.lock);
	if (acts.dfl_on) {
		spin_unlock(&acts.lock);
		return;
	}
	acts.dfl_on = true;
	for (int sig = 1; sig < NSIGS; sig++) {
		struct sigaction cur;
		if (!ends_or_stops(sig) || is_wrapped(sig) || caught_default(sig) ||
		    vp_sigaction(sig, NULL, &cur) != 0 || cur.sa_handler != SIG_DFL)
			continue;   /* a handler, or ignored (inherited through exec) */
		catch_default(sig, &cur);
	}
	spin_unlock(&acts.lock);
	sig_catcher_wake();   /* it waits for them too */
}

int ppl_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	/* glibc refuses its own two even to a query. */
	if (sig < 1 || sig >= NSIGS || sig_reserved(sig)) {
		errno = EINVAL;
		return -1;
	}
	if (ppl_unlikely(vp_in_vfork_child()))
		return vfork_child_sigaction(sig, act, old);
	struct sigaction a;
	if (act != NULL)
		a = *act;   /* act and old may be the same object */
	spin_lock(&acts.lock);
	struct sigaction prev;
	int rc = 0;
	bool grew = false;
	if (is_wrapped(sig) || caught_default(sig))
		prev = acts.app[sig];
	else
		rc = vp_sigaction(sig, NULL, &prev);
	if (rc == 0 && act != NULL) {
		bool wrap = a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN && !fault(sig);
		if (a.sa_handler == SIG_DFL && acts.dfl_on && ends_or_stops(sig)) {
			rc = catch_default(sig, &a);
			grew = rc == 0;
		} else if (!wrap) {
			rc = vp_sigaction(sig, &a, NULL);
			if (rc == 0) {
				atomic_fetch_and_explicit(&acts.wrapped, ~bit(sig), memory_order_release);
				atomic_fetch_and_explicit(&acts.dfl, ~bit(sig), memory_order_release);
			}
		} else {
			struct sigaction k = wrapped_action(&a);
			/* Set the trampoline's view first: a signal may arrive
			 * the moment the kernel has the new action. */
			acts.app[sig] = a;
			atomic_store_explicit(&acts.handler[sig],
					      (a.sa_flags & SA_SIGINFO) ? (void *)a.sa_sigaction
									: (void *)a.sa_handler,
					      memory_order_release);
			atomic_store_explicit(&acts.flags[sig], a.sa_flags, memory_order_release);
			atomic_store_explicit(&acts.blocks[sig], handler_blocks(sig, &a),
					      memory_order_release);
			rc = vp_sigaction(sig, &k, NULL);
			if (rc == 0)
				atomic_fetch_and_explicit(&acts.dfl, ~bit(sig), memory_order_release);
			if (rc == 0 &&
			    !(atomic_fetch_or_explicit(&acts.wrapped, bit(sig), memory_order_release) &
			      bit(sig)))
				grew = true;
		}
	}
	spin_unlock(&acts.lock);
	/* As the kernel: a pending signal whose action becomes "ignore" is
	 * discarded, blocked or not; libppl keeps some off the kernel. */
	if (rc == 0 && act != NULL && ignores(sig, &a))
		sig_discard(sig);
	if (grew)
		sig_catcher_want();   /* it waits for this one too from now on */
	if (rc == 0 && old != NULL)
		*old = prev;
	return rc;
}

/* ---- the older interfaces, as glibc defines them on top of sigaction ---------------- */

static __sighandler_t set_handler(int sig, __sighandler_t h, int flags, bool mask_self)
{
	struct sigaction a, old;
	memset(&a, 0, sizeof a);
	a.sa_handler = h;
	a.sa_flags = flags;
	sigemptyset(&a.sa_mask);
	if (mask_self && sig >= 1 && sig < NSIGS)
		sigaddset(&a.sa_mask, sig);
	if (h == SIG_ERR) {
		errno = EINVAL;
		return SIG_ERR;
	}
	if (ppl_sigaction(sig, &a, &old) != 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* BSD semantics: the handler stays, the signal is blocked while it runs,
 * and interrupted calls restart unless siginterrupt(sig, 1) said otherwise. */
__sighandler_t ppl_signal(int sig, __sighandler_t h)
{
	bool intr = sig >= 1 && sig < NSIGS && (acts.interrupt & bit(sig));
	return set_handler(sig, h, intr ? 0 : SA_RESTART, true);
}

__sighandler_t ppl_bsd_signal(int sig, __sighandler_t h)
{
	return ppl_signal(sig, h);
}

/* System V semantics: one delivery, not blocked while it runs, no restart. */
__sighandler_t ppl_sysv_signal(int sig, __sighandler_t h)
{
	return set_handler(sig, h, SA_RESETHAND | SA_NODEFER, false);
}

__sighandler_t ppl___sysv_signal(int sig, __sighandler_t h)
{
	return ppl_sysv_signal(sig, h);
}

int ppl_siginterrupt(int sig, int interrupt)
{
	struct sigaction a;
	if (ppl_sigaction(sig, NULL, &a) != 0)
		return -1;
	spin_lock(&acts.lock);
	if (interrupt)
		acts.interrupt |= bit(sig);
	else
		acts.interrupt &= ~bit(sig);
	spin_unlock(&acts.lock);
	if (interrupt)
		a.sa_flags &= ~SA_RESTART;
	else
		a.sa_flags |= SA_RESTART;
	return ppl_sigaction(sig, &a, NULL);
}

/* SVID: SIG_HOLD blocks the signal; any other disposition is installed and
 * unblocks it.  Returns SIG_HOLD if the signal was blocked before. */
__sighandler_t ppl_sigset(int sig, __sighandler_t disp)
{
	if (sig < 1 || sig >= NSIGS || disp == SIG_ERR) {
		errno = EINVAL;
		return SIG_ERR;
	}
	sigset_t one, was;
	sigemptyset(&one);
	sigaddset(&one, sig);
	struct sigaction a, old;
	if (disp == SIG_HOLD) {
		if (ppl_sigaction(sig, NULL, &old) != 0 ||
		    ppl_pthread_sigmask(SIG_BLOCK, &one, &was) != 0)
			return SIG_ERR;
	} else {
		memset(&a, 0, sizeof a);
		a.sa_handler = disp;
		sigemptyset(&a.sa_mask);
		if (ppl_sigaction(sig, &a, &old) != 0 ||
		    ppl_pthread_sigmask(SIG_UNBLOCK, &one, &was) != 0)
			return SIG_ERR;
	}
	return sigismember(&was, sig) ? SIG_HOLD : old.sa_handler;
}

void ppl_sig_jump(void)
{
	/* The jump may leave handlers or not (one within a handler): as if it
	 * left them all, so that the thread's next handler keeps the tick,
	 * which only a nested one must not. */
	struct vproc *v = (struct vproc *)vp_current();
	struct ult *self = v != NULL ? v->current : NULL;
	if (self != NULL)
		self->sig_nest = 0;
}
