/* Process-directed signals (kill, alarm, setitimer, a shell's kill) and
 * the user thread that runs their handler.
 *
 * The kernel gives such a signal to any kernel thread that does not block
 * it: a VP, whatever user thread it runs (or none: its idle loop), or the
 * catcher, a helper kernel thread that waits for every signal with a
 * handler in sigtimedwait, so that a signal every VP blocks is still taken
 * off the kernel at once.  On NPTL it would run in a thread that does not
 * block it, the main thread first, and interrupt that thread's wait.  So:
 *
 *  - The trampoline (sigaction.c) asks sig_route_here: the handler runs on
 *    the spot if the thread running there is the one chosen (main if it
 *    takes it, else the running thread if it does).  Otherwise, and always
 *    on the catcher, the signal becomes a claim of the process: a bit in
 *    `claims`, its siginfo, and the thread chosen to take it (`target`).
 *  - The invariant: a claim's bit is cleared only by the user thread that
 *    then runs its handler (take), with its own identity, TLS and stack,
 *    or by sigwait in a thread waiting for it.  Nothing else drops it: a
 *    target that exits, blocks the signal or parks where a signal does not
 *    end the wait simply does not take it, and the claim stays.
 *  - The target is woken to take it: a park a signal ends (PARK_INTR:
 *    semaphores, sleeps, cond, mutex, join ...) with EINTR, a thread running
 *    on a VP by a poke (which also interrupts a system call, EINTR), a
 *    ready thread when it resumes.  Threads take claims when they resume
 *    (sig_resumed), when a park a signal ends begins, when pthread_sigmask
 *    unblocks them and in sigwait.
 *  - Only the target takes a claim until the catcher, which looks at the
 *    claims every CLAIM_NS while there are any, sees the same claim twice:
 *    then any thread that does not block it may take it, and the catcher
 *    wakes one.  So a claim is lost by nobody and waits at most about two
 *    periods for a thread that can take it, if there is one; if there is
 *    none it is pending on the process (sigpending shows it) until a thread
 *    unblocks it or waits for it.
 *
 * A standard signal claimed again before it is taken merges with the
 * claim, as the kernel merges a pending one.  A real-time one is queued:
 * each instance is a claim of its own, with its siginfo (si_value), taken
 * once, oldest first, as the kernel queues them. */
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "monitor.h"
#include "runtime.h"
#include "scheduler.h"
#include "sig.h"
#include "tcbpool.h"
#include "thread.h"
#include "ult.h"
#include "vproc.h"

#define CLAIM_NS 5000000   /* the catcher's look at unclaimed claims: 5 ms */
#define CATCHER_WAKE PPL_SIGCANCEL   /* only ever sent to the catcher by libppl */

static inline uint64_t bit(int sig)
{
	return 1ULL << (sig - 1);
}

bool ppl_env_sigroute PPL_HIDDEN = true;
_Atomic uint64_t sig_claims;                  /* signals claimed, not yet taken */

/* One claimed instance of a signal, as the kernel gave it. */
struct inst {
	siginfo_t si;
	struct inst *next;
};

#define INST_CHUNK 65536   /* bytes of instances mapped at a time */

static struct {
	spin_t lock;                          /* the instance queues and spares */
	struct inst *head[65], *tail[65];     /* claimed instances, oldest first;
					       * bit sig-1 of sig_claims: head != NULL */
	struct inst *spare;                   /* unused instances */
	struct ult *_Atomic target[65];       /* who takes it; NULL: anyone */
	_Atomic unsigned seq[65];             /* claims made, for the catcher's look */
	unsigned seen[65];                    /* the catcher's last look */
	_Atomic int catcher_tid;              /* 0: none yet */
	_Atomic bool catcher_started;
} rt;

/* The trampoline runs for sig (a handler, or a caught default action):
 * libppl routes it to a thread. */
static bool routed(int sig)
{
	return sig_caught_set() & bit(sig);
}

/* A spare instance, with rt.lock held; NULL if no memory can be had.  The
 * lock is dropped around the mapping (a system call, rare). */
static struct inst *inst_get(void)
{
	while (rt.spare == NULL) {
		spin_unlock(&rt.lock);
		struct inst *chunk = vp_mem_map(INST_CHUNK);
		spin_lock(&rt.lock);
		if (chunk == NULL)
			return NULL;
		for (size_t i = 0; i < INST_CHUNK / sizeof *chunk; i++) {
			chunk[i].next = rt.spare;
			rt.spare = &chunk[i];
		}
	}
	struct inst *i = rt.spare;
	rt.spare = i->next;
	return i;
}

/* t may take sig now (or run it where it runs): it exists, runs or may
 * run, and does not block it (or waits for it in sigwait). */
static bool takes(struct ult *t, uint64_t b)
{
	if (t->foreign || t->fork_gen != ppl_rt.fork_gen ||
	    atomic_load_explicit(&t->sig_done, memory_order_seq_cst))
		return false;
	int st = atomic_load_explicit(&t->state, memory_order_acquire);
	if (st == ULT_RUNNING) {
		if (t->vp == NULL)   /* pthread_create is still filling it in */
			return false;
	} else if (st != ULT_READY && st != ULT_BLOCKED) {
		return false;
	}
	return !(t->sigmask & b) ||
	       (atomic_load_explicit(&t->sigwaiting, memory_order_relaxed) & b);
}

/* A parked thread that a signal does not wake: not the one to choose
 * while another can take it at once.  A hint, read without its lock. */
static bool stuck(struct ult *t)
{
	return atomic_load_explicit(&t->state, memory_order_relaxed) == ULT_BLOCKED &&
	       !(atomic_load_explicit(&t->park_lock, memory_order_relaxed) != NULL &&
		 (t->park_flags & PARK_INTR));
}

/* Wake t to take its claim of sig: a park a signal ends, with EINTR; a
 * thread running on a VP, by a poke to that VP (it interrupts a system
 * call, and the trampoline lets the thread take the claim); a ready
 * thread takes it when it resumes.  t sees the claim itself if it parks
 * after this look (park reads the claims after publishing the park). */
static void nudge(struct ult *t, int sig)
{
	if (sched_interrupt(t, PARK_INTR, EINTR))
		return;
	struct vproc *v = t->vp;
	if (atomic_load_explicit(&t->state, memory_order_acquire) == ULT_RUNNING && v != NULL &&
	    v->current == t)
		vp_poke(&v->vp, sig, t);
}

/* The thread to run sig: main if it may take it, else `here` (the thread
 * running where it landed), else one that may take it, woken first. */
static struct ult *choose(uint64_t b, struct ult *here)
{
	struct ult *m = &ppl_rt.main_ult;
	if (m->is_main && takes(m, b))
		return m;   /* as the kernel: the leader if it does not block it */
	if (here != NULL && takes(here, b))
		return here;
	struct ult *fallback = NULL;
	for (struct ult *t = tcb_pool_first(); t != NULL; t = tcb_pool_next(t)) {
		if (!takes(t, b))
			continue;
		if (!stuck(t))
			return t;
		if (fallback == NULL)
			fallback = t;
	}
	return fallback;
}

/* Make sig a claim of the process for `to` (NULL: anyone) and wake it. */
static void claim(int sig, const siginfo_t *si, struct ult *to)
{
	uint64_t b = bit(sig);
	spin_lock(&rt.lock);
	if (rt.head[sig] != NULL && sig < 32) {
		spin_unlock(&rt.lock);
		return;   /* a standard signal merges with the claim there is */
	}
	struct inst *i = inst_get();
	if (i == NULL) {
		spin_unlock(&rt.lock);
		return;   /* no memory: lost, as the kernel's queue over its limit */
	}
	/* Claimed meanwhile (inst_get may drop the lock): merges.  Or
	 * ignored since it left the kernel: discarded, as sig_discard
	 * discards the claims there were (the action changes before it
	 * takes this lock). */
	if ((rt.head[sig] != NULL && sig < 32) || !routed(sig)) {
		i->next = rt.spare;
		rt.spare = i;
		spin_unlock(&rt.lock);
		return;
	}
	i->si = *si;
	i->next = NULL;
	if (rt.tail[sig] != NULL)
		rt.tail[sig]->next = i;
	else
		rt.head[sig] = i;
	rt.tail[sig] = i;
	atomic_store_explicit(&rt.target[sig], to, memory_order_relaxed);
	atomic_fetch_add_explicit(&rt.seq[sig], 1, memory_order_relaxed);
	bool first = !(atomic_fetch_or_explicit(&sig_claims, b, memory_order_seq_cst) & b);
	spin_unlock(&rt.lock);
	int tid = atomic_load_explicit(&rt.catcher_tid, memory_order_acquire);
	if (first && tid != 0 && tid != vp_gettid())
		vp_kthread_kill(tid, CATCHER_WAKE);   /* time the claim */
	/* The target may have stopped taking signals as it was chosen (it
	 * exits: ult_finish sets sig_done, then looks at the claims; the claim
	 * is published before this look, so one of the two sees the other). */
	if (to != NULL && !takes(to, b)) {
		to = choose(b, NULL);
		atomic_store_explicit(&rt.target[sig], to, memory_order_relaxed);
	}
	if (to != NULL)
		nudge(to, sig);
}

/* The claim of sig is t's to take: it is its target, or the target cannot
 * take it any more (gone, blocks it), or there is none (a target parked
 * where a signal does not wake it keeps it until the catcher's look). */
static bool mine(struct ult *t, int sig)
{
	struct ult *to = atomic_load_explicit(&rt.target[sig], memory_order_relaxed);
	return to == NULL || to == t || !takes(to, bit(sig));
}

void sig_claim_nudge(int sig)
{
	uint64_t b = bit(sig);
	if (!(atomic_load_explicit(&sig_claims, memory_order_seq_cst) & b))
		return;
	struct ult *to = atomic_load_explicit(&rt.target[sig], memory_order_relaxed);
	if (to == NULL || !takes(to, b))
		to = choose(b, NULL);
	if (to != NULL)
		nudge(to, sig);
}

/* A default action ends or stops the whole process, and the kernel takes
 * it at delivery whichever thread it picked, running or not.  So once the
 * thread chosen does not block sig (and does not only wait for it in
 * sigwait, which takes it instead), the action is taken where the signal
 * landed: that thread, woken, may not run for long or ever while others
 * hold every VP (no time slice), or be parked where a signal does not end
 * the wait. */
static bool default_taken(int sig, struct ult *to)
{
	return to != NULL && !(to->sigmask & bit(sig)) && caught_default(sig);
}

bool sig_route_here(int sig, const siginfo_t *si, struct ult *here, bool here_asked)
{
	if (!ppl_env_sigroute)
		return true;   /* where the kernel put it, in whatever thread runs there */
	uint64_t b = bit(sig);
	if (here != NULL && here_asked) {
		/* The kernel gave it to a thread that unblocked it for a while
		 * (sigsuspend, ppoll, pselect, ...): it asked for it. */
		return true;
	}
	struct ult *to = choose(b, here);
	if (to != NULL && (to == here || default_taken(sig, to)))
		return true;
	claim(sig, si, to);
	return false;
}

/* sig on a kernel thread where no user thread runs (the catcher, or the
 * route of one put off under a spin lock): a claim, or its default action
 * taken here (default_taken). */
static void route_elsewhere(int sig, const siginfo_t *si)
{
	if (sig_route_here(sig, si, NULL, false))
		sig_default_action(sig);
}

bool sig_send_process(int sig, const siginfo_t *si)
{
	struct vproc *v = (struct vproc *)vp_current();
	struct ult *self = v ? v->current : NULL;
	/* A default action libppl catches too (caught_default): a thread
	 * that takes it ends the process before kill returns, as the kernel
	 * delivers to the caller first when the leader blocks it or is gone
	 * (the last thread's atexit handler, glibc's tst-basic3/4). */
	if (!ppl_env_sigroute || self == NULL ||
	    atomic_load_explicit(&ppl_rt.started, memory_order_acquire) != 1 ||
	    !routed(sig))
		return false;
	struct ult *to = choose(bit(sig), self);
	if (to == self)
		sig_run_taken(self, sig, (siginfo_t *)si, self->sigmask);
	else if (default_taken(sig, to))
		sig_default_action(sig);
	else
		claim(sig, si, to);
	return true;
}

bool sig_take(struct ult *self, int sig, siginfo_t *si, bool waiting)
{
	uint64_t b = bit(sig);
	if (!(atomic_load_explicit(&sig_claims, memory_order_seq_cst) & b))
		return false;
	if (!waiting) {
		if (self->sigmask & b)
			return false;
		if (!mine(self, sig))
			return false;
	}
	spin_lock(&rt.lock);
	struct inst *i = rt.head[sig];
	if (i == NULL) {
		spin_unlock(&rt.lock);
		return false;   /* taken meanwhile */
	}
	rt.head[sig] = i->next;
	if (i->next == NULL) {
		rt.tail[sig] = NULL;
		atomic_fetch_and_explicit(&sig_claims, ~b, memory_order_seq_cst);
	}
	if (si != NULL)
		*si = i->si;
	i->next = rt.spare;
	rt.spare = i;
	spin_unlock(&rt.lock);
	return true;
}

void sig_claims_discard(int sig)
{
	spin_lock(&rt.lock);
	struct inst *i = rt.head[sig];
	if (i != NULL) {
		rt.tail[sig]->next = rt.spare;
		rt.spare = i;
		rt.head[sig] = rt.tail[sig] = NULL;
		atomic_fetch_and_explicit(&sig_claims, ~bit(sig), memory_order_seq_cst);
	}
	spin_unlock(&rt.lock);
}

uint64_t sig_claims_for(struct ult *t)
{
	uint64_t ours = 0;
	for (uint64_t c = atomic_load_explicit(&sig_claims, memory_order_seq_cst) & ~t->sigmask;
	     c != 0; c &= c - 1) {
		int sig = __builtin_ctzll(c) + 1;
		if (mine(t, sig))
			ours |= bit(sig);
	}
	return ours;
}

void sig_take_claims(struct ult *self, bool yield)
{
	if (self->sig_yielding)
		return;
	uint64_t c;
	while ((c = atomic_load_explicit(&sig_claims, memory_order_seq_cst) & ~self->sigmask) != 0) {
		bool took = false;
		for (; c != 0; c &= c - 1) {
			int sig = __builtin_ctzll(c) + 1;
			siginfo_t si;
			if (!sig_take(self, sig, &si, false))
				continue;
			/* Run here and now, as the kernel would deliver it (not
			 * raised again: a standard signal pending on this kernel
			 * thread, a poke, would merge with it). */
			sig_run_taken(self, sig, &si, self->sigmask);
			/* Let the threads the handler woke run now, as the
			 * kernel's wake-up preemption would: their next signal
			 * then finds this thread still there to take it. */
			if (yield) {
				self->sig_yielding = true;   /* the loop takes the next */
				sched_yield_ult();
				self->sig_yielding = false;
			}
			took = true;
			break;   /* the handler may have changed the mask */
		}
		if (!took)
			return;
	}
}

/* ---- the catcher ----------------------------------------------------------------- */

/* Claims seen twice are anyone's now: wake a thread that takes them. */
static void look(void)
{
	for (uint64_t c = atomic_load_explicit(&sig_claims, memory_order_acquire); c != 0;
	     c &= c - 1) {
		int sig = __builtin_ctzll(c) + 1;
		unsigned s = atomic_load_explicit(&rt.seq[sig], memory_order_relaxed);
		if (s != rt.seen[sig]) {
			rt.seen[sig] = s;
			continue;
		}
		atomic_store_explicit(&rt.target[sig], NULL, memory_order_relaxed);
		struct ult *t = choose(bit(sig), NULL);
		if (t != NULL)
			nudge(t, sig);
	}
}

static int64_t mono_ns(void)
{
	return clock_now_ns(CLOCK_MONOTONIC);
}

static void catcher_main(void *arg)
{
	(void)arg;
	atomic_store_explicit(&rt.catcher_tid, vp_gettid(), memory_order_release);
	vp_signal_catcher_started();   /* the only taker of what no VP takes */
	int64_t next_look = 0;
	for (;;) {
		uint64_t claimed = atomic_load_explicit(&sig_claims, memory_order_acquire);
		uint64_t want = sig_caught_set() | bit(CATCHER_WAKE);
		int64_t now = mono_ns();
		if (claimed == 0)
			next_look = 0;
		else if (next_look == 0)
			next_look = now + CLAIM_NS;
		struct timespec period = { 0, 0 };
		if (claimed != 0 && next_look > now)
			period.tv_nsec = next_look - now;
		siginfo_t si;
		int r = claimed != 0 && next_look <= now
				? -1
				: vp_kthread_sigtimedwait(want, &si, claimed != 0 ? &period : NULL);
		void *poked = r > 0 ? vp_poke_target(&si) : NULL;
		if (poked != NULL) {
			/* A poke sent to the process (a VP process's forwarder
			 * gives one back): a wake-up for a thread, not an
			 * instance of r.  Routed as one, it became a claim of
			 * its own, and its handler ran twice. */
			sig_poke_redirect(poked, r);
		} else if (r > 0 && r != CATCHER_WAKE) {
			if (!routed(r))
				vp_process_kill(r);   /* no handler any more: the kernel's action, elsewhere */
			else
				route_elsewhere(r, &si);
		}
		if (next_look != 0 && mono_ns() >= next_look) {
			look();
			next_look = mono_ns() + CLAIM_NS;
		}
	}
}

/* A signal put off under a VP's spin lock that its kernel thread blocks by
 * the last unlock (sigdefer.c: the thread there blocks it, or libppl's part
 * of a handler holds it off, sig_frame_enter): routed as the catcher routes
 * one, with the siginfo the kernel gave it.  Sent to the process again
 * instead, a kill()'s siginfo could not be forged: the handler saw SI_USER
 * from the program itself. */
static bool route_handed_back(int sig, const siginfo_t *si)
{
	void *poked = vp_poke_target(si);
	if (poked != NULL) {
		/* A poke: a wake-up, redirected here (never an instance). */
		sig_poke_redirect(poked, sig);
		return true;
	}
	if (!ppl_env_sigroute || atomic_load_explicit(&ppl_rt.started, memory_order_acquire) != 1 ||
	    !routed(sig))
		return false;
	route_elsewhere(sig, si);
	return true;
}

void sig_catcher_start(void)
{
	vp_signal_set_router(route_handed_back);
	sig_flush_keeper_set();
	if (!ppl_env_sigroute || atomic_load_explicit(&ppl_rt.started, memory_order_acquire) == 0 ||
	    sig_wrapped_set() == 0 || atomic_exchange(&rt.catcher_started, true))
		return;
	if (vp_helper_create(catcher_main, NULL) != 0)
		atomic_store(&rt.catcher_started, false);
}

/* A signal got a handler (sigaction).  The first one's catcher is made by
 * the monitor: made here, it cost the caller a kernel thread's creation,
 * 45 to 740 us against glibc's 2 to 3 us for sigaction, and a thread
 * installing two handlers while others already send it both signals (Open
 * POSIX pthread_cond_init/4-2, pthread_mutex_init/5-3) died of the second
 * in that gap.  Until the catcher runs, the VPs take the signal as before
 * it existed (the trampoline routes it). */
void sig_catcher_want(void)
{
	if (!atomic_load_explicit(&rt.catcher_started, memory_order_acquire) &&
	    atomic_load_explicit(&ppl_rt.started, memory_order_acquire) != 0 &&
	    ppl_env_sigroute && monitor_make_catcher())
		return;
	sig_catcher_start();
	sig_catcher_wake();
}

bool sig_catcher_running(void)
{
	return atomic_load_explicit(&rt.catcher_started, memory_order_acquire);
}

void sig_catcher_wake(void)
{
	int tid = atomic_load_explicit(&rt.catcher_tid, memory_order_acquire);
	if (tid != 0)
		vp_kthread_kill(tid, CATCHER_WAKE);
}

void sig_claims_fork_child(void)
{
	/* Pending signals are not inherited, and the catcher did not survive.
	 * The instances the parent had claimed are spares in the child. */
	if (atomic_load_explicit(&sig_claims, memory_order_relaxed) != 0)
		atomic_store_explicit(&sig_claims, 0, memory_order_relaxed);
	spin_reset(&rt.lock);
	for (int sig = 1; sig < 65; sig++) {
		if (rt.tail[sig] != NULL) {
			rt.tail[sig]->next = rt.spare;
			rt.spare = rt.head[sig];
		}
		PPL_RESET(rt.head[sig], NULL);
		PPL_RESET(rt.tail[sig], NULL);
	}
	if (atomic_load_explicit(&rt.catcher_tid, memory_order_relaxed) != 0)
		atomic_store_explicit(&rt.catcher_tid, 0, memory_order_relaxed);
	if (atomic_load_explicit(&rt.catcher_started, memory_order_relaxed))
		atomic_store_explicit(&rt.catcher_started, false, memory_order_relaxed);
}
