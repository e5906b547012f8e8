/* Private structures of the VP-independent module: the thread control block
 * (struct ult), per-VP scheduler state, wait queues, timers, and the
 * scheduler calls the synchronisation objects are built on. */
#ifndef PPL_PTHREAD_IMPL_H
#define PPL_PTHREAD_IMPL_H

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "../vpdep/vpdep.h"
#include "tls.h"
#include "vpindep.h"

#define PPL_HIDDEN __attribute__((visibility("hidden")))
#define PPL_API __attribute__((visibility("default")))
#define PPL_MUST_CHECK __attribute__((warn_unused_result))

/* Always-on check of libppl's own invariants. */
#define ppl_assert(cond)                                                         \
	do {                                                                     \
		if (ppl_unlikely(!(cond)))                                       \
			ppl_fatal("assertion failed: %s (%s:%d)", #cond, __FILE__, __LINE__); \
	} while (0)

/* One line on stderr naming the current thread and the cause, then abort. */
_Noreturn void ppl_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- stacks (stack.c) ------------------------------------------------------ */

struct stack {
	void *lo;          /* lowest usable address */
	size_t size;       /* usable bytes, above the guard */
	void *guard_lo;    /* guard region [guard_lo, guard_lo + guard) below lo */
	size_t guard;
	bool user;         /* supplied by the application: never freed or cached */
	unsigned vg_id;    /* valgrind's id for it (stack_vg_register), or 0 */
};

/* Allocate a stack of `size` usable bytes with a guard of `guard` bytes. */
int stack_alloc(size_t size, size_t guard, struct stack *out) PPL_MUST_CHECK;
void stack_free(struct stack *s);
size_t stack_default_size(void);   /* PPL_STACK_SIZE, else RLIMIT_STACK, else 8 MiB */
bool stack_guard_contains(const struct stack *s, const void *addr);
/* Tell valgrind (when libppl runs under it) that s is a stack, so that a
 * switch onto it is not "client switching stacks?"; stack_alloc and
 * stack_free do it for theirs, thread.c for the application's. */
void stack_vg_register(struct stack *s);
void stack_vg_deregister(struct stack *s);

/* ---- wait queues (waitq.c) --------------------------------------------------
 * An intrusive FIFO of parked threads.  Always protected by a spin lock that
 * belongs to the object the queue is part of. */

struct ult;

struct waitq {
	struct ult *head;
	struct ult *tail;
};

void waitq_push(struct waitq *q, struct ult *t);
struct ult *waitq_pop(struct waitq *q);         /* NULL if empty */
bool waitq_remove(struct waitq *q, struct ult *t); /* false if t was not queued */
/* Drop the parent's threads from the head of q (in a forked child). */
void waitq_prune(struct waitq *q);
static inline bool waitq_empty(struct waitq *q)
{
	if (ppl_likely(q->head == NULL))
		return true;
	waitq_prune(q);
	return q->head == NULL;
}

/* ---- timers (timer.c): per-VP deadline heaps ---------------------------------- */

enum { TIMER_IDLE, TIMER_PENDING, TIMER_FIRING };

struct timer {
	int64_t deadline;         /* CLOCK_MONOTONIC ns */
	void (*fire)(struct timer *);
	_Atomic int state;        /* TIMER_*; FIRING while fire() runs */
	struct vproc *owner;      /* heap it is queued on, under owner->timer_lock */
	size_t index;             /* position in owner's heap */
};

void timer_arm(struct timer *tm, int64_t deadline_mono_ns, void (*fire)(struct timer *));
/* v's first TIMER_HEAP_FIRST slots, by the thread that makes v; ENOMEM. */
int timer_heap_init(struct vproc *v);
/* Remove tm if pending; if it is firing, wait until fire() returns. */
void timer_cancel(struct timer *tm);
/* Run the expired timers of `vp`; returns ns until its next deadline or -1. */
int64_t timer_run_expired(struct vproc *vp);

/* ---- thread control block --------------------------------------------------- */

enum ult_state {
	ULT_RUNNING,   /* on a VP, or a foreign kernel thread executing */
	ULT_READY,     /* on a run queue */
	ULT_BLOCKED,   /* parked on a wait queue, a timer or a join */
	ULT_EXITING,   /* called pthread_exit, still on its stack */
	ULT_ZOMBIE,    /* off its stack; waiting to be joined */
	ULT_FREE,      /* recycled into the TCB cache: a stale pthread_t */
};

#define PPL_KEY_BLOCK 32
#define PPL_PRIO_HELD 8    /* PI/PP mutexes a thread holds with effect */
#define PPL_KEY_BLOCKS (PTHREAD_KEYS_MAX / PPL_KEY_BLOCK)

struct ult {
	struct ctx ctx;            /* saved machine context while not running */
	struct ult *next;          /* run-queue or wait-queue link (one at a time) */
	struct ult *prev;          /* wait-queue back link */
	_Atomic int state;         /* enum ult_state */
	bool foreign;              /* a kernel thread libppl did not create */
	bool is_main;              /* the process's initial thread */
	bool bound;                /* owns a VP of its own (PTHREAD_SCOPE_SYSTEM with
				    * PPL_SYSTEM_SCOPE=bound) */
	bool sys_scope;            /* created with PTHREAD_SCOPE_SYSTEM, bound or not */
	struct vproc *vp;          /* VP it last ran on (valid while on a run queue) */
	struct vproc *queued_on;   /* run queue it was last put on (sched_requeue's hint) */
	struct vproc *home;        /* VP it must run on, or NULL: a bound thread's own
				    * VP; VP 0 for the main thread in shared-TLS mode */
	int saved_errno;           /* errno across switches (shared-TLS mode) */
	void *tls;                 /* per-thread TLS: this TCB's glibc block (thread
				    * pointer), made with the TCB and pooled with it */
	unsigned tls_sel;          /* its %fs selector (ldt switch method), or 0 */
	unsigned tls_countdown;    /* entries into its block until the block gets an
				    * LDT entry; 0: nothing to do (ult_tls_entered) */
	bool tls_used;             /* the block has run a thread before */

	void *(*start)(void *);
	void *arg;
	void *result;              /* pthread_exit value */

	/* lifecycle, under `lock` */
	spin_t lock;
	bool detached;
	bool joined;               /* a joiner has claimed it */
	struct ult *joining;       /* thread this one is joining (EDEADLK check) */
	struct waitq joinq;        /* the (single) joiner */
	unsigned long id;          /* sequence number, for messages */

	struct stack stack;
	size_t attr_guard;         /* as requested, for pthread_getattr_np */
	int sched_policy;
	struct sched_param sched_param;
	int prio;                  /* effective priority: sched_priority under SCHED_FIFO
				    * and SCHED_RR, 0 otherwise (sched.c orders by it),
				    * or a PI/PP boost above it (mutex_prio.c) */
	int kclass;                /* its VP's kernel class while it runs (ult_kclass) */
	bool inherit_sched;
	int nice;                  /* its nice value (nice.c), inherited at create */
	void *cpuset;              /* pthread_setaffinity_np's set (malloc'd), or NULL:
				    * the process's; freed when the TCB is recycled */
	size_t cpusetsize;
	char name[16];

	/* waiting: set by the waiter before parking, read under the object lock */
	spin_t *wait_lock;         /* lock protecting the queue it waits on */
	struct waitq *wait_q;      /* queue it waits on, NULL for a plain sleep */
	_Atomic uint32_t wake;     /* foreign: futex word set by sched_wake */
	int wait_result;           /* 0 or ETIMEDOUT */
	int64_t park_since;        /* CLOCK_MONOTONIC_COARSE ns of its last park, for
				    * debuggers (tools/gdb/libppl.py) */
	struct timer timer;

	/* thread-specific data (key.c), touched only by the thread itself: keys
	 * 0..31 inline, block b (keys 32b..32b+31, b >= 1) calloc'd by the first
	 * pthread_setspecific of a non-NULL value there; specific[0] is unused.
	 * A slot's value counts only while its seq equals the key's, so a
	 * deleted and re-created key reads NULL.  key_run_destructors clears
	 * the slots and frees the blocks, so a recycled TCB starts empty. */
	struct key_slot {
		uintptr_t seq;
		void *value;
	} specific_1st[PPL_KEY_BLOCK];
	struct key_slot *specific[PPL_KEY_BLOCKS];
	bool specific_used;        /* a value was stored since the last clear */

	/* signals (signal.c) */
	uint64_t sigmask;          /* blocked set (bit sig-1); the thread's own, written
				    * only by itself, installed on its VP when it resumes */
	_Atomic uint64_t sigpending; /* directed at it and not yet raised */
	_Atomic uint64_t sigwaiting; /* in sigwait & co. for these (signal.c) */
	uintptr_t sig_unsafe;      /* the frame of its outermost handler that runs over
				    * code where it may not be switched out (the C
				    * library's), or 0 (preempt.c) */
	bool sig_yielding;         /* yields after a handler it took (sigroute.c) */
	int64_t cpu_ns;            /* CPU time up to its last switch-out (cpuclock.c) */
	int64_t cpu_since;         /* its kernel thread's CPU time at switch-in, or 0 */
	int cpu_clock;             /* its clock's slot + 1, or 0 (cpuclock.c) */
	_Atomic int64_t cputimer_due; /* CPU time its first CPU-time timer is due, or 0 (cputimer.c) */
	int ktid;                  /* foreign threads: the kernel thread id */

	struct ult *cache_next;    /* free-list link in the TCB cache */
	struct ult *all_next;      /* every TCB ever allocated (deadlock.c); set once */

	/* cancellation (cancel.c, unwind.c); reset by tcb_get */
	_Atomic int cancel;        /* CANCEL_* bits: written by the thread, and
				    * CANCEL_PENDING by pthread_cancel (seq_cst) */
	_Atomic(spin_t *) park_lock; /* lock of the queue of the last park; with
				    * wait_q != NULL, under that lock, t is parked there */
	int park_flags;            /* PARK_* of that park (under park_lock) */
	struct vproc *_Atomic cp_vp; /* VP whose kernel thread runs its cancellable
				    * system call, or NULL (cancel.c) */
	/* process-shared waits (parklot.c) */
	const void *pwait;         /* word it follows a leader on, under the bucket lock, */
	uint32_t pwait_val;        /* ... while the word holds this value */
	_Atomic uint32_t kintr;    /* bumped to interrupt its kernel-level wait */
	_Atomic int kwait;         /* nonzero while in one (parklot.c: KWAIT_ON | PARK_CP) */
	spin_t sleep_lock;         /* a cancellable sleep parks on sleep_q under it */
	struct waitq sleep_q;
	struct _pthread_cleanup_buffer *cleanup;  /* _pthread_cleanup_push list */
	void *cleanup_jmp;         /* __pthread_register_cancel list (unwind.c) */
	void *landing;             /* ult_entry's jmp_buf: where an unwind ends */
	__pthread_unwind_buf_t libc_unwind; /* where glibc's unwinder goes (tls.h) */
	_Alignas(16) unsigned char unwind_exc[64]; /* struct _Unwind_Exception of
				    * the unwind in progress: off the stack, which
				    * the landing pads reuse */
	unsigned fork_gen;         /* ppl_rt.fork_gen when made: an older one is a
				    * thread of the parent, absent in a forked child */
	unsigned robust_held;      /* robust mutexes it holds (mutex_robust.c); 0 at exit */
	/* priority protocols (mutex_prio.c), under its prio_lock */
	void *prio_held[PPL_PRIO_HELD]; /* PI and PP mutexes it holds */
	int prio_ceil[PPL_PRIO_HELD];   /* their ceilings, -1 for PI */
	int prio_nheld;
	void *prio_wait;           /* PI mutex it waits for, or NULL */
	struct ult *prio_next;     /* list of threads with prio_nheld > 0 */
};

/* struct ult's `cancel` word */
#define CANCEL_DISABLED 1          /* PTHREAD_CANCEL_DISABLE */
#define CANCEL_ASYNC    2          /* PTHREAD_CANCEL_ASYNCHRONOUS */
#define CANCEL_PENDING  4          /* pthread_cancel was called */
#define CANCEL_ACTING   8          /* unwinding (cancelled or pthread_exit): no more acting */

/* ---- per-VP scheduler state ---------------------------------------------------- */

struct vproc {
	struct vp vp;              /* vpdep part; must stay first */
	spin_t rq_lock;            /* protects rq_head/rq_tail/rt_head/rq_len */
	struct ult *rq_head, *rq_tail; /* ready threads of priority 0, FIFO */
	struct ult *rt_head;       /* ready threads of priority > 0, highest first */
	_Atomic long rq_len;       /* both lists */
	_Atomic int rq_top;        /* rt_head's priority, 0 if none (a hint) */
	_Atomic int cur_prio;      /* current's priority, -1 in the idle loop */
	struct ult *current;       /* thread running on this VP (NULL in the idle loop) */
	struct ctx idle_ctx;       /* the VP's scheduler loop */
	struct stack idle_stack;   /* VP 0 only: the others use their kernel stack */
	_Atomic int sleeping;      /* 1 while suspended in the idle loop */
	struct ult *bound_to;      /* PTHREAD_SCOPE_SYSTEM thread owning this VP */
	bool dedicated;            /* made for SCOPE_SYSTEM threads: runs none other,
				    * even between two of them (set before the VP
				    * starts, never cleared but by fork) */
	struct vproc *spare_next;  /* link in ppl_rt.spare_bound */
	_Atomic bool retired;      /* set aside: by pthread_setconcurrency, or a spare bound VP */

	spin_t timer_lock;         /* protects the heap */
	struct timer **heap;
	size_t heap_len, heap_cap;
	_Atomic int64_t next_deadline; /* earliest deadline, INT64_MAX if none */


	ctx_fn after_fn;           /* run once right after switching to a context */
	void *after_arg;

	/* preemption (preempt.c): written by this VP's own code and its tick
	 * handler, which runs on the same kernel thread */
	_Atomic bool preempt_pending;   /* a deferred preemption is owed */
	unsigned char handler_defers;   /* ticks deferred for a handler over the C library (preempt.c) */
	_Atomic bool prio_kick;    /* a thread of higher priority than current was
				    * queued here: preempt at once (preempt.c) */
	unsigned long preempt_switches; /* stats.switches when it was deferred */
	unsigned long tick_switches;    /* stats.switches at the last tick */
	_Atomic int cancel_sig;    /* set before pthread_cancel signals this VP (cancel.c) */
	_Atomic int cancel_inflight;   /* its signals sent and not yet handled (cancel.c) */
	struct ult *_Atomic cp_ult; /* thread in a cancellable system call on this
				    * VP's kernel thread, or NULL (cancel.c) */
	void (*cp_undo)(void *);   /* its cancel_syscall_enter arguments */
	void *cp_arg;

	struct {                   /* PPL_STATS counters, owned by this VP */
		_Atomic unsigned long switches; /* also read by the monitor (progress) */
		unsigned long steals, parks, wakes, creates;
		unsigned long syscalls;    /* announced blocking calls (blocking.c) */
		unsigned long preempts, preempts_deferred;
	} stats;

	/* Blocking system calls (monitor.c).  in_syscall is SYS_OUT or SYS_IN,
	 * written by the VP's own kernel thread around an announced call; the
	 * monitor moves it SYS_IN -> SYS_LENT when it hands the VP's work to a
	 * spare, and the kernel thread finds that out when the call returns. */
	_Atomic int in_syscall;
	_Atomic unsigned long sys_seq; /* announced calls begun (the VP writes it) */
	struct vproc *_Atomic lent_to; /* spare standing in for this VP, or NULL;
					* set and cleared under the monitor's lock */
	struct vproc *_Atomic lender; /* a spare: the VP it stands in for, same lock;
				   * sys_enter reads it unlocked as a hint */
	bool spare;                /* created by the monitor, beyond nvps */
	unsigned long mon_seq, mon_switches; /* the monitor's last sample of this VP */
	int64_t mon_since;         /* when the monitor last saw it make progress */
};

enum { SYS_OUT, SYS_IN, SYS_LENT };

/* ---- the runtime (init.c) -------------------------------------------------------- */

#define PPL_MAX_VPS 1024

struct runtime {
	_Atomic int started;       /* VPs running (after the first pthread_create) */
	int nvps;                  /* VPs that run unbound threads */
	int nvps_total;            /* including VPs bound to SCOPE_SYSTEM threads */
	struct vproc *vps[PPL_MAX_VPS];
	_Atomic int nspinning;     /* idle VPs looking for work, not yet asleep */
	_Atomic int nsleeping;
	_Atomic long nthreads;     /* live threads, including main; exit(0) at 0 */
	int concurrency;           /* pthread_setconcurrency's value */
	struct ult main_ult;
	uintptr_t main_kthread;      /* the initial kernel thread (vp_kthread_handle) */
	spin_t lock;               /* start-up, VP list, concurrency changes */
	bool stats;                /* PPL_STATS=1 */
	int debug;                 /* PPL_DEBUG level */
	int env_vps;               /* PPL_VPS, 0 if unset */
	struct vproc *spare_bound; /* VPs of exited SCOPE_SYSTEM threads, for reuse */
	_Atomic int rt_ready;      /* threads of priority > 0 on run queues (sched.c) */
	unsigned fork_gen;         /* forks this process descends from (fork.c) */
};

extern struct runtime ppl_rt PPL_HIDDEN;

extern bool ppl_env_tls_per_thread PPL_HIDDEN;   /* PPL_TLS asks for per-thread */
extern bool ppl_env_system_bound PPL_HIDDEN;     /* PPL_SYSTEM_SCOPE=bound */
/* PPL_TLS_LDT_AFTER: with the ldt switch method a block gets its LDT entry
 * when its thread is resumed for the Nth time (sched.c's tls_resumed); 0:
 * when the block is made. */
extern unsigned ppl_env_tls_ldt_after PPL_HIDDEN;
/* sched.c: the thread on its block has started or resumed; counts down to
 * the block's LDT entry (called only while t->tls_countdown != 0). */
void ult_tls_entered(struct ult *t) PPL_HIDDEN;
extern enum ctx_tls_switch ppl_env_tls_switch PPL_HIDDEN;   /* PPL_TLS_SWITCH */
/* sched.c: fire the due timers of v and of other VPs; ns until v's next
 * (or the lent VP's it stands in for), -1 if none. */
int64_t sched_run_timers(struct vproc *v);
/* Read the environment knobs once (a bad value is fatal, naming the variable). */
void ppl_env_init(void);
/* vp_create for a VP running sched_vp_main.  0 or errno. */
int ppl_vp_create(struct vproc *v) PPL_MUST_CHECK;
/* Start the VPs if they are not running yet. 0 or errno. */
int ppl_runtime_start(void) PPL_MUST_CHECK;
/* PTHREAD_SCOPE_SYSTEM: give t a VP of its own and make it ready there. */
int ppl_bind_new_vp(struct ult *t) PPL_MUST_CHECK;
/* t (bound) has exited: its VP becomes a spare for the next bound thread. */
void ppl_unbind_vp(struct ult *t);

/* ---- the scheduler (sched.c): the only caller of ctx_switch* -------------------- */

/* The calling thread's TCB; on a foreign kernel thread a TCB is created on
 * first use (never fails: falls back to a static emergency record). */
struct ult *ult_self(void);
/* The same, but NULL for a kernel thread libppl has made no TCB for yet. */
struct ult *ult_self_peek(void);
/* Make t runnable.  t must be BLOCKED (popped from its wait queue by the
 * caller) or new.  Callable with an object lock held. */
void sched_wake(struct ult *t);
void sched_ready_new(struct ult *t);
/* Park the calling thread.  On entry the caller holds *lock (may be NULL)
 * and has pushed itself onto q (may be NULL for a plain sleep).  The lock is
 * released only after the thread is fully switched out.  With a deadline
 * (abstime on clock clk, NULL for none) the thread is removed from q and
 * ETIMEDOUT returned if it is not woken in time.  Returns 0 when woken. */
int sched_park(spin_t *lock, struct waitq *q, const struct timespec *abstime, clockid_t clk);
/* ---- cancellation points (cancel.c, sched.c) -----------------------------------
 * Deferred cancellation is acted on only where libppl checks for it.  A
 * blocking primitive that is a cancellation point:
 *  - calls cancel_point() on entry (before it changes any state);
 *  - parks with sched_park_cp (same contract as sched_park) instead of
 *    sched_park.  pthread_cancel wakes a thread parked there: it removes it
 *    from q under *lock and sched_park_cp returns ECANCELED (also at once if
 *    a cancel is already pending: then self has been removed from q).  The
 *    caller restores its invariants as for a time-out (cond_wait re-acquires
 *    the mutex), then calls cancel_act(), which does not return.
 * A thread with asynchronous cancellation enabled that is parked in plain
 * sched_park is woken too and unwinds from inside sched_park: its queue is
 * consistent (it was removed under the lock), the rest is the undefined
 * behaviour POSIX gives non-async-cancel-safe calls. */
int sched_park_cp(spin_t *lock, struct waitq *q, const struct timespec *abstime, clockid_t clk);
/* sched_sleep_until as a cancellation point that a signal interrupts:
 * 0, ECANCELED, or EINTR (the handler has run). */
int sched_sleep_until_cp(int64_t deadline_mono_ns);
/* sched_park with PARK_* flags.  With PARK_INTR, an unblocked signal sent
 * to the thread (pthread_kill) removes it from q under *lock, as a time-out
 * would, and the call returns EINTR once the handler has run in the thread;
 * the caller owns nothing it was waiting for and decides whether to wait
 * again.  Callers without it keep their signals handled by the sender. */
#define PARK_CP   1   /* a cancellation point (sched_park_cp) */
#define PARK_INTR 2   /* a signal interrupts the wait: EINTR */
int sched_park_flags(spin_t *lock, struct waitq *q, const struct timespec *abstime, clockid_t clk,
		     int flags);
/* End t's park early if it is one that `need` (PARK_* bits; 0: any) says
 * a request ends: under the park's lock, take t off its queue as its timer
 * would and wake it with `result` (ECANCELED, EINTR).  True if t is in
 * such a park (woken now, or already being woken by its waker or timer). */
bool sched_interrupt(struct ult *t, int need, int result);
/* Act on a pending cancellation request if cancellation is enabled. */
void cancel_point(void);
/* A deferred request t would act on at a cancellation point. */
bool cancel_requested(struct ult *t);
/* Act on the request now: unwind the calling thread with PTHREAD_CANCELED. */
_Noreturn void cancel_act(void);
/* Asynchronous type, enabled and pending: act now (after a libppl call that
 * such a thread may make, e.g. sched_yield, or a signal that found it in
 * libppl's code). */
void cancel_async_check(void);
/* The thread no longer acts on requests (unwinding, or returned). */
void cancel_exiting(struct ult *self);
/* The C library's own cancellation points (cancel.c, tls.h): at start-up
 * (the main thread's hook), for a new thread before it can be cancelled,
 * and first thing on the new thread (`hook` in its bottom frame). */
void cancel_init(void);
void cancel_thread_reset(struct ult *t);
void cancel_thread_start(struct _pthread_cleanup_buffer *hook);
/* pthread_cancel's side: wake t if it is parked where a cancel ends the wait. */
void cancel_wake(struct ult *t, bool async);
/* Around a blocking call of the C library that is a cancellation point
 * (blocking.c, sem.c): enter acts on a pending request, then marks the
 * thread so that pthread_cancel interrupts the call by signalling its
 * kernel thread (whose handler unwinds it if the call is still inside the
 * C library).  leave unmarks it and, if the call failed with EINTR, acts on
 * a pending request.  Returns/takes the VP marked (NULL for a foreign
 * thread, which is checked only before and after the call).  undo(arg),
 * if not NULL, restores the caller's invariants before an unwind from
 * enter or from the handler (sem.c: unregister a waiter). */
struct vproc *cancel_syscall_enter(void (*undo)(void *), void *arg);
void cancel_syscall_leave(struct vproc *v, bool eintr);
/* Unwind the calling thread to its landing point (unwind.c), running the
 * cleanup handlers and destructors of its frames; then ult_finish.  The
 * caller has set CANCEL_ACTING and self->result. */
_Noreturn void ult_unwind(void);
/* Load the unwinder (libgcc_s) if it is not loaded yet; fatal if missing. */
void unwind_prepare(void);
/* ult_entry: its landing buffer (a jmp_buf in its frame) for ult_unwind. */
void unwind_set_landing(struct ult *self, void *jmpbuf);
/* The end of every thread: destructors, then off its stack (thread.c). */
_Noreturn void ult_finish(struct ult *self);

/* Yield the VP to another ready thread of at least the caller's priority,
 * if there is one. */
void sched_yield_ult(void);
/* Yield to a ready thread of priority >= min, queueing the caller at the
 * back of its priority or, with front, at its head (preempted by a higher
 * one).  False if there was none (the caller goes on). */
bool sched_yield_min(int min, bool front);
/* Sleep until the absolute monotonic time; returns 0. */
int sched_sleep_until(int64_t deadline_mono_ns);
/* Leave the running thread for good (thread exit); does not return. */
_Noreturn void sched_exit(struct ult *self);
/* The VP's scheduler loop (the idle context of every VP). */
void sched_vp_main(struct vp *vp);
/* Push t to the VP-independent ready queues and wake an idle VP if needed. */
void sched_push(struct ult *t);
/* The calling thread's priority changed to t->prio: give way if a ready
 * thread now has a higher one (pthread_setschedparam & co.). */
void sched_prio_changed(void);
/* Another thread's priority changed: if it is ready on a run queue or
 * waits on a wait queue, queue it again there, at the back of its new
 * priority (as the kernel does for NPTL's threads and futex waiters). */
void sched_requeue(struct ult *t);
/* The user's sched_yield: as sched_yield_ult, and the kernel's sched_yield
 * when no user thread of at least the caller's priority is ready. */
void sched_yield_user(void);
/* Priority of the best ready thread of v's queue, or of any VP when a
 * real-time thread is queued somewhere (-1: none). */
int sched_top_ready(struct vproc *v);

/* ---- signals (signal.c) -------------------------------------------------------------- */

void sig_resumed_slow(struct ult *self, struct vproc *v);
/* The trampoline got `sig` as a poke for `target` (vp_poke): true if the
 * thread running here has it pending and unblocked and now owns it (run
 * the handler); false otherwise, after seeing to it that target gets it. */
bool sig_poke_claim(void *target, int sig);
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
/* cpuclock.c: CPU time accounting at a switch, once a program asked for
 * a thread's CPU clock (from or to may be NULL: the VP's idle loop). */
extern _Atomic bool cpu_counting;
void cpu_switch_slow(struct ult *from, struct ult *to);
static inline void cpu_switch(struct ult *from, struct ult *to)
{
	if (ppl_unlikely(atomic_load_explicit(&cpu_counting, memory_order_relaxed)))
		cpu_switch_slow(from, to);
}
/* The kernel's per-thread CPU clock of thread id tid (CPUCLOCK_SCHED). */
#define KERNEL_THREAD_CLOCK(tid) ((clockid_t)((~(unsigned)(tid) << 3) | 6))
/* cpuclock.c: the thread a CPU clock id names (*ours false: not a user
 * thread's clock, the kernel's to handle; NULL with *ours: gone), its CPU
 * time in ns, and the start of CPU time accounting. */
struct ult *cpuclock_thread(clockid_t c, bool *ours);
int64_t cpuclock_ns(struct ult *t);
void cpuclock_counting_start(void);
/* cputimer.c: t's CPU-time timers due by its CPU time `now` expire; the
 * check of the running thread at its VP's tick (not inside a lock). */
void cputimer_expire(struct ult *t, int64_t now);
/* A forked child has none of the parent's CPU-time timers. */
void cputimer_fork_child(void);
static inline void cputimer_tick(struct ult *t)
{
	if (ppl_unlikely(atomic_load_explicit(&t->cputimer_due, memory_order_relaxed) != 0))
		cputimer_expire(t, cpuclock_ns(t));
}
/* signal.c: *si to thread t through the kernel's queue (0 or errno). */
int sig_queue_ult(struct ult *t, siginfo_t *si);
/* blocking.c: the kernel's sigtimedwait, announced and a cancellation point. */
int sys_sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *ts);
/* The main thread's kernel thread becomes VP 0: its pending signals become the thread's. */
void sig_adopt_pending(struct ult *m);
/* On the VP's kernel thread: record the mask the kernel thread has. */
void sig_vp_init(struct vproc *v);
/* The class (VP_CLASS) a VP's kernel thread takes while t runs there. */
static inline int ult_kclass(const struct ult *t)
{
	return t->kclass;
}
/* What ult_kclass gives, computed whenever t's policy, priority or boost
 * changes (ult_set_sched, mutex_prio.c): a thread boosted by a PI or PP
 * mutex is real-time at that priority. */
static inline void ult_update_kclass(struct ult *t)
{
	if (ppl_unlikely(t->prio > t->sched_param.sched_priority))
		t->kclass = VP_CLASS(t->sched_policy == SCHED_RR ? SCHED_RR : SCHED_FIFO, t->prio);
	else
		t->kclass = VP_CLASS(t->sched_policy, t->sched_param.sched_priority);
}
/* Give v's kernel thread the class of t, which runs there: a compare, and
 * one system call only when they differ (vp_set_class). */
static inline void sched_class_sync(const struct ult *t, struct vproc *v)
{
	int c = ult_kclass(t);
	if (ppl_unlikely(c != atomic_load_explicit(&v->vp.kclass, memory_order_relaxed)))
		vp_set_class(&v->vp, c);
}
/* schedparam.c: t, real-time, is queued on v to run there next: raise
 * v's kernel thread to t's class if it ranks lower, so that the kernel
 * gives it a CPU that a lower real-time kernel thread holds. */
void sched_class_raise(struct vproc *v, const struct ult *t);
/* A new thread's mask is `set` instead of its creator's (attribute). */
void sig_thread_mask(struct ult *t, const sigset_t *set);
/* ---- process-directed signals (sigroute.c) ---- */
/* Claimed by the process, not yet taken by a thread (bit sig-1). */
extern _Atomic uint64_t sig_claims;
/* The trampoline got process-directed `sig` on a kernel thread where
 * `here` runs (NULL: none, or the catcher): true if the handler runs here
 * now; otherwise sig is a claim of the process, to be taken by another
 * thread.  here_asked: the kernel thread had it unblocked for here for a
 * while (sigsuspend, ppoll ...) though here blocks it. */
bool sig_route_here(int sig, const siginfo_t *si, struct ult *here, bool here_asked);
/* Take the claim of sig for self (its target, or anyone's), its siginfo
 * into *si; waiting: self waits for it in sigwait (blocks it). */
bool sig_take(struct ult *self, int sig, siginfo_t *si, bool waiting);
/* self, on its VP with its mask installed: run the handlers of the claims
 * it may take, each raised on this kernel thread with its siginfo. */
void sig_take_claims(struct ult *self, bool yield);
/* The claims t may take now (a park a signal ends does not begin then). */
uint64_t sig_claims_for(struct ult *t);
/* sigaction.c: run the application's action for sig, taken by the calling
 * user thread, whose mask is thread_mask, with si. */
void sig_run_taken(int sig, siginfo_t *si, uint64_t thread_mask);
/* kill or sigqueue of this process from a user thread, for a signal with
 * a handler: routed here and now, as the kernel would at once (the handler
 * runs in the caller before this returns if it is the one chosen).  False
 * if the caller must leave it to the kernel. */
bool sig_send_process(int sig, const siginfo_t *si);
void sig_catcher_start(void);
void sig_catcher_wake(void);
void sig_claims_fork_child(void);
/* sigaction.c: the signals the kernel runs the trampoline for. */
uint64_t sig_wrapped_set(void);

/* Called by a user thread each time it resumes: give its kernel thread its
 * scheduling class and its signal mask if its VP has others, and raise
 * what is pending for it. */
static inline void sig_resumed(struct ult *self)
{
	struct vproc *v = (struct vproc *)vp_current();
	sched_class_sync(self, v);
	if (ppl_unlikely(self->sigmask != v->vp.kmask ||
			 atomic_load_explicit(&self->sigpending, memory_order_relaxed) != 0 ||
			 atomic_load_explicit(&sig_claims, memory_order_relaxed) != 0))
		sig_resumed_slow(self, v);
}
/* ---- blocking system calls (monitor.c, blocking.c, deadlock.c) ------------------- */

/* The calling thread may block its kernel thread in the kernel: a foreign
 * one, or one bound to a VP of its own (PTHREAD_SCOPE_SYSTEM). */
static inline bool owns_kthread(void)
{
	struct vproc *v = (struct vproc *)vp_current();
	return v == NULL || v->bound_to != NULL;
}

/* Announce a possibly blocking call of the calling thread; returns its VP
 * (NULL when there is nothing to hand off: a foreign or bound thread).
 * Pass the result to sys_leave when the call has returned. */
struct vproc *sys_enter(void);
/* The call returned: take the VP back if the monitor lent it out.  Keeps errno. */
void sys_leave(struct vproc *v);
/* Start the monitor thread (ppl_runtime_start).  If no kernel thread can be
 * had, libppl runs without: a blocking call then stalls its VP's queue. */
void monitor_start(void);
/* In a forked child: forget the parent's monitor; restarted with the VPs. */
void monitor_fork_child(void);
/* Count a kernel thread libppl made (the deadlock check compares them). */
void monitor_count_kthread(void);
/* A thread became ready while the monitor may sleep: let it look. */
extern _Atomic int monitor_asleep PPL_HIDDEN;
void monitor_kick(void);
static inline void monitor_note_ready(void)
{
	if (ppl_unlikely(atomic_load_explicit(&monitor_asleep, memory_order_seq_cst)))
		monitor_kick();
}
/* A timer due at `deadline` became its VP's earliest: a sleeping monitor
 * that would look later must look then (the VP's kernel thread may block
 * in a call it does not announce, and nobody would fire the timer). */
void monitor_note_timer(int64_t deadline);
/* A VP goes to sleep with no timer of its own: maybe every thread is stuck. */
void monitor_note_idle(void);
/* Called by v's own kernel thread at a scheduling point while v is lent:
 * the spare standing in for it retires. */
void monitor_reclaim(struct vproc *v);
/* deadlock.c: 0 (off), 1 (warn), 2 (abort), from PPL_DEADLOCK */
extern int ppl_env_deadlock PPL_HIDDEN;
/* PPL_PROCESS_SIGNALS=thread: process-directed signals run in a user thread
 * that takes them (sigroute.c); vp (the default): on the VP that took them. */
extern bool ppl_env_sigroute PPL_HIDDEN;
/* Record a TCB allocated by tcb_get (the deadlock check walks them all). */
void deadlock_track(struct ult *t);
/* Does the process look deadlocked?  *mark counts its progress so far (two
 * looks with equal marks saw nothing run in between). */
bool deadlock_snapshot(unsigned long *mark);
/* Print the deadlock (one line); abort if PPL_DEADLOCK=abort. */
void deadlock_report(void);
int monitor_own_kthreads(void);
unsigned long monitor_handoffs(void);
unsigned long monitor_handoff_fails(void);   /* lends that found no spare */
/* ---- preemption (preempt.c) ---------------------------------------------------
 * Time-slice preemption from a per-VP tick signal; docs/preemption.md. */

/* Read PPL_TIMESLICE_US, find the protected text ranges, install the handler. */
void preempt_init(void);
/* Start ticking the calling VP (on its own kernel thread; unbound VPs only). */
void preempt_vp_start(struct vproc *v);
/* VPs owing a deferred preemption: read by preempt_point, one load. */
extern _Atomic int preempt_npending PPL_HIDDEN;
void preempt_deferred_run(void);
/* A thread of higher priority than v's current was queued on v: preempt
 * v's current as soon as it is safe (v may be the caller's own VP). */
void preempt_for_priority(struct vproc *v, const struct ult *t);

/* The trampoline runs an application handler over the interrupted
 * context uc: enter says whether the thread may be switched out meanwhile
 * (not over the C library's code), leave pays a preemption the handler
 * made due (it woke a higher priority thread) or has the tick come back. */
void preempt_handler_enter(const void *uc);
void preempt_handler_leave(const void *uc);

/* A safe point at a libppl entry point: no libppl lock held, about to
 * return to the application.  Pays a deferred preemption, if one is owed. */
static inline void preempt_point(void)
{
	if (ppl_unlikely(atomic_load_explicit(&preempt_npending, memory_order_relaxed) != 0))
		preempt_deferred_run();
}

/* ---- attributes (attr.c) -----------------------------------------------------------
 * pthread_attr_t is an opaque 56-byte overlay owned by attr.c; thread.c sees
 * only this decoded form. */

struct thread_attrs {
	size_t stacksize;          /* usable bytes (0 = default) */
	void *stackaddr;           /* user stack: lowest address, or NULL */
	size_t guardsize;
	int detachstate;           /* PTHREAD_CREATE_* */
	int scope;                 /* PTHREAD_SCOPE_* */
	int inheritsched;          /* PTHREAD_*_SCHED */
	int policy;
	struct sched_param param;
	/* GNU extensions (NULL: none), pointing into the caller's attribute,
	 * or for the process default into the copies below */
	const cpu_set_t *cpuset;   /* pthread_attr_setaffinity_np */
	size_t cpusetsize;
	const sigset_t *sigmask;   /* pthread_attr_setsigmask_np */
	cpu_set_t default_cpuset;
	sigset_t default_sigmask;
};

/* Decode `a` (NULL: the process default set by pthread_setattr_default_np). */
void attr_read(const pthread_attr_t *a, struct thread_attrs *out);
/* Initialise `a` and store `in` into it (for pthread_getattr_np). 0 or errno. */
int attr_write(pthread_attr_t *a, const struct thread_attrs *in) PPL_MUST_CHECK;

/* ---- threads (thread.c, key.c) ---------------------------------------------------- */

/* The initial thread's policy and priority, from its kernel thread (schedparam.c). */
void sched_params_init(struct ult *m);
/* On a SCOPE_SYSTEM thread's kernel thread: take its pthread_create
 * affinity (start), or give the process's back as it exits (!start). */
void sched_affinity_bound(struct ult *t, bool start);
/* A pthread_t that names no thread (NULL, or a recycled TCB). */
bool ult_stale(struct ult *t);
/* The initial thread's nice value, from its kernel thread (nice.c). */
void nice_init(struct ult *m);
/* The first of every TCB ever allocated, linked by all_next (deadlock.c). */
struct ult *ult_all(void);
/* The kernel thread t has to itself (bound, foreign), or 0 (schedparam.c). */
int own_kthread(struct ult *t);
/* What gettid() returns to t: the process id for the initial thread, its
 * own kernel thread's id, or an id above every kernel id (threadid.c). */
pid_t thread_tid(struct ult *t);
/* Whether id is one of those ids above the kernel's. */
bool tid_is_virtual(pid_t id);
/* The thread a kernel-style id names for the calls that take one: 0 the
 * caller, the process id the initial thread, the caller's kernel thread
 * the caller, a gettid() value its thread; NULL: the kernel's business. */
struct ult *tid_thread(pid_t id);
/* Whether a thread may take this policy and priority: 0, EINVAL (no such
 * policy, a priority out of its range) or EPERM, as the kernel (schedparam.c). */
int sched_check(int policy, const struct sched_param *p);
/* The priority the scheduler orders t by (struct ult's prio). */
static inline int sched_prio_of(int policy, const struct sched_param *p)
{
	return policy == SCHED_FIFO || policy == SCHED_RR ? p->sched_priority : 0;
}
/* Set t's policy and priority, and the priority the scheduler goes by. */
static inline void ult_set_sched(struct ult *t, int policy, const struct sched_param *p)
{
	t->sched_policy = policy;
	t->sched_param = *p;
	t->prio = sched_prio_of(policy, p);
	ult_update_kclass(t);
}
void key_run_destructors(struct ult *t);
void ult_recycle(struct ult *t);
int ult_join(struct ult *t, void **res, const struct timespec *abstime, clockid_t clk,
	     bool try_only);

/* ---- fork (fork.c, init.c) ---------------------------------------------------------
 * Each module whose locks guard state the child keeps takes them in
 * FORK_PREPARE and releases them in FORK_PARENT and FORK_CHILD (the forking
 * thread holds them, so the child never inherits them locked). */

enum fork_phase { FORK_PREPARE, FORK_PARENT, FORK_CHILD };

/* Register libppl's fork handlers (ppl_init, before the program registers any). */
void fork_init(void);
/* fork and the wait calls on VP 0 when the VP backend needs it
 * (vp_children_on_initial): true if the caller moved, its old home in
 * *old_home for ppl_initial_leave. */
bool ppl_initial_enter(struct vproc **old_home) PPL_HIDDEN;
void ppl_initial_leave(struct vproc *old_home) PPL_HIDDEN;
void ult_cache_atfork(enum fork_phase ph);   /* thread.c: the TCB cache */
void stack_atfork(enum fork_phase ph);       /* stack.c: the stack arenas */
void tls_atfork(enum fork_phase ph);         /* tls_glibc.c: the block list */
/* In the child, after the locks are released: the forking thread becomes
 * the only thread, on the only VP; the other VPs restart lazily. */
void ppl_runtime_fork_child(void);

/* Which process's threads a queue in user memory holds (fork.c).  A
 * private object placed in memory that another process shares (undefined
 * behaviour, but the Open POSIX suite does it) may have that process's
 * threads on its queue: their TCB pointers mean nothing here.  A stamp is
 * the pushing process's pid and how many forks it had made by then, so a
 * forked child can tell its ancestors' waiters that came with its copy of
 * the memory (PROC_COPY: readable, waitq_prune drops them) from ones they
 * pushed later into memory it shares with them (PROC_FOREIGN). */
enum proc_rel { PROC_SELF, PROC_COPY, PROC_FOREIGN };
uint64_t proc_stamp(void);
enum proc_rel proc_relation(uint64_t stamp);

/* mutex.c, for pthread_cond_*wait: count the caller (who holds m) as a
 * user of m from before it releases m to after it has it again, so that
 * pthread_mutex_destroy says EBUSY meanwhile, as glibc's __nusers does. */
void mutex_cond_enter(pthread_mutex_t *m);
void mutex_cond_leave(pthread_mutex_t *m);

/* Convert a CLOCK_REALTIME/MONOTONIC absolute time to a monotonic ns deadline. */
int64_t deadline_mono_ns(const struct timespec *abstime, clockid_t clk);

#endif
