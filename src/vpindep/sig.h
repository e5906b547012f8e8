/* Signals to user threads (signal.c, sigaction.c, sigreserved.c) and
 * process-directed signals (sigroute.c). */
#ifndef PPL_SIG_H
#define PPL_SIG_H

#include "base.h"
#include "schedparam.h"
#include "ult.h"
#include "vproc.h"

/* ---- signals (signal.c) -------------------------------------------------------------- */

void sig_resumed_slow(struct ult *self, struct vproc *v);
/* signal.c: sig_resumed's looks, made when the generation `gen` of the
 * kernel state or self's VP changed, or something is pending. */
void sig_resumed_look(struct ult *self, struct vproc *v, unsigned long gen);
/* The trampoline got `sig` as a poke for `target` (vp_poke): true if the
 * thread running here has it pending and unblocked and now owns it (run
 * the handler); false otherwise, after seeing to it that target gets it. */
bool sig_poke_claim(void *target, int sig);
/* A poke for `target` (vp_poke) that no trampoline of the thread it was
 * sent to will take (handed back from a kernel thread that blocks it, or
 * taken by the catcher): a wake-up, never an instance of sig, so no
 * handler runs for it; see that target gets its pending sig and that a
 * thread that may take the process's claim of sig is woken. */
void sig_poke_redirect(void *target, int sig);
/* What pthread_kill from this process gives on NPTL (tgkill: SI_TKILL). */
void sig_tkill_info(siginfo_t *si, int sig);
/* libppl's cancellation signal, the kernel's last (sigreserved.c); the
 * tick's is the one below it (vp_tick_signal). */
#define PPL_SIGCANCEL __SIGRTMAX
/* One of those two: refused by sigaction, pthread_kill & co. */
bool sig_reserved(int sig);
/* sigaction.c: the kernel runs libppl's trampoline for sig (the
 * application installed a handler), so a poke reaches the handler. */
bool sig_has_handler(int sig);
/* A new thread inherits its creator's mask, with nothing pending. */
void sig_thread_init(struct ult *t, const struct ult *creator);

/* signal.c: *si to thread t through the kernel's queue (0 or errno), its
 * si_errno set to this mark (the trampoline clears it). */
#define SIG_DIRECT_MARK 0x70706c44   /* "ppl" D */
int sig_queue_ult(struct ult *t, siginfo_t *si);

/* The main thread's kernel thread becomes VP 0: its pending signals become the thread's. */
void sig_adopt_pending(struct ult *m);
/* On the VP's kernel thread: record the mask the kernel thread has. */
void sig_vp_init(struct vproc *v);

/* A new thread's mask is `set` instead of its creator's (attribute). */
void sig_thread_mask(struct ult *t, const sigset_t *set);
/* ---- process-directed signals (sigroute.c) ---- */
/* Claimed by the process, not yet taken by a thread (bit sig-1). */
extern _Atomic uint64_t sig_claims;
/* The trampoline got process-directed `sig` on a kernel thread where
 * `here` runs (NULL: none, or the catcher): true if the handler runs here
 * now, or if sig's default action (caught_default) is to be taken here
 * because some thread takes it, whichever (the caller takes it:
 * sig_default_action); otherwise sig is a claim of the process, to be
 * taken by another thread.  here_asked: the kernel thread had it
 * unblocked for here for a while (sigsuspend, ppoll ...) though here
 * blocks it. */
bool sig_route_here(int sig, const siginfo_t *si, struct ult *here, bool here_asked);
/* sigaction.c: the kernel's default action for sig (caught_default), on
 * this kernel thread whatever it blocks: ends or stops the process. */
void sig_default_action(int sig);
/* Take the claim of sig for self (its target, or anyone's), its siginfo
 * into *si; waiting: self waits for it in sigwait (blocks it). */
bool sig_take(struct ult *self, int sig, siginfo_t *si, bool waiting);
/* sig's action became "ignore": its claims are discarded (a claim made
 * later finds it neither handled nor caught, and is dropped too). */
void sig_claims_discard(int sig);
/* signal.c: ... and so is what is pending on every thread, as the kernel
 * discards a pending signal whose action becomes "ignore". */
void sig_discard(int sig);
/* Wake a thread that may take the claim of sig, if there is one (a poke
 * that woke it was lost). */
void sig_claim_nudge(int sig);
/* self, on its VP with its mask installed: run the handlers of the claims
 * it may take, each raised on this kernel thread with its siginfo. */
void sig_take_claims(struct ult *self, bool yield);
/* The claims t may take now (a park a signal ends does not begin then). */
uint64_t sig_claims_for(struct ult *t);
/* sigaction.c: run the application's action for sig, taken by self, the
 * calling user thread, with si; its handler's mask is built on `base`
 * (self's mask, or that of the sigsuspend it interrupts). */
void sig_run_taken(struct ult *self, int sig, siginfo_t *si, uint64_t base);
/* signal.c: a handler's mask made the thread's while it runs, and the
 * thread's own again after (in_frame: in the trampoline, before sigreturn). */
uint64_t sig_handler_begin(struct ult *self, uint64_t base, uint64_t blocks);
void sig_handler_end(struct ult *self, uint64_t was, bool in_frame);
/* kill or sigqueue of this process from a user thread, for a signal with
 * a handler: routed here and now, as the kernel would at once (the handler
 * runs in the caller before this returns if it is the one chosen).  False
 * if the caller must leave it to the kernel. */
bool sig_send_process(int sig, const siginfo_t *si);
void sig_catcher_start(void);
/* sigaction gave a signal a handler: the catcher waits for it too (made
 * by the monitor if there is none yet). */
void sig_catcher_want(void);
void sig_catcher_wake(void);
/* The catcher thread was started (it stays: retire.c keeps the helpers). */
bool sig_catcher_running(void);
void sig_claims_fork_child(void);
/* signal.c: around libppl's code in a signal handler that may switch the
 * thread out (the tick, the trampoline's owed preemption): a thread that
 * resumes there raises its signals only after the handler's sigreturn. */
struct sig_frame {
	bool in, held;   /* the outer frame's, if nested */
};
struct ult *sig_frame_enter(struct sig_frame *f);
/* The application's signals such a frame holds off (all but the faults and
 * those no mask blocks). */
uint64_t sig_held_set(void);
/* ... and notes the mask the frame's sigreturn gives back (which may be on
 * another VP's kernel thread than the frame began on) in the VP, as
 * sig_note_sigreturn does for a handler frame that has no such part. */
void sig_frame_leave(struct ult *self, const struct sig_frame *f, void *uc);
void sig_note_sigreturn(void *uc);
/* Tells vpdep which signals put off under a lock the code running now
 * blocks on its own (vp_signal_set_keeper). */
void sig_flush_keeper_set(void);

/* ---- handlers over libppl's own code (sigaction.c) ------------------------------
 * libppl's code keeps its VP in variables (`v = this_vp()` ... `v->current`),
 * with or without a lock.  An application's handler may switch its thread
 * out (it sleeps, yields, waits for a mutex) and the thread resume on
 * another VP, where that code would go on with the old VP in hand.  So a
 * handler that interrupts libppl's own text waits, as one inside a lock
 * does (vp_signal_hold: blocked on the kernel thread), until the thread is
 * at a point where it may move: back in the program's code (the next tick,
 * or the next handler's frame, lets it in: vp_signal_release), at a switch
 * (the next thread's mask installed there lets it in, sig_resumed), the
 * VP's idle loop, or a point marked by sig_safe_enter.  Not inside a
 * blocking call libppl announces (sys_enter: a handler there runs at once,
 * and the call goes on where it resumes, switch.c's handler_marks), nor
 * for a thread bound to its VP, which never moves. */

/* Around libppl's code that raises a signal of the caller's to itself, or
 * unblocks one, and may lose its VP to the handler (pthread_kill of self,
 * pthread_sigmask, sig_resumed): the handler runs there and then, as on
 * NPTL.  Only one the kernel delivers as a system call there returns (the
 * tgkill, the rt_sigprocmask): the code after each call looks its VP up
 * again, but a signal sent from elsewhere lands anywhere, between a VP's
 * lookup and its use too.  vp_set_sigmask recorded the mask it installed
 * in the VP it had left, whose kernel thread went on blocking what that
 * VP's next thread opened (tp_sighandler_mask: raise() returned before its
 * handler ran); such a signal is held, as in any other libppl code.
 * Returns what sig_safe_leave restores. */
static inline uint8_t sig_safe_enter(struct ult *self)
{
	uint8_t was = self->sig_safe;
	self->sig_safe = 1;
	atomic_signal_fence(memory_order_seq_cst);
	return was;
}
static inline void sig_safe_leave(struct ult *self, uint8_t was)
{
	atomic_signal_fence(memory_order_seq_cst);
	self->sig_safe = was;
}
/* The signals t blocks now: its mask, less what a call it is in opens. */
static inline uint64_t sig_thread_blocks(const struct ult *t)
{
	return t->sigmask & ~atomic_load_explicit(&t->sigwaiting, memory_order_relaxed);
}
/* signal.c: a call with a temporary mask (sigsuspend, ppoll, pselect,
 * epoll_pwait) publishes the signals it unblocks (ult.sigwaiting) while it
 * runs, so that a process-directed one reaches it. */
struct sig_mask_call {
	struct ult *self;   /* NULL: nothing published */
	uint64_t outer;     /* sigwaiting before */
};
bool sig_mask_call_enter(const sigset_t *set, struct sig_mask_call *c);
void sig_mask_call_leave(struct sig_mask_call *c);
/* sigaction.c: the signals the kernel runs the trampoline for. */
uint64_t sig_wrapped_set(void);
/* ... for a handler, or for a default action that ends or stops the
 * process (caught_default: routed as a handler's is, so that a signal every
 * user thread blocks stays pending on the process). */
uint64_t sig_caught_set(void);
bool caught_default(int sig);
/* The runtime started: the default actions that end or stop the process
 * go behind the trampoline, now and whenever the program sets one. */
void sig_catch_defaults(void);

/* sigaltstack.c: a new thread has no alternate stack; the main thread
 * keeps the one its kernel thread had (before vp_adopt); install self's
 * (or the VP's own) on v's kernel thread. */
void sig_alt_init(struct ult *t);
void sig_alt_adopt(struct ult *m);
void sig_alt_switch(struct ult *self, struct vproc *v);
/* self, which has an alternate stack, leaves v's kernel thread: the VP's
 * own goes back there, so that a signal landing on v while self runs
 * elsewhere (a claim's routing, a poke for the next thread) never writes
 * its frame on self's stack, where self may be taking one itself. */
void sig_alt_leave(struct ult *self, struct vproc *v);

/* affinity.c: on v's kernel thread, give it CPU set c (NULL: the process's). */
void sched_cpus_install(struct vproc *v, const struct cpus *c);
/* Give v's kernel thread the CPU set t must run on as t resumes there: a
 * compare, and one system call only when they differ for a thread with
 * a narrowed set.  A thread of the process's set (kcpus NULL) runs on a
 * VP narrowed to some of the process's CPUs as it is, until the VP's next
 * tick (strict): so a VP that alternates between a pinned thread and
 * others re-pins once a slice, not twice a switch. */
static inline void sched_cpus_sync(const struct ult *t, struct vproc *v, bool strict)
{
	const struct cpus *c = atomic_load_explicit(&t->kcpus, memory_order_relaxed);
	if (ppl_unlikely(c != atomic_load_explicit(&v->kcpus, memory_order_relaxed)) &&
	    (c != NULL || strict || !v->kinside))
		sched_cpus_install(v, c);
}

/* Called by a user thread each time it resumes: give its kernel thread its
 * scheduling class, CPU set, alternate signal stack and signal mask if
 * its VP has others, and raise what is pending for it. */
static inline __attribute__((always_inline)) void sig_resumed(struct ult *self)
{
	struct vproc *v = (struct vproc *)vp_current();
	/* The common case in one compare: the VP's kernel state was right for
	 * self when it last looked, on this VP, and nothing changed since
	 * (vp_kstate_gen); nothing pending for it. */
	unsigned long gen = vp_kstate_now();
	if (ppl_likely(self->ks_vp == v && self->ks_gen == gen && !self->in_sigframe &&
		       (atomic_load_explicit(&self->sigpending, memory_order_relaxed) |
			atomic_load_explicit(&sig_claims, memory_order_relaxed)) == 0))
		return;
	sig_resumed_look(self, v, gen);
}

/* PPL_PROCESS_SIGNALS=thread (the default): process-directed signals run
 * in a user thread that takes them (sigroute.c); vp: on the VP that took
 * them. */
extern bool ppl_env_sigroute PPL_HIDDEN;

#endif
