/* The thread control block, struct ult (thread.c makes it). */
#ifndef PPL_ULT_H
#define PPL_ULT_H

#include "base.h"
#include "stack.h"
#include "timer.h"
#include "waitq.h"

/* ---- thread control block --------------------------------------------------- */

enum ult_state {
	ULT_FREE,      /* recycled into the TCB cache, or cold (tcbpool.c): a
			* stale pthread_t.  0: a released TCB reads as zeros */
	ULT_RUNNING,   /* on a VP, or a foreign kernel thread executing */
	ULT_READY,     /* on a run queue */
	ULT_BLOCKED,   /* parked on a wait queue, a timer or a join */
	ULT_EXITING,   /* called pthread_exit, still on its stack */
	ULT_ZOMBIE,    /* off its stack; waiting to be joined */
};

#define PPL_KEY_INLINE 8   /* keys whose slots are in the TCB */
#define PPL_KEY_BLOCK 32   /* slots per block of the others */
#define PPL_KEY_BLOCKS ((PTHREAD_KEYS_MAX - PPL_KEY_INLINE + PPL_KEY_BLOCK - 1) / PPL_KEY_BLOCK)
#define PPL_PRIO_HELD 8    /* PI/PP mutexes a thread holds with effect */
#define PPL_PIN_WORDS (1024 / (8 * sizeof(unsigned long)))

struct cpus;   /* an interned CPU set (affinity.c) */

/* 1,024 bytes on x86_64, four to a page of tcbpool.c's chunks: a field
 * added beyond that makes it three (a third more memory per thread). */
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
				    * VP; VP 0 for the main thread in shared-TLS mode;
				    * else pin, a ppl_migrate destination or aff_home
				    * (migrate.c; changed under `lock`) */
	struct vproc *pin;         /* ppl_pin's VP (for a set: the one of the set it
				    * is kept on now), or NULL: not pinned */
	struct vproc *aff_home;    /* the VP its CPU affinity keeps it to, or NULL */
	/* sig_resumed: the VP whose kernel state was right for this thread at
	 * generation ks_gen of vp_kstate_gen (NULL: look) */
	struct vproc *ks_vp;
	unsigned long ks_gen;
	bool migrating;            /* home is a ppl_migrate destination it has not
				    * resumed on yet (sched_migrate_arrived) */
	bool pin_set;              /* pinned to pin_vps (read only while pin is set,
				    * so a new thread need not reset it) */
	bool tls_in_stack;
	bool tls_used;             /* the block has run a thread before */
	bool specific_used;        /* a value was stored since the last clear */
	bool inherit_sched;
	bool bound_late;           /* bound after it first ran (its CPU set):
				    * gettid() keeps the id it had (threadid.c) */
	bool robust_own;           /* a robust-list head of its own, by raw
				    * set_robust_list (robustlist.c) */
	/* The frame of its outermost handler that interrupted code where the
	 * tick may not switch it out (the C library's or libppl's), or 0
	 * (preempt.c); switch_to reads it on every switch (handler_marks). */
	uintptr_t sig_unsafe;
	bool plug_queued;          /* held by the installed scheduler (schedplug.c) */
	_Atomic bool async_owed;   /* an asynchronous request the monitor watches
				    * until the thread acts or exits (cancel.c);
				    * here, in a hole, to keep the TCB 1,024 bytes */
	bool off_initial;          /* shared TLS: on its way to a blocking call, which
				    * VP 0 must not make for it (sys_place) */
	uint8_t sig_safe;          /* inside libppl at a point where a handler may
				    * switch it out (sig_safe_enter): not held */
	int saved_errno;           /* errno across switches (shared-TLS mode) */
	void *tls;                 /* per-thread TLS: its glibc block (thread pointer):
				    * at its stack's top (tls_in_stack), going with the
				    * stack, or below 4 GiB (ldt), pooled with the TCB */
	size_t tls_room;           /* bytes the block takes at the stack's top */
	struct tls_libc *tls_libc; /* the C library's state between two blocks */
	unsigned tls_sel;          /* its %fs selector (ldt switch method), or 0 */
	unsigned tls_countdown;    /* entries into its block until the block gets an
				    * LDT entry; 0: nothing to do (ult_tls_entered) */

	void *(*start)(void *);
	void *arg;
	void *result;              /* pthread_exit value */

	/* lifecycle, under `lock` */
	spin_t lock;
	bool detached;
	bool joined;               /* a joiner has claimed it */
	uint8_t sig_nest;          /* application handlers running (the trampoline's,
				    * sig_run_taken's), as far as they returned: one
				    * nested in another runs with the tick blocked
				    * (sigaction.c); here, in a hole, for the 1,024 bytes */
	struct ult *joining;       /* thread this one is joining (EDEADLK check) */
	struct waitq joinq;        /* the (single) joiner */
	unsigned long id;          /* sequence number, for messages */

	struct stack stack;
	size_t attr_guard;         /* as requested, for pthread_getattr_np */
	int sched_policy;
	struct sched_param sched_param;
	int prio;                  /* effective priority: sched_priority under SCHED_FIFO
				    * and SCHED_RR, 0 otherwise (runq.h orders by it),
				    * or a PI/PP boost above it (mutex_prio.c) */
	int kclass;                /* its VP's kernel class while it runs (ult_kclass) */
	/* Its CPU set (affinity.c; interned, NULL: the process's), and the
	 * set its VP's kernel thread must have while it runs (NULL: the
	 * process's, for a set that holds every CPU of the process). */
	const struct cpus *_Atomic cpus;
	const struct cpus *_Atomic kcpus;
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
	 * 0..PPL_KEY_INLINE-1 inline (programs use a few keys, from 0 up);
	 * the others in blocks of PPL_KEY_BLOCK, listed in a directory, both
	 * calloc'd by the first pthread_setspecific of a non-NULL value there.
	 * A slot's value counts only while its seq equals the key's, so a
	 * deleted and re-created key reads NULL.  key_run_destructors clears
	 * the slots and frees the blocks and the directory, so a recycled TCB
	 * starts empty and a pooled TCB keeps nothing on the heap. */
	struct key_slot {
		uintptr_t seq;
		void *value;
	} specific_1st[PPL_KEY_INLINE];
	struct key_slot **specific; /* NULL, or PPL_KEY_BLOCKS blocks (each maybe NULL) */

	/* signals (signal.c) */
	uint64_t sigmask;          /* blocked set (bit sig-1); the thread's own, written
				    * only by itself, installed on its VP when it resumes */
	_Atomic uint64_t sigpending; /* directed at it and not yet raised */
	_Atomic uint64_t sigwaiting; /* in sigwait & co. for these, or sigsuspend opens them (signal.c) */
	long long sched_key;       /* ppl_sched_setkey's key (schedplug.c), inherited */
	bool sig_yielding;         /* yields after a handler it took (sigroute.c) */
	_Atomic bool sig_done;     /* exiting: takes no more claims of the process's */
	bool in_sigframe;          /* in libppl's part of a signal handler: the tick, the trampoline */
	bool sigframe_held;        /* resumed there, signals held back till its sigreturn */
	_Atomic uint32_t cpu_seq;  /* odd while cpu_ns and cpu_since change (cpuclock.c) */
	stack_t alt;               /* its sigaltstack (ss_sp NULL: none), installed on
				    * its VP's kernel thread while it runs (sigaltstack.c) */
	int64_t cpu_ns;            /* CPU time up to its last switch-out (cpuclock.c) */
	int64_t cpu_since;         /* its kernel thread's CPU time at switch-in, or 0 */
	int cpu_clock;             /* its clock's slot + 1, or 0 (cpuclock.c) */
	int ktid;                  /* foreign threads: the kernel thread id */
	_Atomic int64_t cputimer_due; /* CPU time its first CPU-time timer is due, or 0 (cputimer.c) */

	struct ult *cache_next;    /* free-list link in the TCB cache */

	/* cancellation (cancel.c, unwind.c); reset by tcb_get */
	_Atomic int cancel;        /* CANCEL_* bits: written by the thread, and
				    * CANCEL_PENDING by pthread_cancel (seq_cst) */
	int nice;                  /* its nice value (nice.c), inherited at create */
	_Atomic(spin_t *) park_lock; /* lock of the queue of the last park; with
				    * wait_q != NULL, under that lock, t is parked there */
	int park_flags;            /* PARK_* of that park (under park_lock) */
	int prio_nheld;            /* entries of prio_held (mutex_prio.c, below) */
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
	/* ppl_pin_set's VPs (a ppl_vpset_t, PPL_PIN_WORDS words), valid while
	 * pin_set (migrate.c): malloc'd by the first ppl_pin_set on the TCB and
	 * kept with it until it goes cold (tcbpool.c), so a TCB is 128 bytes
	 * smaller, four to a page */
	unsigned long *pin_vps;
	__pthread_unwind_buf_t libc_unwind; /* where glibc's unwinder goes (tls.h) */
	unsigned fork_gen;         /* ppl_rt.fork_gen when made: an older one is a
				    * thread of the parent, absent in a forked child */
	unsigned robust_held;      /* robust mutexes it holds (mutex_robust.c); 0 at exit */
	_Alignas(16) unsigned char unwind_exc[64]; /* struct _Unwind_Exception of
				    * the unwind in progress: off the stack, which
				    * the landing pads reuse */
	/* priority protocols (mutex_prio.c), under its prio_lock */
	void *prio_held[PPL_PRIO_HELD]; /* PI and PP mutexes it holds */
	int prio_ceil[PPL_PRIO_HELD];   /* their ceilings, -1 for PI */
	void *prio_wait;           /* PI mutex it waits for, or NULL */
	struct ult *prio_next;     /* list of threads with prio_nheld > 0 */
};

/* struct ult's `cancel` word */
#define CANCEL_DISABLED 1          /* PTHREAD_CANCEL_DISABLE */
#define CANCEL_ASYNC    2          /* PTHREAD_CANCEL_ASYNCHRONOUS */
#define CANCEL_PENDING  4          /* pthread_cancel was called */
#define CANCEL_ACTING   8          /* unwinding (cancelled or pthread_exit): no more acting */


#endif
