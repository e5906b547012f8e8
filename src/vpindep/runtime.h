/* The runtime (init.c) and the environment knobs (env.c). */
#ifndef PPL_RUNTIME_H
#define PPL_RUNTIME_H

#include "base.h"
#include "ult.h"
#include "vproc.h"

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
	_Atomic int rt_ready;      /* threads of priority > 0 on run queues (runq.h) */
	bool vp0_initial;          /* VP 0 runs on the initial kernel thread */
	unsigned fork_gen;         /* forks this process descends from (fork.c) */
};

extern struct runtime ppl_rt PPL_HIDDEN;

extern bool ppl_env_tls_per_thread PPL_HIDDEN;   /* PPL_TLS asks for per-thread */
extern bool ppl_env_system_bound PPL_HIDDEN;     /* PPL_SYSTEM_SCOPE=bound */

/* PPL_TLS_LDT_AFTER: with the ldt switch method a block gets its LDT entry
 * when its thread is resumed for the Nth time (switch.c's ult_tls_entered); 0:
 * when the block is made. */
extern unsigned ppl_env_tls_ldt_after PPL_HIDDEN;

extern enum ctx_tls_switch ppl_env_tls_switch PPL_HIDDEN;   /* PPL_TLS_SWITCH */

/* Read the environment knobs once (a bad value is fatal, naming the variable). */
void ppl_env_init(void);
extern size_t ppl_env_stack_size PPL_HIDDEN;     /* PPL_STACK_SIZE, 0 if unset */
extern long ppl_env_timeslice_us PPL_HIDDEN;     /* PPL_TIMESLICE_US, 0: no preemption */
extern long ppl_env_retire_ms PPL_HIDDEN;        /* PPL_RETIRE_MS, 0: never retire */

/* retire.c: the helper kernel threads (VPs but VP 0, spares, monitor) end
 * while one thread is left and it is parked; started 3 meanwhile. */
enum { STARTED_RETIRING = 3 };
void retire_poll(struct vproc *v0, int64_t *left);
void retire_halt_point(struct vproc *v);
/* A VP other than VP 0 goes to sleep: have VP 0 look (retire_poll). */
void retire_nudge(struct vproc *v);
/* init.c: the helpers are gone: forget their VPs (started becomes 2). */
void ppl_runtime_retired(void);

/* vp_create for a VP running sched_vp_main.  0 or errno. */
int ppl_vp_create(struct vproc *v) PPL_MUST_CHECK;
/* Start the VPs if they are not running yet. 0 or errno.  Inline: every
 * pthread_create asks, and a call was 30 instructions of it (callgrind). */
int ppl_runtime_start_slow(void) PPL_MUST_CHECK;
static inline PPL_MUST_CHECK int ppl_runtime_start(void)
{
	if (__builtin_expect(atomic_load_explicit(&ppl_rt.started, memory_order_acquire) == 1, 1))
		return 0;
	return ppl_runtime_start_slow();
}
/* PTHREAD_SCOPE_SYSTEM: give t a VP of its own and make it ready there. */
int ppl_bind_new_vp(struct ult *t) PPL_MUST_CHECK;
/* t (a user thread scheduled M:N, not necessarily the caller) gets a VP of
 * its own; it moves there at its next switch.  0 or EAGAIN. */
int ppl_bind_running(struct ult *t) PPL_MUST_CHECK;
/* t (bound) has exited: its VP becomes a spare for the next bound thread. */
void ppl_unbind_vp(struct ult *t);

#endif
