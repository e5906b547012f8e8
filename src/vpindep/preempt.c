/* Time-slice preemption: a user thread that has run for a whole slice
 * while other threads wait is switched out from inside a signal handler,
 * at a safe point only (docs/preemption.md).
 *
 * Invariants
 *  - Ticks come from vp_tick_* (one CPU-time timer per unbound VP, started
 *    on the VP's own kernel thread); the handler (tick) runs on the
 *    interrupted thread's stack.  Switching away there is a plain
 *    sched_yield_ult: the kernel's signal frame below the switch frame
 *    keeps every register, vector state included, and returning from the
 *    handler later (on whichever VP resumed the thread) restores them.
 *  - Safe point: the interrupted PC is outside the C library, the dynamic
 *    linker, the vDSO, libgcc_s, the sanitizers' run-time libraries and
 *    libppl (text ranges found once by
 *    dl_iterate_phdr; they may hold locks that are not libppl's), the VP
 *    holds none of libppl's spin locks (vp.crit, counted by spin_lock: also
 *    when libppl calls out of those ranges with a lock held, into a
 *    replaced malloc say), and the thread is RUNNING.
 *  - Otherwise the preemption is deferred: the VP's `preempt_pending` is
 *    set with the switch count at that moment, and honoured by the next
 *    tick that finds a safe point (the timer is re-armed to come back at
 *    the next scheduler tick instead of a whole slice later) or by the next
 *    libppl entry point that calls preempt_point().  A switch since then
 *    means the thread already gave up its VP: the debt is dropped.
 *  - A thread that started during the current period is left alone for
 *    this tick, so every thread gets at least one whole slice.
 *  - Nothing is preempted unless work waits: a thread queued on any VP, or
 *    a timer that is due (a sleeper on a VP whose only thread computes).
 *  - Priorities (SCHED_FIFO, SCHED_RR: thread->prio > 0) as POSIX has
 *    them: a ready thread of higher priority preempts at once (sched_push
 *    queues it on the VP running the lowest priority and kicks that VP
 *    with the tick signal, prio_kick set; on the caller's own VP the
 *    preemption is owed to the next preempt_point); a SCHED_FIFO thread
 *    has no time slice; a SCHED_RR one gives its slice to its own
 *    priority only; a lower priority never preempts a higher one. */
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "base.h"
#include "cancel.h"
#include "cpuclock.h"
#include "monitor.h"
#include "parklot.h"
#include "preempt.h"
#include "runtime.h"
#include "schedhooks.h"
#include "schedparam.h"
#include "scheduler.h"
#include "sig.h"
#include "ult.h"
#include "vproc.h"

#define MAX_RANGES 16

struct range {
	uintptr_t lo, hi;      /* [lo, hi): an executable PT_LOAD segment */
	bool own;              /* libppl's */
};

/* Written once by preempt_init before any VP ticks, read by handlers. */
static struct range ranges[MAX_RANGES];
static int nranges;
static int64_t slice_ns;       /* 0: preemption off */

_Atomic int preempt_npending PPL_HIDDEN;

/* The protected text range holding pc, or NULL. */
static const struct range *range_at(uintptr_t pc)
{
	for (int i = 0; i < nranges; i++)
		if (pc >= ranges[i].lo && pc < ranges[i].hi)
			return &ranges[i];
	return NULL;
}

static bool protected_pc(uintptr_t pc)
{
	return range_at(pc) != NULL;
}

/* pc is in another run time's text (the C library, a sanitizer's, ...). */
static bool foreign_pc(uintptr_t pc)
{
	const struct range *r = range_at(pc);
	return r != NULL && !r->own;
}

static bool own_pc(uintptr_t pc)
{
	const struct range *r = range_at(pc);
	return r != NULL && r->own;
}

bool preempt_own_pc(uintptr_t pc)
{
	return own_pc(pc);
}

bool preempt_foreign_pc(uintptr_t pc)
{
	return foreign_pc(pc);
}

/* Who called libppl: the first return address out of libppl's text, found
 * by its frame pointers (meson.build); 0 if none within a few frames.
 * Only libppl's own frames are followed, each further up the stack. */
static uintptr_t libppl_caller(void)
{
	uintptr_t *fp = __builtin_frame_address(0);
	for (int hops = 0; hops < 8 && fp != NULL; hops++) {
		uintptr_t ra = fp[1];
		if (!own_pc(ra))
			return ra;
		uintptr_t *up = (uintptr_t *)fp[0];
		if (up <= fp || (uintptr_t)(up - fp) > (1u << 13))
			return 0;
		fp = up;
	}
	return 0;
}

static bool name_is(const char *path, const char *prefix)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return strncmp(base, prefix, strlen(prefix)) == 0;
}

static bool object_contains(const struct dl_phdr_info *info, uintptr_t addr)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && addr >= lo && addr < lo + ph->p_memsz)
			return true;
	}
	return false;
}

static int add_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	bool ours = object_contains(info, (uintptr_t)&add_object) ||
		    object_contains(info, (uintptr_t)&dl_iterate_phdr) ||
		    info->dlpi_addr == (uintptr_t)getauxval(AT_BASE) ||
		    info->dlpi_addr == (uintptr_t)getauxval(AT_SYSINFO_EHDR) ||
		    name_is(name, "libc.so") || name_is(name, "ld-linux") ||
		    name_is(name, "linux-vdso") || name_is(name, "libgcc_s.so") ||
		    /* the sanitizers' run-time libraries: their spin locks */
		    name_is(name, "libasan.so") || name_is(name, "libtsan.so") ||
		    name_is(name, "libubsan.so") || name_is(name, "liblsan.so");
	if (!ours)
		return 0;
	for (int i = 0; i < info->dlpi_phnum && nranges < MAX_RANGES; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		ranges[nranges++] = (struct range){ lo, lo + ph->p_memsz,
						    object_contains(info, (uintptr_t)&add_object) };
	}
	return 0;
}

/* ---- the debt of a deferred preemption ------------------------------------- */

static void pending_set(struct vproc *v)
{
	v->preempt_switches = v->stats.switches;
	if (!atomic_exchange_explicit(&v->preempt_pending, true, memory_order_relaxed)) {
		atomic_fetch_add_explicit(&preempt_npending, 1, memory_order_relaxed);
		v->stats.preempts_deferred++;
	}
}

/* Drop the debt; true if it was still owed by the running thread. */
static bool pending_take(struct vproc *v)
{
	if (!atomic_exchange_explicit(&v->preempt_pending, false, memory_order_relaxed))
		return false;
	atomic_fetch_sub_explicit(&preempt_npending, 1, memory_order_relaxed);
	return v->preempt_switches == v->stats.switches;
}

/* ---- is anyone waiting? ------------------------------------------------------ */

static bool work_waiting(struct vproc *self)
{
	if (atomic_load_explicit(&self->rq_len, memory_order_relaxed) > 0)
		return true;
	int n = ppl_rt.nvps_total;
	int64_t now = -1;
	for (int i = 0; i < n; i++) {
		struct vproc *o = ppl_rt.vps[i];
		if (o == NULL)
			continue;
		if (o != self && atomic_load_explicit(&o->rq_len, memory_order_relaxed) > 0 &&
		    !o->bound_to)
			return true;
		int64_t d = atomic_load_explicit(&o->next_deadline, memory_order_relaxed);
		if (d != INT64_MAX) {
			if (now < 0)
				now = clock_now_ns(CLOCK_MONOTONIC);
			if (d <= now)
				return true;
		}
	}
	return false;
}

/* Ticks a handler over the C library keeps its VP (about 4 ms each). */
#define HANDLER_DEFERS 5

/* Whether t runs a handler that interrupted the C library or libppl (its
 * frame is still below the recorded one: one left by siglongjmp is over,
 * and forgotten).  Recorded also without preemption: handler_marks. */
static bool in_unsafe_handler(struct ult *t)
{
	uintptr_t f = t->sig_unsafe;
	if (ppl_likely(f == 0))
		return false;
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	if (sp < f && f - sp < ((uintptr_t)64 << 20))
		return true;
	t->sig_unsafe = 0;
	return false;
}

/* ---- signals held over libppl's code (sig.h) --------------------------------------- */

_Atomic int preempt_nheld PPL_HIDDEN;

void preempt_note_held(struct vproc *v)
{
	vp_kstate_changed();   /* the next resume here looks (sig_resumed) */
	if (!atomic_exchange_explicit(&v->held_owed, true, memory_order_acq_rel)) {
		atomic_store_explicit(&v->held_since, clock_now_ns(CLOCK_MONOTONIC),
				      memory_order_relaxed);
		atomic_fetch_add_explicit(&preempt_npending, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&preempt_nheld, 1, memory_order_seq_cst);
		monitor_kick();   /* to watch it (preempt_held_watch) */
	}
	if (slice_ns != 0 && vp_tick_running(&v->vp))
		vp_tick_soon(&v->vp, 1);
}

static void held_paid(struct vproc *v)
{
	if (atomic_exchange_explicit(&v->held_owed, false, memory_order_acq_rel)) {
		atomic_fetch_sub_explicit(&preempt_npending, 1, memory_order_relaxed);
		atomic_fetch_sub_explicit(&preempt_nheld, 1, memory_order_relaxed);
	}
}

void preempt_release_held(struct vproc *v, uint64_t blocked, void *uc)
{
	held_paid(v);   /* before: a handler the release runs may hold again */
	vp_signal_release(&v->vp, blocked, uc);
}

/* The thread may never come to a point where they run: it blocks in a
 * call libppl does not announce (pause(), a raw futex, a FIFO's open)
 * right after, or spins inside libppl; on NPTL the handler would have run
 * there, or in another thread that takes the signal.  So after HELD_NS
 * the monitor takes them back and sends them to the process or the
 * thread they were for again (vp_signal_reclaim), to land where they can
 * run (or be held again, a look later). */
#define HELD_NS 1000000LL

void preempt_held_watch(struct vproc *v, int64_t now)
{
	if (!atomic_load_explicit(&v->held_owed, memory_order_acquire) ||
	    now - atomic_load_explicit(&v->held_since, memory_order_relaxed) < HELD_NS)
		return;
	held_paid(v);
	vp_signal_reclaim(&v->vp);
	/* A second instance stays blocked on the kernel thread
	 * (held_blocked) till a release point.  A thread in a kernel-level
	 * wait gets one by a spurious wake-up: its caller waits again, past
	 * preempt_release_before_wait.  (It can have got there after that
	 * release, the signal landing in libppl's last steps into the wait.) */
	struct ult *t = v->current;
	if (t != NULL && vp_signals_held(&v->vp))
		(void)pshared_interrupt(t, true);
}

/* At a preempt_point: the handlers run here and now (they may switch the
 * thread out, which this point allows). */
static void release_at_point(struct vproc *v)
{
	struct ult *self = v->current;
	if (self == NULL || vp_in_crit(&v->vp))
		return;
	uint8_t safe = sig_safe_enter(self);
	preempt_release_held(v, sig_thread_blocks(self), NULL);
	sig_safe_leave(self, safe);
}

void preempt_release_before_wait_run(struct vproc *v)
{
	/* No test of bound_to: a VP bound to its thread never holds
	 * (sigaction.c's held_in_libppl). */
	release_at_point(v);
}

/* ---- the handler --------------------------------------------------------------- */

/* What the tick should do to v's current thread `cur`, by POSIX's
 * policies: a higher priority thread ready anywhere preempts it (0 for no,
 * 2 for "to the head of its priority"); otherwise SCHED_FIFO runs on,
 * SCHED_RR gives way to its own priority only, and priority 0 to anyone
 * (1: to the back). */
static int tick_verdict(struct vproc *v, struct ult *cur, bool kick)
{
	int top = sched_top_ready(v);
	if (top > cur->prio)
		return 2;
	if (kick)
		return 0;
	if (cur->prio > 0)
		return cur->sched_policy == SCHED_RR && top == cur->prio ? 1 : 0;
	return work_waiting(v) ? 1 : 0;
}

static void tick_body(void *uc)
{
	struct vproc *v = (struct vproc *)vp_current();
	if (v == NULL)
		return;   /* a foreign thread */
	bool kick = atomic_exchange_explicit(&v->prio_kick, false, memory_order_relaxed);
	if (v->current == NULL || v->bound_to != NULL)
		return;   /* the VP's idle loop */
	/* A sleeper due on a VP whose thread computes: nobody else fires its
	 * timer, and it may outrank that thread (a real-time one is never
	 * switched out for a slice).  Also another VP's: idle, it may be
	 * asleep with a kernel class that this busy one keeps off a shared
	 * CPU (the wake-up raises it).  Not inside a lock: the timer's
	 * wake-up takes run-queue and wait-queue locks. */
	if (!vp_in_crit(&v->vp))
		sched_run_timers(v);
	unsigned long sw = v->stats.switches;
	bool owed = pending_take(v);
	if (!owed && !kick && sw != v->tick_switches) {
		v->tick_switches = sw;   /* started during this period: a full slice first */
		return;
	}
	struct ult *cur = v->current;
	int verdict = tick_verdict(v, cur, kick && !owed);
	if (verdict == 0)
		return;
	/* A handler over the C library is not switched out at once (a thread it
	 * yields to could block the VP on a lock the interrupted code holds),
	 * but not forever either: one that spins waiting for another thread
	 * of its VP (which NPTL runs beside it) would hang.  After
	 * HANDLER_DEFERS ticks the risk of a VP blocked until the monitor
	 * hands it off is the lesser one. */
	bool hold = false;
	if (in_unsafe_handler(cur))
		hold = v->handler_defers++ < HANDLER_DEFERS;
	if (!hold)
		v->handler_defers = 0;
	if (vp_in_crit(&v->vp) || protected_pc(vp_signal_pc(uc)) || hold ||
	    atomic_load_explicit(&cur->state, memory_order_relaxed) != ULT_RUNNING) {
		pending_set(v);
		/* Come back at the next scheduler tick rather than a slice later. */
		vp_tick_soon(&v->vp, 1);
		return;
	}
	v->stats.preempts++;
	ppl_trace(TR_PREEMPT, cur->id, verdict == 2 ? TW_PRIO : TW_TICK);
	if (verdict == 2)
		sched_yield_min(cur->prio + 1, cur->sched_policy == SCHED_FIFO);
	else
		sched_yield_min(cur->prio, false);
	/* Resumed, possibly on another VP: `v` is stale. */
}

/* An asynchronous cancel whose signal found this handler running (its PC
 * in libppl) or the thread switched out is acted on here, on the way back
 * to interrupted code that is a safe point. */
static void tick(void *uc)
{
	struct vproc *cv = (struct vproc *)vp_current();
	/* The running thread's CPU-time timers (cputimer.c), checked before
	 * it may be switched out; not inside a lock (theirs, maybe). */
	if (cv != NULL && cv->current != NULL && cv->bound_to == NULL && !vp_in_crit(&cv->vp)) {
		cpuclock_tick(cv->current);
		cputimer_tick(cv->current);
	}
	struct sig_frame f;
	struct ult *self = sig_frame_enter(&f);   /* resumed in here: signals after it */
	/* Signals held while the thread ran libppl's code (sigaction.c): in
	 * the program's code now, where they run at this frame's sigreturn
	 * (sent again now, blocked by the frame).  Still in libppl: come
	 * back soon. */
	if (ppl_unlikely(cv != NULL && vp_signals_held(&cv->vp)) && self != NULL) {
		if (!vp_in_crit(&cv->vp) && !protected_pc(vp_signal_pc(uc)))
			preempt_release_held(cv, sig_thread_blocks(self), uc);
		else
			vp_tick_soon(&cv->vp, 1);
	}
	tick_body(uc);
	sig_frame_leave(self, &f, uc);
	struct vproc *v = (struct vproc *)vp_current();
	/* A kick whose thread another VP took left this one raised
	 * (sched_class_raise): back to the class of what it runs, unless
	 * the tick came inside a lock (that of vp_set_class, say). */
	if (v != NULL && v->current != NULL && !vp_in_crit(&v->vp)) {
		sched_class_sync(v->current, v);
		sched_cpus_sync(v->current, v, true);   /* its set changed, or it runs on a pinned VP */
	}
	if (v != NULL && v->current != NULL && !vp_in_crit(&v->vp) && !protected_pc(vp_signal_pc(uc)))
		cancel_async_check();
}

void preempt_deferred_run(void)
{
	struct vproc *v = (struct vproc *)vp_current();
	if (v == NULL || v->current == NULL || vp_in_crit(&v->vp) || in_unsafe_handler(v->current))
		return;
	if (!pending_take(v))
		return;
	struct ult *cur = v->current;
	int verdict = tick_verdict(v, cur, false);
	if (verdict == 0)
		return;
	v->stats.preempts++;
	ppl_trace(TR_PREEMPT, cur->id, verdict == 2 ? TW_PRIO : TW_DEFERRED);
	if (verdict == 2)
		sched_yield_min(cur->prio + 1, cur->sched_policy == SCHED_FIFO);
	else
		sched_yield_min(cur->prio, false);
}

void preempt_point_run(void)
{
	/* An entry point called by another run time may be inside that run
	 * time's critical section: TSan's allocator reads the time through
	 * clock_gettime (MonotonicNanoTime) with a size class's mutex held.
	 * Switched out there, the thread held that mutex while every kernel
	 * thread that ran TSan code blocked on it, the spare the monitor made
	 * to run it among them (TSan's thread start allocates): the monitor
	 * waited in pthread_create for good.  The tick pays the debt later,
	 * at a safe point. */
	struct vproc *v = (struct vproc *)vp_current();
	if (v == NULL)
		return;   /* a kernel thread that is no VP */
	bool held = atomic_load_explicit(&v->held_owed, memory_order_relaxed);
	if (!atomic_load_explicit(&v->preempt_pending, memory_order_relaxed) && !held)
		return;   /* another VP's debt */
	if (foreign_pc(libppl_caller()))
		return;
	if (held) {
		release_at_point(v);
		v = (struct vproc *)vp_current();   /* a handler may have moved us */
		if (v == NULL || !atomic_load_explicit(&v->preempt_pending, memory_order_relaxed))
			return;
	}
	preempt_deferred_run();
}

void preempt_handler_enter(const void *uc)
{
	struct vproc *v = (struct vproc *)vp_current();
	if (v == NULL || v->current == NULL || in_unsafe_handler(v->current))
		return;
	if (protected_pc(vp_signal_pc(uc)))
		v->current->sig_unsafe = (uintptr_t)uc;
}

bool preempt_in_handler(struct ult *self)
{
	return in_unsafe_handler(self);
}

void preempt_handler_leave(const void *uc)
{
	struct vproc *v = (struct vproc *)vp_current();
	if (v == NULL || v->current == NULL)
		return;
	struct ult *cur = v->current;
	if (cur->sig_unsafe == (uintptr_t)uc)
		cur->sig_unsafe = 0;
	if (!atomic_load_explicit(&v->preempt_pending, memory_order_relaxed))
		return;
	if (!vp_in_crit(&v->vp) && !in_unsafe_handler(cur) && !protected_pc(vp_signal_pc(uc)))
		preempt_deferred_run();   /* the handler woke it: it runs now */
	else if (slice_ns != 0)
		vp_tick_soon(&v->vp, 1);  /* at the first safe tick */
}

void preempt_for_priority(struct vproc *v, const struct ult *t)
{
	if (v == (struct vproc *)vp_current()) {
		/* Paid at the caller's way out of libppl (preempt_point). */
		pending_set(v);
		return;
	}
	if (slice_ns == 0)
		return;   /* no tick handler */
	/* Its kernel thread may rank below one that holds its CPU. */
	sched_class_raise(v, t);
	if (atomic_exchange_explicit(&v->prio_kick, true, memory_order_relaxed))
		return;   /* a kick is on its way */
	if (vp_signal(&v->vp, vp_tick_signal()) != 0)
		atomic_store_explicit(&v->prio_kick, false, memory_order_relaxed);
}

bool preempt_kick(struct vproc *v)
{
	return slice_ns != 0 && vp_signal(&v->vp, vp_tick_signal()) == 0;
}

/* ---- start-up ---------------------------------------------------------------------- */

void preempt_init(void)
{
	/* The text ranges also without preemption: preempt_handler_enter. */
	dl_iterate_phdr(add_object, NULL);
	slice_ns = (int64_t)ppl_env_timeslice_us * 1000;
	if (slice_ns == 0)
		return;
	/* The application's signals wait from the tick's first instruction
	 * (sig_frame_enter records it): one released by the code the tick
	 * interrupted (a held signal sent again in a handler's sem_post) landed
	 * on the tick's frame before sig_frame_enter blocked it, a third kernel
	 * frame on a PTHREAD_STACK_MIN stack (test/preload/tp_signest_min.c,
	 * with ticks). */
	int err = vp_tick_install(tick, sig_held_set());
	if (err)
		ppl_fatal("cannot install the preemption signal handler (signal %d): %s",
			  vp_tick_signal(), strerror(err));
}

void preempt_vp_start(struct vproc *v)
{
	if (slice_ns == 0 || v->bound_to != NULL || vp_tick_running(&v->vp))
		return;
	v->tick_switches = v->stats.switches;
	int err = vp_tick_start(&v->vp, slice_ns);
	if (err) {
		/* Not fatal: the VP runs its threads to their next switch, as
		 * without preemption.  Say so once. */
		static _Atomic bool told;
		if (!atomic_exchange(&told, true)) {
			char buf[160];
			int n = snprintf(buf, sizeof buf,
					 "libppl: VP %d: no preemption timer (%s); threads there "
					 "run until they block or yield\n", v->vp.id, strerror(err));
			if (n > 0)
				vp_write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
		}
	}
}

void preempt_fork_child(struct vproc *v, struct ult *self)
{
	atomic_store_explicit(&v->prio_kick, false, memory_order_relaxed);
	atomic_store_explicit(&v->preempt_pending, false, memory_order_relaxed);
	atomic_store_explicit(&v->held_owed, false, memory_order_relaxed);
	atomic_store_explicit(&preempt_npending, 0, memory_order_relaxed);   /* the only VP */
	atomic_store_explicit(&preempt_nheld, 0, memory_order_relaxed);
}
