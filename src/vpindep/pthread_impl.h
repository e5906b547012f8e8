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
};

/* Allocate a stack of `size` usable bytes with a guard of `guard` bytes. */
int stack_alloc(size_t size, size_t guard, struct stack *out) PPL_MUST_CHECK;
void stack_free(struct stack *s);
size_t stack_default_size(void);   /* PPL_STACK_SIZE, else RLIMIT_STACK, else 8 MiB */
bool stack_guard_contains(const struct stack *s, const void *addr);

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
static inline bool waitq_empty(const struct waitq *q) { return q->head == NULL; }

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
#define PPL_KEY_BLOCKS (PTHREAD_KEYS_MAX / PPL_KEY_BLOCK)

struct ult {
	struct ctx ctx;            /* saved machine context while not running */
	struct ult *next;          /* run-queue or wait-queue link (one at a time) */
	struct ult *prev;          /* wait-queue back link */
	_Atomic int state;         /* enum ult_state */
	bool foreign;              /* a kernel thread libppl did not create */
	bool is_main;              /* the process's initial thread */
	bool bound;                /* PTHREAD_SCOPE_SYSTEM: owns a VP of its own */
	struct vproc *vp;          /* VP it last ran on (valid while on a run queue) */
	struct vproc *home;        /* VP it must run on, or NULL: a bound thread's own
				    * VP; VP 0 for the main thread in shared-TLS mode */
	int saved_errno;           /* errno across switches (shared-TLS mode) */
	void *tls;                 /* per-thread TLS: this TCB's glibc block (thread
				    * pointer), made with the TCB and pooled with it */
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
	bool inherit_sched;
	char name[16];

	/* waiting: set by the waiter before parking, read under the object lock */
	spin_t *wait_lock;         /* lock protecting the queue it waits on */
	struct waitq *wait_q;      /* queue it waits on, NULL for a plain sleep */
	_Atomic uint32_t wake;     /* foreign: futex word set by sched_wake */
	int wait_result;           /* 0 or ETIMEDOUT */
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

	struct ult *cache_next;    /* free-list link in the TCB cache */
	unsigned fork_gen;         /* ppl_rt.fork_gen when made: an older one is a
				    * thread of the parent, absent in a forked child */
};

/* ---- per-VP scheduler state ---------------------------------------------------- */

struct vproc {
	struct vp vp;              /* vpdep part; must stay first */
	spin_t rq_lock;            /* protects rq_head/rq_tail/rq_len */
	struct ult *rq_head, *rq_tail;
	_Atomic long rq_len;
	struct ult *current;       /* thread running on this VP (NULL in the idle loop) */
	struct ctx idle_ctx;       /* the VP's scheduler loop */
	struct stack idle_stack;   /* VP 0 only: the others use their kernel stack */
	_Atomic int sleeping;      /* 1 while suspended in the idle loop */
	struct ult *bound_to;      /* PTHREAD_SCOPE_SYSTEM thread owning this VP */
	struct vproc *spare_next;  /* link in ppl_rt.spare_bound */
	_Atomic bool retired;      /* set aside: by pthread_setconcurrency, or a spare bound VP */

	spin_t timer_lock;         /* protects the heap */
	struct timer **heap;
	size_t heap_len, heap_cap;
	_Atomic int64_t next_deadline; /* earliest deadline, INT64_MAX if none */

	ctx_fn after_fn;           /* run once right after switching to a context */
	void *after_arg;

	struct {                   /* PPL_STATS counters, owned by this VP */
		unsigned long switches, steals, parks, wakes, creates;
	} stats;
};

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
	spin_t lock;               /* start-up, VP list, concurrency changes */
	bool stats;                /* PPL_STATS=1 */
	int debug;                 /* PPL_DEBUG level */
	int env_vps;               /* PPL_VPS, 0 if unset */
	struct vproc *spare_bound; /* VPs of exited SCOPE_SYSTEM threads, for reuse */
	unsigned fork_gen;         /* forks this process descends from (fork.c) */
};

extern struct runtime ppl_rt PPL_HIDDEN;

extern bool ppl_env_tls_per_thread PPL_HIDDEN;   /* PPL_TLS asks for per-thread */
/* Read the environment knobs once (a bad value is fatal, naming the variable). */
void ppl_env_init(void);
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
/* Yield the VP to another ready thread, if there is one. */
void sched_yield_ult(void);
/* Sleep until the absolute monotonic time; returns 0. */
int sched_sleep_until(int64_t deadline_mono_ns);
/* Leave the running thread for good (thread exit); does not return. */
_Noreturn void sched_exit(struct ult *self);
/* The VP's scheduler loop (the idle context of every VP). */
void sched_vp_main(struct vp *vp);
/* Push t to the VP-independent ready queues and wake an idle VP if needed. */
void sched_push(struct ult *t);

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
};

/* Decode `a` (NULL: the process default set by pthread_setattr_default_np). */
void attr_read(const pthread_attr_t *a, struct thread_attrs *out);
/* Initialise `a` and store `in` into it (for pthread_getattr_np). 0 or errno. */
int attr_write(pthread_attr_t *a, const struct thread_attrs *in) PPL_MUST_CHECK;

/* ---- threads (thread.c, key.c) ---------------------------------------------------- */

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
void ult_cache_atfork(enum fork_phase ph);   /* thread.c: the TCB cache */
void stack_atfork(enum fork_phase ph);       /* stack.c: the stack arenas */
void tls_atfork(enum fork_phase ph);         /* tls_glibc.c: the block list */
/* In the child, after the locks are released: the forking thread becomes
 * the only thread, on the only VP; the other VPs restart lazily. */
void ppl_runtime_fork_child(void);

/* Convert a CLOCK_REALTIME/MONOTONIC absolute time to a monotonic ns deadline. */
int64_t deadline_mono_ns(const struct timespec *abstime, clockid_t clk);

#endif
