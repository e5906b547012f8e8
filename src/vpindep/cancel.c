/* Cancellation: pthread_cancel, the cancel state and type, cancellation
 * points, and asynchronous cancellation by signal.
 *
 * Invariants
 *  - A thread's `cancel` word holds its state, its type, the pending
 *    request and whether it is already unwinding (CANCEL_*).  Only the
 *    thread changes its state and type; pthread_cancel only ORs in
 *    CANCEL_PENDING.  All of it is seq_cst: a canceller sets the bit and
 *    then looks where the thread is (parked? running with the async type?),
 *    while the thread publishes where it is and then reads the bit.
 *  - A request is acted on once: cancel_act sets CANCEL_ACTING, after
 *    which cancellation points and signals leave the thread alone while
 *    its cleanup handlers run (glibc does the same with EXITING_BIT).
 *  - A thread parked in a cancellation point is woken by pthread_cancel
 *    under the lock of the queue it is parked on (cancel_wake), as its
 *    timer would; one with the async type is woken from any park.
 *  - Asynchronous cancellation of a running thread signals the kernel
 *    thread of the VP it runs on with CANCEL_SIGNAL.  The handler acts only
 *    if that VP's current thread is still the target, still asynchronous
 *    and enabled, and the signal did not interrupt libppl's own code (a
 *    switch or a lock might be half done).  libppl's calls that such a
 *    thread may make check again on their way out (cancel_async_check).
 *    Not every way out does, and a thread not running when cancelled gets
 *    no signal, so the request stays owed (t->async_owed, counted in
 *    `owed`) until the thread acts, exits or is no longer asynchronous and
 *    enabled; meanwhile the monitor signals, at each look, the VP whose
 *    current thread has one (cancel_async_watch).
 *  - A thread in a blocking call of the C library that is a cancellation
 *    point (cancel_syscall_enter/leave) is marked both ways: t->cp_vp names
 *    the VP whose kernel thread makes the call, v->cp_ult the thread.  The
 *    thread marks itself and then reads CANCEL_PENDING; pthread_cancel sets
 *    it and then reads the mark (both seq_cst), so either the thread acts
 *    before the call or the canceller signals its kernel thread.  The
 *    handler unwinds the thread only if the signal landed outside libppl
 *    (in the C library's call, where glibc would act too); one that landed
 *    in libppl's few instructions around the call is sent again by
 *    pthread_cancel until the mark is gone or the thread acts.  Preemption
 *    never switches a thread whose PC is in libppl or the C library; an
 *    application's signal handler that switches it out inside the call
 *    takes the mark along to the VP it resumes on (switch.c).
 *  - The C library's own cancellation points (fgets' read, pause, lockf,
 *    ...; per-thread TLS only) act on the bits of the thread's glibc
 *    descriptor, which mirror `cancel` (tls.h): DISABLED and ASYNC follow
 *    the state and type, CANCELED is set with CANCEL_PENDING and EXITING
 *    with CANCEL_ACTING, each after libppl's own bit.  The C library sets
 *    ASYNC around each of its cancellable system calls and, if CANCELED is
 *    already set, starts glibc's unwinder, which runs libppl's hook
 *    (libc_acts): the request is acted on as at any other point.  A
 *    request that comes while the thread is inside such a call finds ASYNC
 *    in the old value of its read-modify-write of the same word (so either
 *    the thread sees CANCELED or the canceller sees ASYNC), and
 *    pthread_cancel signals the thread's kernel thread until it has acted
 *    or left the call; the handler acts only while ASYNC is still set and
 *    the signal did not land in libppl's code.  The thread cannot change
 *    kernel threads inside such a call (no libppl code runs there). */
#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <string.h>

#include "base.h"
#include "cancel.h"
#include "monitor.h"
#include "parklot.h"
#include "runtime.h"
#include "scheduler.h"
#include "sig.h"
#include "glibcabi.h"
#include "ult.h"
#include "vproc.h"

/* The last real-time signal: glibc keeps the first two (SIGCANCEL and
 * SIGSETXID) below SIGRTMIN for itself, and applications that use
 * real-time signals usually count up from SIGRTMIN. */
#define CANCEL_SIGNAL PPL_SIGCANCEL

static struct sigaction prev_action;   /* the handler before ours, for foreign signals */
static _Atomic int owed;               /* threads whose async_owed is set */
static _Atomic int sig_state;          /* 0: not installed, 1: installing, 2: done */
static uintptr_t text_lo, text_hi;     /* libppl's executable segment */

/* ---- the C library's descriptor bits (tls.h) ------------------------------------ */

/* t's glibc descriptor if the C library's cancellation acts for t. */
static void *libc_tp(struct ult *t)
{
	if (!tls_libc_cancel)
		return NULL;
	if (t == &ppl_rt.main_ult)
		return tls_main_block();
	return t->foreign ? NULL : t->tls;
}

static int libc_bits(struct ult *t, int clear, int set)
{
	void *tp = libc_tp(t);
	return tp ? tls_cancel_bits(tp, clear, set) : -1;
}

/* The C library is already unwinding t: its cancellable call found
 * CANCELED and set EXITING (libppl's own acting sets ACTING first).  Its
 * unwinder reaches libppl's hook (libc_acts) by itself, and on the way may
 * hold the dynamic loader's locks (its first unwind dlopens libgcc_s):
 * the signal handler must not unwind t from there. */
static bool libc_unwinding(struct ult *t)
{
	int g = libc_bits(t, 0, 0);
	return g >= 0 && (g & TLS_CANCEL_EXITING);
}

/* Inside one of the C library's cancellable calls (it set ASYNC there),
 * for a thread whose own type is deferred. */
static bool in_libc_call(struct ult *t, int c)
{
	if (c & CANCEL_ASYNC)
		return false;
	int g = libc_bits(t, 0, 0);
	return g >= 0 && (g & (TLS_CANCEL_ASYNC | TLS_CANCEL_EXITING)) == TLS_CANCEL_ASYNC;
}

/* ---- state and type -------------------------------------------------------- */

static bool acts_async(int c)
{
	return (c & (CANCEL_DISABLED | CANCEL_ASYNC | CANCEL_PENDING | CANCEL_ACTING)) ==
	       (CANCEL_ASYNC | CANCEL_PENDING);
}

/* Replace the bits of `mask` with `bits`; returns the old word. */
static int update(struct ult *self, int mask, int bits)
{
	int old = atomic_load_explicit(&self->cancel, memory_order_seq_cst);
	while (!atomic_compare_exchange_weak_explicit(&self->cancel, &old, (old & ~mask) | bits,
						      memory_order_seq_cst, memory_order_seq_cst))
		;
	return old;
}

/* ---- the monitor's watch of asynchronous requests -------------------------------- */

static void unowe(struct ult *t)
{
	if (atomic_exchange_explicit(&t->async_owed, false, memory_order_seq_cst))
		atomic_fetch_sub_explicit(&owed, 1, memory_order_seq_cst);
}

/* pthread_cancel: t has an asynchronous request that a signal must act
 * on, watched until it acts, exits or stops being asynchronous and
 * enabled.  It may have done so already, and settled before the flag was
 * set: looked at after setting it (seq_cst both ways, and the exchange
 * decrements once). */
static void owe(struct ult *t)
{
	if (!atomic_exchange_explicit(&t->async_owed, true, memory_order_seq_cst))
		atomic_fetch_add_explicit(&owed, 1, memory_order_seq_cst);
	if (!acts_async(atomic_load_explicit(&t->cancel, memory_order_seq_cst)))
		unowe(t);
	else
		monitor_kick();
}

/* The thread itself, after changing its cancel word.  A load first: every
 * thread's exit comes here. */
static void settle(struct ult *self)
{
	if (atomic_load_explicit(&self->async_owed, memory_order_seq_cst))
		unowe(self);
}

bool cancel_async_owed(void)
{
	return atomic_load_explicit(&owed, memory_order_seq_cst) > 0;
}

int ppl_pthread_setcancelstate(int state, int *oldstate)
{
	if (state != PTHREAD_CANCEL_ENABLE && state != PTHREAD_CANCEL_DISABLE)
		return EINVAL;
	struct ult *self = ult_self();
	int old = update(self, CANCEL_DISABLED, state == PTHREAD_CANCEL_DISABLE ? CANCEL_DISABLED : 0);
	(void)libc_bits(self, TLS_CANCEL_DISABLED,
			state == PTHREAD_CANCEL_DISABLE ? TLS_CANCEL_DISABLED : 0);
	if (oldstate)
		*oldstate = (old & CANCEL_DISABLED) ? PTHREAD_CANCEL_DISABLE : PTHREAD_CANCEL_ENABLE;
	if (state == PTHREAD_CANCEL_DISABLE)
		settle(self);   /* enabling again acts at once (below) */
	cancel_async_check();
	return 0;
}

int ppl_pthread_setcanceltype(int type, int *oldtype)
{
	if (type != PTHREAD_CANCEL_DEFERRED && type != PTHREAD_CANCEL_ASYNCHRONOUS)
		return EINVAL;
	struct ult *self = ult_self();
	int old = update(self, CANCEL_ASYNC, type == PTHREAD_CANCEL_ASYNCHRONOUS ? CANCEL_ASYNC : 0);
	(void)libc_bits(self, TLS_CANCEL_ASYNC,
			type == PTHREAD_CANCEL_ASYNCHRONOUS ? TLS_CANCEL_ASYNC : 0);
	if (oldtype)
		*oldtype = (old & CANCEL_ASYNC) ? PTHREAD_CANCEL_ASYNCHRONOUS : PTHREAD_CANCEL_DEFERRED;
	if (type == PTHREAD_CANCEL_DEFERRED)
		settle(self);
	cancel_async_check();
	return 0;
}

/* Also a yield: a thread polling for cancellation in a loop would
 * otherwise keep its VP from the threads queued there (with one VP, from
 * the very thread that is to cancel it).  A yield with nothing queued costs
 * a load. */
void ppl_pthread_testcancel(void)
{
	cancel_point();
	sched_yield_ult();
	cancel_point();
}

/* ---- acting on a request ------------------------------------------------------ */

void cancel_point(void)
{
	struct ult *self = ult_self();
	int c = atomic_load_explicit(&self->cancel, memory_order_seq_cst);
	if (ppl_unlikely((c & (CANCEL_DISABLED | CANCEL_PENDING | CANCEL_ACTING)) == CANCEL_PENDING))
		cancel_act();
}

void cancel_async_check(void)
{
	struct ult *self = ult_self();
	if (ppl_unlikely(acts_async(atomic_load_explicit(&self->cancel, memory_order_seq_cst))))
		cancel_act();
}

void cancel_exiting(struct ult *self)
{
	atomic_fetch_or_explicit(&self->cancel, CANCEL_ACTING, memory_order_seq_cst);
	settle(self);
	(void)libc_bits(self, 0, TLS_CANCEL_EXITING);
}

_Noreturn void cancel_act(void)
{
	struct ult *self = ult_self();
	cancel_exiting(self);
	self->result = PTHREAD_CANCELED;
	ult_unwind();
}

/* ---- pthread_cancel ------------------------------------------------------------- */

void cancel_wake(struct ult *t, bool async)
{
	/* Asynchronous cancellation ends any park; deferred, a cancellation point's. */
	(void)sched_interrupt(t, async ? 0 : PARK_CP, ECANCELED);
}

static void async_signal(int sig, siginfo_t *si, void *uc);
static void signal_setup(void);
static void libc_kick(struct ult *t);

/* ---- cancellable system calls ------------------------------------------------ */

static bool acts_deferred(int c)
{
	return (c & (CANCEL_DISABLED | CANCEL_PENDING | CANCEL_ACTING)) == CANCEL_PENDING;
}

bool cancel_requested(struct ult *t)
{
	return acts_deferred(atomic_load_explicit(&t->cancel, memory_order_seq_cst));
}

static void unmark(struct vproc *v, struct ult *t)
{
	atomic_store_explicit(&v->cp_ult, NULL, memory_order_seq_cst);
	atomic_store_explicit(&t->cp_vp, NULL, memory_order_seq_cst);
}

/* Unwinding from inside a marked call: undo cancel_syscall_enter and the
 * caller's state (its undo, or blocking.c's sys_enter). */
static void undo_mark(struct vproc *v, struct ult *c)
{
	unmark(v, c);
	if (v->cp_undo)
		v->cp_undo(v->cp_arg);
	else
		sys_leave(v->bound_to != NULL ? NULL : v);
}

/* glibc's unwinder runs this (tls.h's hook) when a cancellable call of the
 * C library found the request; an interposed call (blocking.c) may be
 * around that call. */
static void libc_acts(void *arg)
{
	(void)arg;
	tls_cancel_hooked();
	struct vproc *v = (struct vproc *)vp_current();
	struct ult *self = ult_self();
	if (v != NULL && atomic_load_explicit(&v->cp_ult, memory_order_seq_cst) == self)
		undo_mark(v, self);
	cancel_act();
}

void cancel_init(void)
{
	tls_cancel_hook(NULL, libc_acts);   /* the main thread's */
}

void cancel_thread_start(struct _pthread_cleanup_buffer *hook)
{
	tls_cancel_hook(hook, libc_acts);
}

void cancel_thread_reset(struct ult *t)
{
	if (libc_tp(t) != NULL)
		tls_cancel_reset(t->tls, &t->libc_unwind);
}

struct vproc *cancel_syscall_enter(void (*undo)(void *), void *arg)
{
	struct ult *me = ult_self();
	if (ppl_unlikely(acts_deferred(atomic_load_explicit(&me->cancel, memory_order_seq_cst)))) {
		if (undo)
			undo(arg);
		cancel_act();
	}
	sys_place();
	struct vproc *v = (struct vproc *)vp_current();
	if (v == NULL || v->current == NULL)
		return NULL;
	struct ult *self = v->current;
	v->cp_undo = undo;
	v->cp_arg = arg;
	atomic_store_explicit(&self->cp_vp, v, memory_order_seq_cst);
	atomic_store_explicit(&v->cp_ult, self, memory_order_seq_cst);
	if (ppl_unlikely(acts_deferred(atomic_load_explicit(&self->cancel, memory_order_seq_cst)))) {
		unmark(v, self);
		if (undo)
			undo(arg);
		cancel_act();
	}
	return v;
}

void cancel_syscall_leave(struct vproc *v, bool eintr)
{
	if (v != NULL) {
		/* Where the thread is now (cancel_mark_drop). */
		struct vproc *here = (struct vproc *)vp_current();
		unmark(here, here->current);
	}
	if (eintr)
		cancel_point();
}

bool cancel_mark_drop(struct vproc *v, struct ult *self, struct cancel_mark *m)
{
	if (atomic_load_explicit(&v->cp_ult, memory_order_relaxed) != self)
		return false;
	m->undo = v->cp_undo;
	m->arg = v->cp_arg;
	/* self->cp_vp stays: pthread_cancel's kicks go on (to v, where the
	 * handler ignores them) until the thread is marked where it resumes. */
	atomic_store_explicit(&v->cp_ult, NULL, memory_order_seq_cst);
	return true;
}

void cancel_mark_restore(struct vproc *v, struct ult *self, const struct cancel_mark *m)
{
	v->cp_undo = m->undo;
	v->cp_arg = m->arg;
	atomic_store_explicit(&self->cp_vp, v, memory_order_seq_cst);
	atomic_store_explicit(&v->cp_ult, self, memory_order_seq_cst);
}

/* pthread_cancel's side: interrupt t's call, if it is in one, until it has
 * left it or acts.  A signal that lands in libppl's own instructions around
 * the call is ignored by the handler, hence the loop; it ends within a few
 * instructions of the thread's, or at its next entry into the kernel. */
/* Signal v's kernel thread out of the call its thread is in, then give
 * the handler time to run before the caller looks again (round: how many
 * times it has). */
/* Send CANCEL_SIGNAL to v's kernel thread unless one sent before has not
 * been handled yet (or `force`).  The signal is a real-time one, so the
 * kernel queues every instance, and SA_NODEFER delivers them all at once,
 * nested, when the kernel thread next runs: a canceller that kicked every
 * 100 us a kernel thread that waited 30 ms for a CPU stacked ~3 KiB per
 * instance on it and overflowed the 2*SIGSTKSZ alternate stack of glibc's
 * tst-cancelx20 (SIGSEGV, 1 run in 10). */
static void send_kick(struct vproc *v, bool force, const char *why)
{
	atomic_store_explicit(&v->cancel_sig, 1, memory_order_release);
	if (!force && atomic_load_explicit(&v->cancel_inflight, memory_order_acquire) > 0)
		return;
	atomic_fetch_add_explicit(&v->cancel_inflight, 1, memory_order_acq_rel);
	int err = vp_signal(&v->vp, CANCEL_SIGNAL);
	if (err) {
		atomic_fetch_sub_explicit(&v->cancel_inflight, 1, memory_order_relaxed);
		ppl_fatal("cannot signal VP %d %s: %s", v->vp.id, why, strerror(err));
	}
}

/* The monitor, on every look while a request is owed: signal v's kernel
 * thread again if its thread has an asynchronous request still to act on.
 * pthread_cancel's one signal is not enough: it is ignored where it lands
 * in libppl's code, and none is sent to a thread not running then (woken
 * from a barrier, say), and libppl's code that such a thread runs next
 * has no check on every way out; the thread may then block in a system
 * call libppl does not announce (pause(), a raw futex) with nothing left
 * to interrupt it (glibc's tst-cancel30). */
void cancel_async_watch(struct vproc *v)
{
	struct ult *t = v->current;
	if (t == NULL || !atomic_load_explicit(&t->async_owed, memory_order_seq_cst) ||
	    t->vp != v || atomic_load_explicit(&t->state, memory_order_seq_cst) != ULT_RUNNING ||
	    !acts_async(atomic_load_explicit(&t->cancel, memory_order_seq_cst)) ||
	    atomic_load_explicit(&t->kwait, memory_order_seq_cst) || libc_unwinding(t))
		return;
	/* Every 20th time regardless, as kick_vp. */
	send_kick(v, ++v->cancel_watch % 20 == 0, "for asynchronous cancellation");
}

static void kick_vp(struct vproc *v, int round)
{
	/* Every 50th round regardless: a signal that never arrived must not
	 * stop the kicks for good. */
	send_kick(v, round % 50 == 49, "to cancel a system call");
	sched_sleep_until(clock_now_ns(CLOCK_MONOTONIC) + (round < 10 ? 100000 : 2000000));
}

static void syscall_kick(struct ult *t)
{
	for (int round = 0;; round++) {
		struct vproc *v = atomic_load_explicit(&t->cp_vp, memory_order_seq_cst);
		if (v == NULL || !acts_deferred(atomic_load_explicit(&t->cancel, memory_order_seq_cst)))
			return;
		if (round == 0)
			signal_setup();
		kick_vp(v, round);
	}
}

/* pthread_cancel's side for a thread inside one of the C library's own
 * cancellable calls: signal its kernel thread until it has acted or left
 * the call (a signal that lands in libppl's code is ignored). */
static void libc_kick(struct ult *t)
{
	signal_setup();
	for (int round = 0;; round++) {
		int c = atomic_load_explicit(&t->cancel, memory_order_seq_cst);
		if (!acts_deferred(c) || !in_libc_call(t, c) ||
		    atomic_load_explicit(&t->state, memory_order_seq_cst) != ULT_RUNNING)
			return;
		struct vproc *v = t->vp;
		if (v == NULL)
			return;
		kick_vp(v, round);
	}
}

/* Install the handler once, before the first asynchronous request.  Also
 * finds libppl's own code, which the handler must not interrupt. */
static void signal_setup(void)
{
	if (atomic_load_explicit(&sig_state, memory_order_acquire) == 2)
		return;
	int expected = 0;
	if (!atomic_compare_exchange_strong_explicit(&sig_state, &expected, 1, memory_order_acq_rel,
						     memory_order_acquire)) {
		while (atomic_load_explicit(&sig_state, memory_order_acquire) != 2)
			sched_yield_min(0, false);   /* whatever the priorities */
		return;
	}
	Dl_info info;
	struct link_map *map = NULL;
	if (dladdr1((void *)signal_setup, &info, (void **)&map, RTLD_DL_LINKMAP) && map) {
		const ElfW(Ehdr) *eh = info.dli_fbase;
		const ElfW(Phdr) *ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
		for (int i = 0; i < eh->e_phnum; i++) {
			uintptr_t lo = map->l_addr + ph[i].p_vaddr;
			if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X) &&
			    (uintptr_t)signal_setup >= lo && (uintptr_t)signal_setup < lo + ph[i].p_memsz) {
				text_lo = lo;
				text_hi = lo + ph[i].p_memsz;
			}
		}
	}
	if (text_lo == 0)
		ppl_fatal("cannot find libppl's code for asynchronous cancellation");
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = async_signal;
	/* SA_NODEFER: the handler unwinds instead of returning, so the signal
	 * must not stay blocked in the VP's kernel thread afterwards. */
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (vp_sigaction(CANCEL_SIGNAL, &sa, &prev_action) != 0)
		ppl_fatal("sigaction for asynchronous cancellation failed");
	atomic_store_explicit(&sig_state, 2, memory_order_release);
}

static void chain(int sig, siginfo_t *si, void *uc)
{
	if (prev_action.sa_flags & SA_SIGINFO)
		prev_action.sa_sigaction(sig, si, uc);
	else if (prev_action.sa_handler != SIG_DFL && prev_action.sa_handler != SIG_IGN)
		prev_action.sa_handler(sig);
}

/* The signal landed in libppl's own code: not in the program's raw calls
 * through libppl's syscall() export, which are the program's, as in the C
 * library's syscall(). */
static bool in_libppl(uintptr_t pc)
{
	return pc >= text_lo && pc < text_hi && !vp_in_user_call(pc);
}

static void async_signal(int sig, siginfo_t *si, void *uc)
{
	struct vproc *v = (struct vproc *)vp_current();
	if (v != NULL) {   /* one fewer in flight, never below 0 */
		int n = atomic_load_explicit(&v->cancel_inflight, memory_order_relaxed);
		while (n > 0 && !atomic_compare_exchange_weak_explicit(&v->cancel_inflight, &n, n - 1,
									memory_order_acq_rel,
									memory_order_relaxed))
			;
	}
	/* Ours if marked, or if the thread there has a request: the mark is
	 * one flag for all the signals in flight (the canceller's, the
	 * monitor's), and a second signal that found it consumed and returned
	 * would end a pause() or sigsuspend() the thread is blocked in with
	 * EINTR instead of unwinding it (tst-cancel30: pause returned, 1 run
	 * in 60). */
	if (v == NULL || (!atomic_exchange_explicit(&v->cancel_sig, 0, memory_order_acq_rel) &&
			  (v->current == NULL ||
			   !(atomic_load_explicit(&v->current->cancel, memory_order_seq_cst) &
			     CANCEL_PENDING)))) {
		chain(sig, si, uc);   /* not ours */
		return;
	}
	atomic_signal_fence(memory_order_seq_cst);
	uintptr_t pc = vp_signal_pc(uc);
	struct ult *c = atomic_load_explicit(&v->cp_ult, memory_order_seq_cst);
	if (c != NULL && c == v->current &&
	    acts_deferred(atomic_load_explicit(&c->cancel, memory_order_seq_cst))) {
		if (libc_unwinding(c))
			return;   /* its hook undoes the mark and acts */
		if (in_libppl(pc))
			goto again;   /* around the call */
		/* In the C library's call, a cancellation point. */
		undo_mark(v, c);
		cancel_act();
	}
	struct ult *t = v->current;
	if (t == NULL)
		return;
	int tc = atomic_load_explicit(&t->cancel, memory_order_seq_cst);
	if (acts_deferred(tc) && in_libc_call(t, tc)) {
		/* In one of the C library's own cancellable calls: where glibc's
		 * SIGCANCEL acts too. */
		if (in_libppl(pc))
			goto again;
		cancel_act();
	}
	/* In a process-shared wait in the kernel: it acts on its way out. */
	if (!acts_async(tc) || libc_unwinding(t) || atomic_load_explicit(&t->kwait, memory_order_seq_cst))
		return;
	/* Inside libppl (also in the C library or the vDSO under one of its
	 * spin locks): its exits check (cancel_async_check), and the monitor
	 * signals again (cancel_async_watch). */
	if (in_libppl(pc) || vp_in_crit(&v->vp))
		return;
	/* In a call announced but not a cancellation point (flock): the VP
	 * comes back from the monitor as the call's return would take it. */
	if (atomic_load_explicit(&v->in_syscall, memory_order_seq_cst) != SYS_OUT)
		sys_leave(v);
	cancel_act();
again:
	/* pthread_cancel signals again.  The signal may also have interrupted
	 * this very handler as it began (two of them queued while the kernel
	 * thread waited for a CPU; SA_NODEFER): leave the mark for it, whose
	 * PC is the call's. */
	atomic_store_explicit(&v->cancel_sig, 1, memory_order_release);
}

int ppl_pthread_cancel(pthread_t th)
{
	struct ult *t = (struct ult *)th;
	if (t == NULL || atomic_load_explicit(&t->state, memory_order_acquire) == ULT_FREE)
		return ESRCH;
	int st = atomic_load_explicit(&t->state, memory_order_acquire);
	/* glibc 2.34+: a thread that has already exited is not an error. */
	if (st == ULT_ZOMBIE || st == ULT_EXITING)
		return 0;
	/* The unwinder is loaded now, not in the target, which might be in a
	 * signal handler or out of memory by then. */
	unwind_prepare();
	int old = atomic_fetch_or_explicit(&t->cancel, CANCEL_PENDING, memory_order_seq_cst);
	/* Also while disabled: the C library acts once it is enabled again. */
	int lold = libc_bits(t, 0, TLS_CANCEL_CANCELED);
	/* As glibc: a process still single-threaded that cancels itself must
	 * reach the C library's cancellation points, which it skips while
	 * __libc_single_threaded is set. */
	if (lold >= 0)
		glibcabi_set_multi_threaded();
	if (old & (CANCEL_PENDING | CANCEL_ACTING | CANCEL_DISABLED))
		return 0;
	struct ult *self = ult_self();
	if (t == self) {
		if (old & CANCEL_ASYNC)
			cancel_act();
		return 0;
	}
	bool async = (old & CANCEL_ASYNC) != 0;
	cancel_wake(t, async);
	/* In a process-shared wait in the kernel: woken there, it acts on
	 * the request on its way out (no signal then, which could unwind it
	 * out of parklot.c's bookkeeping). */
	bool kwait = pshared_interrupt(t, async);
	syscall_kick(t);
	if (!async && lold >= 0 &&
	    (lold & (TLS_CANCEL_ASYNC | TLS_CANCEL_EXITING)) == TLS_CANCEL_ASYNC)
		libc_kick(t);
	if (!async || t->foreign || kwait)
		return 0;
	signal_setup();
	/* Until it acts: the one signal below may not be enough (owe). */
	owe(t);
	if (atomic_load_explicit(&t->state, memory_order_seq_cst) != ULT_RUNNING)
		return 0;   /* ready or parked: the monitor signals it once it runs */
	struct vproc *v = t->vp;
	if (v != NULL)
		send_kick(v, false, "for asynchronous cancellation");
	return 0;
}

/* No cancellation is in flight in the forked child. */
void cancel_vp_fork_child(struct vproc *v, struct ult *self)
{
	atomic_store_explicit(&v->cancel_sig, 0, memory_order_relaxed);
	atomic_store_explicit(&v->cancel_inflight, 0, memory_order_relaxed);
	atomic_store_explicit(&v->cp_ult, NULL, memory_order_relaxed);
	/* Only the forking thread lives on: nothing is owed but its own. */
	int own = self != NULL && atomic_load_explicit(&self->async_owed, memory_order_relaxed);
	if (atomic_load_explicit(&owed, memory_order_relaxed) != own)   /* a store copies the page */
		atomic_store_explicit(&owed, own, memory_order_relaxed);
}
