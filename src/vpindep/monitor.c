/* The monitor of blocking system calls: one kernel thread that notices a VP
 * whose kernel thread is stuck in the kernel while threads are ready on its
 * queue, and lends the VP's work to a spare VP (a kernel thread of its own,
 * created once and then reused).  Scheduler activations' "thread has
 * blocked" upcall, emulated; docs/blocking.md has the design.
 *
 * Invariants
 *  - A VP is lent to at most one spare (v->lent_to), and a spare stands in
 *    for at most one VP (s->lender); both links change together under
 *    mon.lock.  Only the monitor lends, so only it picks spares.
 *  - An announced call: the VP's kernel thread stores SYS_IN before the
 *    call and exchanges SYS_OUT after it.  The monitor lends the VP only by
 *    CAS SYS_IN -> SYS_LENT under mon.lock, so the kernel thread either sees
 *    SYS_LENT on return (and reclaims, taking mon.lock after the monitor
 *    released it with lent_to set) or the CAS fails and nothing is lent.
 *  - An unannounced block (raw futex in libgomp, say) is lent without a
 *    CAS; the VP reclaims at its next scheduling point (find_work).
 *  - Reclaiming retires the spare: it runs its current thread to the next
 *    switch, then parks in the scheduler's retire() and is free for reuse.
 *    So the number of VPs running user code exceeds the target only while
 *    a call blocks, plus one time slice.
 *  - While an asynchronous cancel is owed (cancel.c), it looks every
 *    POLL_SLOW_NS and signals the VP running the thread, lent or not.
 *  - The monitor sleeps on a futex while nothing is to be watched soon
 *    (nothing at all, or only timers more than POLL_SLOW_NS away).  Its
 *    wakers (a push onto a run queue, an announced call with a non-empty
 *    queue, the last VP going idle) read monitor_asleep after publishing
 *    their change, and the monitor rescans after storing it (seq_cst on
 *    both sides), so it cannot miss work. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "cancel.h"
#include "monitor.h"
#include "preempt.h"
#include "runtime.h"
#include "schedhooks.h"
#include "scheduler.h"
#include "sig.h"
#include "ult.h"
#include "vproc.h"

#define HANDOFF_NS 50000LL       /* an announced call this long with threads ready */
#define STUCK_NS 3000000LL       /* no switch this long while sleeping in the kernel */
#define POLL_SLOW_NS 1000000LL   /* watching for unannounced blocks */
#define QUIET_NS 300000000LL     /* a deadlock must look the same this long apart */
#define LINGER_NS 20000000LL     /* polls on this long after the last switch it saw */

_Atomic int monitor_asleep PPL_HIDDEN PPL_FORK_STATE;
/* When a sleeping monitor looks again by itself (INT64_MAX: only when
 * kicked): an announced call, or a new timer, whose VP's next timer is due
 * later need not kick it. */
static _Atomic int64_t wake_at = INT64_MAX;

static struct {
	spin_t lock;                 /* lent_to/lender links */
	_Atomic uint32_t word;       /* futex the monitor sleeps on */
	_Atomic int kthreads;        /* kernel threads libppl made, with main's */
	_Atomic bool idle_check;     /* every VP went idle: look for a deadlock */
	_Atomic bool want_catcher;   /* sigaction asked for the signal catcher */
	_Atomic unsigned long handoffs; /* written by the monitor only */
	_Atomic unsigned long handoff_fails;   /* no spare could be made */
	_Atomic bool running;        /* monitor_start made the thread */
	_Atomic int halt;            /* retire.c: 1 stop, 2 end, 0 go on */
	_Atomic int halt_ack;        /* 1 stopped, 2 gone */
	bool reported;               /* a deadlock was reported ... */
	unsigned long reported_mark; /* ... at this progress mark */
} mon = { .kthreads = 1 };

void monitor_count_kthread(void)
{
	atomic_fetch_add_explicit(&mon.kthreads, 1, memory_order_relaxed);
}

int monitor_own_kthreads(void)
{
	return atomic_load_explicit(&mon.kthreads, memory_order_relaxed);
}

unsigned long monitor_handoffs(void)
{
	return atomic_load_explicit(&mon.handoffs, memory_order_relaxed);
}

unsigned long monitor_handoff_fails(void)
{
	return atomic_load_explicit(&mon.handoff_fails, memory_order_relaxed);
}

void monitor_kick(void)
{
	if (!atomic_exchange_explicit(&monitor_asleep, 0, memory_order_seq_cst))
		return;   /* awake, or another kicker got there */
	atomic_fetch_add_explicit(&mon.word, 1, memory_order_release);
	futex_wake(&mon.word, 1);
}

bool monitor_make_catcher(void)
{
	if (!atomic_load_explicit(&mon.running, memory_order_acquire))
		return false;
	/* Pairs with the monitor's look after it publishes monitor_asleep. */
	atomic_store_explicit(&mon.want_catcher, true, memory_order_seq_cst);
	monitor_kick();
	return true;
}

void monitor_note_timer(int64_t deadline)
{
	/* Pairs with the monitor's publishing of wake_at before its last look. */
	atomic_thread_fence(memory_order_seq_cst);
	if (deadline < atomic_load_explicit(&wake_at, memory_order_seq_cst) - STUCK_NS)
		monitor_note_ready();
}

void monitor_note_idle(void)
{
	if (ppl_env_deadlock == 0 ||
	    atomic_load_explicit(&ppl_rt.nsleeping, memory_order_seq_cst) < ppl_rt.nvps)
		return;
	atomic_store_explicit(&mon.idle_check, true, memory_order_seq_cst);
	monitor_note_ready();
}

/* ---- announced calls ----------------------------------------------------------- */

static bool has_work(struct vproc *v, int64_t *deadline);

/* A spare about to block stands in for its lenders: their queues and
 * timers are waiting on it too.  A sleeping monitor that last saw the
 * spare running had no reason to watch them (tp_cancel_storm: the
 * canceller's 100 us nap, parked on a lent VP, never fired). */
static bool lenders_due(struct vproc *v)
{
	int64_t deadline;
	return has_work(v, &deadline) ||
	       deadline < atomic_load_explicit(&wake_at, memory_order_seq_cst);
}

void sys_place_shared(void)
{
	struct vproc *v = (struct vproc *)vp_current();
	if (v == NULL || v != ppl_rt.vps[0] || ppl_rt.nvps < 2)
		return;
	struct ult *self = v->current;
	if (self == NULL || self == &ppl_rt.main_ult || self->home != NULL || self->bound ||
	    self->foreign)
		return;
	sched_leave_initial();
}

struct vproc *sys_enter(void)
{
	sys_place();
	struct vproc *v = (struct vproc *)vp_current();
	if (v == NULL || v->bound_to != NULL)
		return NULL;   /* a foreign kernel thread, or a VP of one thread */
	v->stats.syscalls++;
	unsigned long seq = atomic_load_explicit(&v->sys_seq, memory_order_relaxed);
	atomic_store_explicit(&v->sys_seq, seq + 1, memory_order_relaxed);
	atomic_store_explicit(&v->in_syscall, SYS_IN, memory_order_seq_cst);
	/* Threads already wait here, or will when a timer of this VP fires:
	 * the monitor must time this call, unless it looks again by itself
	 * before that timer.  A later push onto the queue kicks it from
	 * sched_push. */
	if (atomic_load_explicit(&v->rq_len, memory_order_seq_cst) > 0 ||
	    atomic_load_explicit(&v->next_deadline, memory_order_relaxed) <
		    atomic_load_explicit(&wake_at, memory_order_seq_cst) ||
	    (ppl_unlikely(atomic_load_explicit(&v->lender, memory_order_seq_cst) != NULL) &&
	     lenders_due(v)))
		monitor_note_ready();
	return v;
}

/* v's kernel thread is out of the announced call. */
static void leave(struct vproc *v)
{
	int old = atomic_exchange_explicit(&v->in_syscall, SYS_OUT, memory_order_acq_rel);
	if (ppl_unlikely(old == SYS_LENT)) {
		int e = errno;
		monitor_reclaim(v);
		errno = e;
	}
}

void sys_leave(struct vproc *v)
{
	/* The VP the thread is on now: a signal handler that switched it
	 * out inside the call took the mark along (sys_mark_drop). */
	if (v != NULL)
		leave((struct vproc *)vp_current());
}

bool sys_mark_drop(struct vproc *v)
{
	if (atomic_load_explicit(&v->in_syscall, memory_order_relaxed) == SYS_OUT)
		return false;
	leave(v);
	return true;
}

void monitor_reclaim(struct vproc *v)
{
	spin_lock(&mon.lock);
	struct vproc *s = atomic_load_explicit(&v->lent_to, memory_order_relaxed);
	if (s != NULL) {
		atomic_store_explicit(&v->lent_to, NULL, memory_order_relaxed);
		s->lender = NULL;
		if (s->spare)   /* not if pthread_setconcurrency adopted it */
			atomic_store_explicit(&s->retired, true, memory_order_seq_cst);
	}
	spin_unlock(&mon.lock);
	/* Asleep in its idle loop, it would not notice before its next
	 * wake-up: send it to retire() now. */
	int one = 1;
	if (s != NULL && atomic_compare_exchange_strong(&s->sleeping, &one, 0))
		vp_resume(&s->vp);
}

/* ---- spares -------------------------------------------------------------------- */

/* A retired spare still runs the thread it had when its lender came back,
 * until that thread switches: if the thread blocks in the kernel (a reader
 * in read, a worker in epoll_wait), work lent to the spare waits for it.
 * Free is: standing in for nobody, in its idle loop (cur_prio -1), in no
 * system call and not lent itself. */
static bool spare_free(struct vproc *s)
{
	return atomic_load_explicit(&s->lender, memory_order_relaxed) == NULL &&
	       atomic_load_explicit(&s->lent_to, memory_order_relaxed) == NULL &&
	       atomic_load_explicit(&s->in_syscall, memory_order_seq_cst) == SYS_OUT &&
	       atomic_load_explicit(&s->cur_prio, memory_order_relaxed) < 0;
}

/* A free spare, or a new one (parked: retired until lent).  Only the
 * monitor calls this. */
static struct vproc *spare_get(void)
{
	for (int i = 0; i < ppl_rt.nvps_total; i++) {
		struct vproc *s = ppl_rt.vps[i];
		if (s != NULL && s->spare && spare_free(s))
			return s;
	}
	struct vproc *s = aligned_alloc(64, (sizeof *s + 63) & ~(size_t)63);
	if (s == NULL)
		return NULL;
	memset(s, 0, sizeof *s);
	if (vproc_parts_init(s) != 0) {
		free(s->heap);
		free(s);
		return NULL;
	}
	atomic_store(&s->retired, true);
	s->spare = true;
	spin_lock(&ppl_rt.lock);
	int id = ppl_rt.nvps_total;
	if (id >= PPL_MAX_VPS) {
		spin_unlock(&ppl_rt.lock);
		free(s->heap);
		free(s);
		return NULL;
	}
	s->vp.id = id;
	/* Publish a fully initialised VP: stealers read the array unlocked. */
	atomic_thread_fence(memory_order_release);
	ppl_rt.vps[id] = s;
	ppl_rt.nvps_total = id + 1;
	int err = ppl_vp_create(s);
	if (err) {
		ppl_rt.vps[id] = NULL;
		ppl_rt.nvps_total = id;
		spin_unlock(&ppl_rt.lock);
		free(s->heap);
		free(s);
		return NULL;
	}
	spin_unlock(&ppl_rt.lock);
	monitor_count_kthread();
	return s;
}

/* Lend v's work to a spare.  announced: v was seen in a call (CAS it). */
static void lend(struct vproc *v, bool announced)
{
	struct vproc *s = spare_get();
	if (s == NULL) {
		/* No kernel thread to be had (RLIMIT_AS, RLIMIT_NPROC, ...): the
		 * call goes on without a hand-off and v's work waits for it, or
		 * for the next look, when a spare may be had. */
		atomic_fetch_add_explicit(&mon.handoff_fails, 1, memory_order_relaxed);
		return;
	}
	spin_lock(&mon.lock);
	int in = SYS_IN;
	if (atomic_load_explicit(&v->lent_to, memory_order_relaxed) != NULL ||
	    (announced && !atomic_compare_exchange_strong_explicit(&v->in_syscall, &in, SYS_LENT,
								   memory_order_seq_cst,
								   memory_order_relaxed))) {
		spin_unlock(&mon.lock);
		return;   /* the call returned meanwhile */
	}
	s->lender = v;
	atomic_store_explicit(&v->lent_to, s, memory_order_relaxed);
	atomic_store_explicit(&s->retired, false, memory_order_seq_cst);
	spin_unlock(&mon.lock);
	atomic_fetch_add_explicit(&mon.handoffs, 1, memory_order_relaxed);
	ppl_trace(TR_HANDOFF, v->vp.id, s->vp.id);
	/* The spare steals v's queue like any idle VP. */
	vp_resume(&s->vp);
}

/* ---- the monitor's loop ---------------------------------------------------------- */

/* Wake one VP asleep in its idle loop: it steals queued threads and runs
 * every VP's due timers there.  False if none sleeps. */
static bool wake_sleeper(void)
{
	for (int i = 0; i < ppl_rt.nvps_total; i++) {
		struct vproc *o = ppl_rt.vps[i];
		int one = 1;
		if (o != NULL && o->bound_to == NULL && !atomic_load(&o->retired) &&
		    atomic_compare_exchange_strong(&o->sleeping, &one, 0)) {
			vp_resume(&o->vp);
			return true;
		}
	}
	return false;
}

/* v is stuck in the kernel with work: first wake an idle VP, which is
 * cheaper than a spare; if that did not help by the next look, lend. */
static void unstick(struct vproc *v, int64_t stuck, int64_t after, bool announced)
{
	if (stuck < 2 * after && wake_sleeper())
		return;
	lend(v, announced);
}

static void wait_min(int64_t *wait, int64_t ns)
{
	if (*wait < 0 || ns < *wait)
		*wait = ns;
}

/* Threads queued on v, or on the VPs it stands in for (a spare took over
 * their work: nobody else will run it); *deadline is their earliest timer. */
static bool has_work(struct vproc *v, int64_t *deadline)
{
	bool queued = false;
	*deadline = INT64_MAX;
	spin_lock(&mon.lock);
	for (int hops = 0; v != NULL && hops < PPL_MAX_VPS; v = v->lender, hops++) {
		if (atomic_load_explicit(&v->rq_len, memory_order_seq_cst) > 0)
			queued = true;
		int64_t d = atomic_load_explicit(&v->next_deadline, memory_order_acquire);
		if (d < *deadline)
			*deadline = d;
	}
	spin_unlock(&mon.lock);
	return queued;
}

/* Look at every VP once; lend those that are stuck.  Work is a thread on
 * the VP's queue or one of its timers due (a thread sleeping or waiting
 * with a timeout there).  Returns how long to wait before the next look,
 * or -1 if nothing needs watching. */
static int64_t last_change;   /* when scan last saw a VP switch or call: the monitor's */

static int64_t scan(int64_t now)
{
	int64_t wait = -1;
	/* An asynchronous cancel not yet acted on: look again soon, and
	 * signal the VPs whose thread has one (cancel.c), lent ones too. */
	bool owed = cancel_async_owed();
	if (owed)
		wait_min(&wait, POLL_SLOW_NS);
	/* Signals held over libppl's code (sig.h) that wait too long. */
	bool held = atomic_load_explicit(&preempt_nheld, memory_order_seq_cst) != 0;
	if (held)
		wait_min(&wait, POLL_SLOW_NS);
	for (int i = 0; i < ppl_rt.nvps_total; i++) {
		struct vproc *v = ppl_rt.vps[i];
		if (owed && v != NULL)
			cancel_async_watch(v);
		if (held && v != NULL)
			preempt_held_watch(v, now);
		/* A retired VP still counts while its kernel thread is in a
		 * call or runs its last thread (which may block unannounced):
		 * threads pushed on it just before it retired, and timers
		 * armed while it ran, wait for it there. */
		if (v == NULL || v->bound_to != NULL ||
		    (atomic_load(&v->retired) &&
		     atomic_load_explicit(&v->in_syscall, memory_order_seq_cst) == SYS_OUT &&
		     atomic_load_explicit(&v->cur_prio, memory_order_relaxed) < 0) ||
		    atomic_load_explicit(&v->lent_to, memory_order_relaxed) != NULL)
			continue;
		unsigned long sw = atomic_load_explicit(&v->stats.switches, memory_order_relaxed);
		unsigned long seq = atomic_load_explicit(&v->sys_seq, memory_order_relaxed);
		if (sw != v->mon_switches || seq != v->mon_seq) {
			v->mon_switches = sw;
			v->mon_seq = seq;
			v->mon_since = now;
			last_change = now;
		}
		int64_t deadline;
		bool queued = has_work(v, &deadline);
		if (atomic_load_explicit(&v->sleeping, memory_order_relaxed)) {
			v->mon_since = now;   /* idle: it looks for work itself */
			/* With work queued it was just woken (a spare the
			 * monitor lent to, a push): it may take one thread and
			 * block in the kernel with the rest still queued, and
			 * nobody would kick a sleeping monitor (td_tsan: a
			 * spare took TSan's background thread, which sleeps in
			 * raw nanosleep, and left the worker queued forever). */
			if (queued)
				wait_min(&wait, POLL_SLOW_NS);
			continue;
		}
		bool in = atomic_load_explicit(&v->in_syscall, memory_order_seq_cst) == SYS_IN;
		if (!queued && deadline > now) {
			v->mon_since = now;   /* nothing waits for it yet */
			/* In a call, look when the timer is due.  Out of one,
			 * its kernel thread may block in a call it does not
			 * announce (pause(), a raw futex) before then, with
			 * nobody else to fire the timer (tst-join15: a timed
			 * join beside a thread in pause()): look when such a
			 * block could be noticed, STUCK_NS after the timer. */
			if (deadline < INT64_MAX - STUCK_NS)
				wait_min(&wait, deadline - now + (in ? 0 : STUCK_NS));
			continue;
		}
		int64_t stuck = now - v->mon_since;
		if (in) {
			if (stuck >= HANDOFF_NS) {
				unstick(v, stuck, HANDOFF_NS, true);
				wait_min(&wait, HANDOFF_NS);
				continue;
			}
			wait_min(&wait, HANDOFF_NS - stuck);
			continue;
		}
		if (stuck >= STUCK_NS) {
			int st = vp_kernel_state(&v->vp);
			if (st == 'S' || st == 'D') {
				unstick(v, stuck, STUCK_NS, false);
				wait_min(&wait, POLL_SLOW_NS);
				continue;
			}
		}
		wait_min(&wait, POLL_SLOW_NS);
	}
	return wait;
}

static void nap(int64_t ns)
{
	struct timespec ts = ns_to_timespec(ns);
	vp_kthread_sleep(CLOCK_MONOTONIC, 0, &ts, NULL);
}

/* Every VP went idle with no timers: look twice, QUIET_NS apart. */
static void idle_check(void)
{
	atomic_store_explicit(&mon.idle_check, false, memory_order_seq_cst);
	unsigned long m1, m2;
	if (!deadlock_snapshot(&m1) || (mon.reported && m1 == mon.reported_mark))
		return;
	nap(QUIET_NS);
	/* Nothing ran in between (the mark counts every switch and call). */
	if (!deadlock_snapshot(&m2) || m1 != m2)
		return;
	deadlock_report();
	mon.reported = true;
	mon.reported_mark = m1;
}

/* A look due within POLL_SLOW_NS: a plain nap.  Anything longer (nothing
 * to watch, or only a timer far off on a VP in a system call) is a sleep
 * that the wakers can cut short: a thread queued meanwhile on a VP stuck
 * in the kernel must not wait for that timer (a leader of a process-shared
 * wait with a two-minute deadline left its VP's queue unserved that long). */
static bool short_wait(int64_t wait)
{
	return wait >= 0 && wait <= POLL_SLOW_NS;
}

/* Stopped for retire.c: wait for its verdict.  True: end the thread. */
static bool halted(void)
{
	atomic_store_explicit(&mon.halt_ack, 1, memory_order_seq_cst);
	for (;;) {
		uint32_t seen = atomic_load_explicit(&mon.word, memory_order_acquire);
		int h = atomic_load_explicit(&mon.halt, memory_order_seq_cst);
		if (h == 0) {
			atomic_store_explicit(&mon.halt_ack, 0, memory_order_seq_cst);
			return false;
		}
		if (h == 2) {
			/* Its last touch of libppl's state: the thread ends. */
			atomic_store_explicit(&mon.halt_ack, 2, memory_order_seq_cst);
			return true;
		}
		futex_wait(&mon.word, seen, NULL, CLOCK_MONOTONIC);
	}
}

bool monitor_halt(int h)
{
	if (!atomic_load_explicit(&mon.running, memory_order_acquire))
		return false;
	atomic_store_explicit(&mon.halt, h, memory_order_seq_cst);
	atomic_fetch_add_explicit(&mon.word, 1, memory_order_release);
	futex_wake(&mon.word, 1);
	return true;
}

int monitor_halt_ack(void)
{
	if (!atomic_load_explicit(&mon.running, memory_order_acquire))
		return 2;
	return atomic_load_explicit(&mon.halt_ack, memory_order_seq_cst);
}

static void monitor_main(void *arg)
{
	(void)arg;
	tls_keep_kthread(NULL);
	for (;;) {
		if (ppl_unlikely(atomic_load_explicit(&mon.halt, memory_order_seq_cst)) && halted())
			return;
		if (atomic_load_explicit(&mon.idle_check, memory_order_seq_cst))
			idle_check();
		if (atomic_exchange_explicit(&mon.want_catcher, false, memory_order_seq_cst))
			sig_catcher_start();
		int64_t now = clock_now_ns(CLOCK_MONOTONIC);
		int64_t wait = scan(now);
		if (short_wait(wait)) {
			nap(wait);
			continue;
		}
		uint32_t seen = atomic_load_explicit(&mon.word, memory_order_acquire);
		if (now - last_change < LINGER_NS) {
			/* The program switches: look again soon, awake, rather
			 * than sleep and be kicked by the next push (a futex
			 * wake in every pthread_create or wake-up of a thread
			 * that is queued while it sleeps).  On the futex, so
			 * that retire.c's halt ends the wait. */
			struct timespec until = ns_to_timespec(now + POLL_SLOW_NS);
			futex_wait(&mon.word, seen, &until, CLOCK_MONOTONIC);
			continue;
		}
		/* The deadline itself (a VP's next timer), so that a call
		 * announced with that same timer does not kick. */
		atomic_store_explicit(&wake_at, wait >= 0 ? now + wait : INT64_MAX,
				      memory_order_seq_cst);
		atomic_store_explicit(&monitor_asleep, 1, memory_order_seq_cst);
		/* The look after publishing: a call announced before it is seen
		 * here, one after it read wake_at and kicks if it must. */
		if (atomic_load_explicit(&mon.idle_check, memory_order_seq_cst) ||
		    atomic_load_explicit(&mon.want_catcher, memory_order_seq_cst) ||
		    short_wait(wait = scan(now))) {
			atomic_store_explicit(&monitor_asleep, 0, memory_order_seq_cst);
			atomic_store_explicit(&wake_at, 0, memory_order_relaxed);
			continue;
		}
		struct timespec until = ns_to_timespec(now + wait);
		futex_wait(&mon.word, seen, wait >= 0 ? &until : NULL, CLOCK_MONOTONIC);
		atomic_store_explicit(&monitor_asleep, 0, memory_order_seq_cst);
		atomic_store_explicit(&wake_at, 0, memory_order_relaxed);
	}
}

void monitor_fork_child(void)
{
	/* The monitor thread and the spares did not survive the fork. */
	spin_init(&mon.lock);
	atomic_store_explicit(&mon.kthreads, 1, memory_order_relaxed);
	atomic_store_explicit(&mon.idle_check, false, memory_order_relaxed);
	atomic_store_explicit(&mon.want_catcher, false, memory_order_relaxed);
	atomic_store_explicit(&monitor_asleep, 0, memory_order_relaxed);
	atomic_store_explicit(&wake_at, INT64_MAX, memory_order_relaxed);
	mon.reported = false;
	atomic_store_explicit(&mon.running, false, memory_order_relaxed);
	atomic_store_explicit(&mon.halt, 0, memory_order_relaxed);
	atomic_store_explicit(&mon.halt_ack, 0, memory_order_relaxed);
}

void monitor_start(void)
{
	if (vp_helper_create(monitor_main, NULL) == 0) {
		atomic_store_explicit(&mon.running, true, memory_order_release);
		monitor_count_kthread();
	}
}

/* Hand-off state: nothing is lent in the child. */
void monitor_vp_fork_child(struct vproc *v, struct ult *self)
{
	atomic_store_explicit(&v->in_syscall, 0, memory_order_relaxed);
	v->lent_to = NULL;
	v->lender = NULL;
	v->spare = false;
}
