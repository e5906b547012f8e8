/* A VP: struct vproc, made of its modules' parts. */
#ifndef PPL_VPROC_H
#define PPL_VPROC_H

#include "base.h"
#include "timer.h"
#include "stack.h"
#include "ult.h"

/* ---- per-VP state --------------------------------------------------------------
 * struct vproc is made of parts, each owned by one module: the module
 * defines its part's type and, in vproc_parts (init.c), how a new VP's part
 * is set up and how the forked child's VP resets it.  The parts are
 * embedded as anonymous members (-fms-extensions), so their fields read as
 * the VP's own: v->rq_lock, v->next_deadline. */

/* Run queues (runq.h, runq.c). */
struct vp_runq {
	spin_t rq_lock;            /* protects rq_head/rq_tail/rt_head/rq_len */
	struct ult *rq_head, *rq_tail; /* ready threads of priority 0, FIFO */
	struct ult *rt_head;       /* ready threads of priority > 0, highest first */
	_Atomic long rq_len;       /* both lists */
	_Atomic int rq_top;        /* rt_head's priority, 0 if none (a hint) */
	/* the installed scheduler's threads queued here (schedplug.c), under
	 * rq_lock; they count in rq_len too */
	struct ult *plug_head, *plug_tail;
	long plug_len;
	int64_t plug_null_since;   /* its next() has returned none since, or 0 */
	_Atomic long plug_debt;    /* threads queued here that another VP of the
				    * group took (global order): still in rq_len
				    * until this queue's next scheduler call */
};

/* What the VP runs, and its idle loop (sched.c, switch.h, idle.c). */
struct vp_sched {
	_Atomic int cur_prio;      /* current's priority, -1 in the idle loop */
	struct ult *current;       /* thread running on this VP (NULL in the idle loop) */
	struct ctx idle_ctx;       /* the VP's scheduler loop */
	_Atomic int sleeping;      /* 1 while suspended in the idle loop */
};

/* The VP's timers (timer.c). */
struct vp_timers {
	spin_t timer_lock;         /* protects the heap */
	struct timer **heap;
	size_t heap_len, heap_cap;
	_Atomic int64_t next_deadline; /* earliest deadline, INT64_MAX if none */
};

/* Preemption (preempt.c): written by this VP's own code and its tick
 * handler, which runs on the same kernel thread. */
struct vp_preempt {
	_Atomic bool preempt_pending;   /* a deferred preemption is owed */
	unsigned char handler_defers;   /* ticks deferred for a handler over the C library (preempt.c) */
	_Atomic bool prio_kick;    /* a thread of higher priority than current was
				    * queued here: preempt at once (preempt.c) */
	_Atomic bool held_owed;    /* signals held here (sig.h), counted in
				    * preempt_npending: preempt_point lets them in;
				    * the monitor takes them after a while */
	_Atomic int64_t held_since; /* when held_owed was set */
	unsigned long preempt_switches; /* stats.switches when it was deferred */
	unsigned long tick_switches;    /* stats.switches at the last tick */
};

/* Cancellation of a thread in a system call on this VP (cancel.c). */
struct vp_cancel {
	_Atomic int cancel_sig;    /* set before pthread_cancel signals this VP (cancel.c) */
	_Atomic int cancel_inflight;   /* its signals sent and not yet handled (cancel.c) */
	unsigned cancel_watch;     /* the monitor's kicks of its thread (cancel.c) */
	struct ult *_Atomic cp_ult; /* thread in a cancellable system call on this
				    * VP's kernel thread, or NULL (cancel.c) */
	void (*cp_undo)(void *);   /* its cancel_syscall_enter arguments */
	void *cp_arg;
};

/* PPL_STATS counters, owned by this VP (stats.c prints them). */
struct vp_stats {
	_Atomic unsigned long switches; /* also read by the monitor (progress) */
	unsigned long steals, parks, wakes, creates;
	unsigned long syscalls;    /* announced blocking calls (blocking.c) */
	unsigned long preempts, preempts_deferred;
	unsigned long mutex_waits; /* private mutex locks that found it held (mutex.c) */
	unsigned long mutex_wakes; /* unlocks that woke a waiter (mutex.c) */
};

/* Blocking system calls (monitor.c).  in_syscall is SYS_OUT or SYS_IN,
 * written by the VP's own kernel thread around an announced call; the
 * monitor moves it SYS_IN -> SYS_LENT when it hands the VP's work to a
 * spare, and the kernel thread finds that out when the call returns. */
struct vp_monitor {
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

struct vproc {
	struct vp vp;              /* vpdep part; must stay first */
	struct vp_runq;
	struct vp_sched;
	/* The VP's life (init.c). */
	struct stack idle_stack;   /* VP 0 only: the others use their kernel stack */
	struct ult *bound_to;      /* PTHREAD_SCOPE_SYSTEM thread owning this VP */
	bool dedicated;            /* made for SCOPE_SYSTEM threads: runs none other,
				    * even between two of them (set before the VP
				    * starts, never cleared but by fork) */
	struct vproc *spare_next;  /* link in ppl_rt.spare_bound */
	const struct cpus *_Atomic kcpus; /* the CPU set its kernel thread has
				    * (affinity.c); written only on this VP's kernel thread */
	bool kinside;              /* kcpus holds only CPUs of the process, and ticks
				    * run: a thread of any set may run here a while */
	_Atomic bool retired;      /* set aside: by pthread_setconcurrency, or a spare bound VP */
	_Atomic int halt;          /* retire.c: 1 stop at the loop's top, 2 end, 0 go on */
	_Atomic int halt_ack;      /* the VP's answer: 1 stopped, 2 gone */
	struct vp_timers;
	struct vp_preempt;
	struct vp_cancel;
	struct vp_stats stats;
	struct vp_monitor;
};

/* A part's set-up in a new VP (zeroed before; 0 or an errno), and its reset
 * in the forked child's only VP, which runs `self`.  Either may be NULL. */
struct vproc_part {
	const char *name;
	int (*init)(struct vproc *v);
	void (*fork_child)(struct vproc *v, struct ult *self);
};

enum { SYS_OUT, SYS_IN, SYS_LENT };

/* Runs each part's init on a zeroed VP (init.c); 0 or an errno. */
int vproc_parts_init(struct vproc *v);
/* struct vp_sched's hooks (sched.c). */
int sched_vp_init(struct vproc *v);
void sched_fork_child(struct vproc *v, struct ult *self);

#endif
