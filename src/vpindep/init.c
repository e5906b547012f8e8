/* Start-up: read the environment, adopt the main thread, and start the VPs
 * lazily at the first pthread_create, so a single-threaded program pays
 * nothing.  Also resizes the VP set (pthread_setconcurrency) and manages
 * the VPs of SCOPE_SYSTEM threads. */
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "cancel.h"
#include "fork.h"
#include "monitor.h"
#include "mutex_robust.h"
#include "preempt.h"
#include "runq.h"
#include "runtime.h"
#include "schedhooks.h"
#include "schedparam.h"
#include "scheduler.h"
#include "sig.h"
#include "stack.h"
#include "thread.h"
#include "timer.h"
#include "ult.h"
#include "vproc.h"

/* The initial thread runs before ppl_init: not a free TCB (ULT_FREE is 0). */
struct runtime ppl_rt PPL_HIDDEN = { .main_ult.state = ULT_RUNNING };

#define VP0_IDLE_STACK (256 * 1024)

void ppl_init(void)
{
	static _Atomic int done;
	if (atomic_exchange(&done, 1))
		return;
	ppl_env_init();
	glibcabi_state_init();
	stack_init();
	tls_mode_init(ppl_env_tls_per_thread, ppl_env_tls_switch);
	if (ppl_rt.debug >= 1) {
		char buf[96];
		int n = snprintf(buf, sizeof buf, "libppl: tls=%s\n", tls_mode_name());
		if (n > 0)
			vp_write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
	}
	cancel_init();
	spincalls_init();
	struct ult *m = &ppl_rt.main_ult;
	m->is_main = true;
	m->foreign = true;
	m->id = 1;
	sched_params_init(m);
	nice_init(m);
	m->inherit_sched = true;
	m->ktid = vp_initial_kthread_id();
	m->sigmask = vp_get_sigmask();
	atomic_store(&m->state, ULT_RUNNING);
	atomic_store(&ppl_rt.nthreads, 1);
	void *lo;
	size_t size;
	ppl_rt.main_kthread = vp_kthread_handle();
	if (vp_kthread_stack(0, &lo, &size) == 0)
		m->stack = (struct stack){ .lo = lo, .size = size, .user = true };
	m->attr_guard = 0;   /* as glibc reports for the initial thread */
	fork_init();
	robust_init();
}

static int default_vps(void)
{
	if (ppl_rt.env_vps)
		return ppl_rt.env_vps;
	cpu_set_t set;
	CPU_ZERO(&set);
	if (vp_task_getaffinity(0, sizeof set, &set) > 0 && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

/* A forked child's VPs of the parent, for vproc_new to reuse.  Freeing
 * them in the child would write to memory it shares copy-on-write with
 * the parent, and freeing a large timer heap makes malloc consolidate
 * (and so copy) much of the inherited heap: 200 forks after a burst of
 * timed waits spent more time there than in fork itself. */
static spin_t leftover_lock PPL_FORK_STATE;
static struct vproc *leftover PPL_FORK_STATE;

/* The parts of struct vproc (pthread_impl.h), each owned by its module.
 * The VP's life (idle_stack, bound_to, dedicated, spare_next, retired) is
 * this file's own.  stats has no hook: the child's counts go on. */
static const struct vproc_part vproc_parts[] = {
	{ "runq", NULL, runq_fork_child },
	{ "sched", sched_vp_init, sched_fork_child },
	{ "timers", timer_vp_init, timer_fork_child },
	{ "preempt", NULL, preempt_fork_child },
	{ "cancel", NULL, cancel_vp_fork_child },
	{ "stats", NULL, NULL },
	{ "monitor", NULL, monitor_vp_fork_child },
};

int vproc_parts_init(struct vproc *v)
{
	for (size_t i = 0; i < sizeof vproc_parts / sizeof vproc_parts[0]; i++)
		if (vproc_parts[i].init) {
			int err = vproc_parts[i].init(v);
			if (err)
				return err;
		}
	return 0;
}

static void vproc_parts_fork_child(struct vproc *v, struct ult *self)
{
	for (size_t i = 0; i < sizeof vproc_parts / sizeof vproc_parts[0]; i++)
		if (vproc_parts[i].fork_child)
			vproc_parts[i].fork_child(v, self);
}

static struct vproc *vproc_new(int id)
{
	spin_lock(&leftover_lock);
	struct vproc *v = leftover;
	if (v != NULL)
		leftover = v->spare_next;
	spin_unlock(&leftover_lock);
	struct timer **heap = NULL;
	size_t heap_cap = 0;
	if (v != NULL) {
		heap = v->heap;
		heap_cap = v->heap_cap;
	} else {
		v = aligned_alloc(64, (sizeof *v + 63) & ~(size_t)63);
		if (v == NULL)
			return NULL;
	}
	memset(v, 0, sizeof *v);
	v->heap = heap;
	v->heap_cap = heap_cap;
	if (vproc_parts_init(v) != 0) {
		free(v->heap);
		free(v);
		return NULL;
	}
	v->vp.id = id;
	v->kcpus = affinity_vp_initial();
	vp_kstate_changed();
	return v;
}

static void vproc_free(struct vproc *v)
{
	free(v->heap);
	free(v);
}

static void vp0_idle(void *arg)
{
	sched_vp_main(arg);
}

/* Caller holds ppl_rt.lock. */
static int start_vps(int from, int to)
{
	for (int i = from; i < to; i++) {
		struct vproc *v = ppl_rt.vps[i];
		if (v == NULL) {
			v = vproc_new(i);
			if (v == NULL)
				return EAGAIN;
			/* Publish a fully initialised VP: stealers read the array unlocked. */
			atomic_thread_fence(memory_order_release);
			ppl_rt.vps[i] = v;
			if (i >= ppl_rt.nvps_total)
				ppl_rt.nvps_total = i + 1;
			int err = ppl_vp_create(v);
			if (err) {
				ppl_rt.vps[i] = NULL;
				ppl_rt.nvps_total = i;
				vproc_free(v);
				return EAGAIN;
			}
			monitor_count_kthread();
		} else if (v->spare) {
			/* The monitor's spare becomes a VP of the set for good
			 * (a loan it serves ends without retiring it). */
			v->spare = false;
			atomic_store(&v->retired, false);
			vp_resume(&v->vp);
		} else if (atomic_load(&v->retired)) {
			atomic_store(&v->retired, false);
			vp_resume(&v->vp);
		}
	}
	return 0;
}

int ppl_vp_create(struct vproc *v)
{
	int err = vp_create(&v->vp, sched_vp_main);
	/* A C library thread's pthread_t is its glibc thread pointer
	 * (glibcabi): keep its DTV from here, even if the process ends
	 * before the new thread runs. */
	uintptr_t h = err == 0 ? vp_libc_handle(&v->vp) : 0;
	if (h != 0)
		tls_keep_kthread((void *)h);
	return err;
}

/* VP 0's scheduler loop on a stack of its own (the main thread keeps the
 * kernel stack) and, with per-thread TLS, a TLS block of its own.  0 or errno. */
static int idle_setup(struct vproc *v)
{
	if (stack_alloc(VP0_IDLE_STACK, (size_t)sysconf(_SC_PAGESIZE), &v->idle_stack) != 0)
		return EAGAIN;
	ctx_make(&v->idle_ctx, v->idle_stack.lo, v->idle_stack.size, vp0_idle, v);
	if (tls_per_thread) {
		void *tp = tls_block_new();
		if (tp == NULL)
			return EAGAIN;
		v->idle_ctx.tls_sel = ctx_tls_selector(tp);   /* entered on every idle spell */
		tls_block_set_stack(tp, v->idle_stack.lo, v->idle_stack.size);
		vp_set_current_in(tp, &v->vp);
		v->idle_ctx.tls = tp;
	}
	return 0;
}

static int wanted_vps(void)
{
	if (ppl_hook_on(PPL_HOOK_SEED))
		return 1;   /* a seeded schedule (detsched.c) */
	int n = ppl_rt.concurrency > 0 ? ppl_rt.concurrency : default_vps();
	return n > PPL_MAX_VPS ? PPL_MAX_VPS : n;
}

/* A forked child runs on one VP until it creates a thread (started == 2):
 * then the others start.  Caller holds ppl_rt.lock. */
static int restart_vps(void)
{
	int n = wanted_vps();
	glibcabi_set_multi_threaded();
	atomic_store_explicit(&spin_orphans, false, memory_order_seq_cst);
	int err = start_vps(1, n);
	ppl_rt.nvps = err ? ppl_rt.nvps_total : n;
	monitor_start();
	atomic_store_explicit(&ppl_rt.started, 1, memory_order_release);
	sig_catch_defaults();
	sig_catcher_start();
	return 0;
}

int ppl_runtime_start_slow(void)
{
	ppl_init();   /* in case the constructor has not run yet (early callers) */
	spin_lock(&ppl_rt.lock);
	int started = atomic_load_explicit(&ppl_rt.started, memory_order_relaxed);
	while (started == STARTED_RETIRING) {
		/* retire.c is ending the helpers (a foreign thread's call, or a
		 * thread a VP took before it stopped): wait for it to finish. */
		spin_unlock(&ppl_rt.lock);
		struct timespec ts = { 0, 50000 };
		vp_kthread_sleep(CLOCK_MONOTONIC, 0, &ts, NULL);
		spin_lock(&ppl_rt.lock);
		started = atomic_load_explicit(&ppl_rt.started, memory_order_relaxed);
	}
	if (started) {
		int err = started == 2 ? restart_vps() : 0;
		spin_unlock(&ppl_rt.lock);
		return err;
	}
	int n = wanted_vps();
	struct vproc *v0 = vproc_new(0);
	if (v0 == NULL) {
		spin_unlock(&ppl_rt.lock);
		return EAGAIN;
	}
	ppl_rt.vps[0] = v0;
	ppl_rt.nvps = n;
	ppl_rt.nvps_total = 1;
	if (ppl_hook_on(PPL_HOOK_TRACE))
		trace_start();
	ppl_overflow_init();
	preempt_init();
	glibcabi_set_multi_threaded();   /* user threads interleave on every VP */
	atomic_store_explicit(&spin_orphans, false, memory_order_seq_cst);   /* (forked child) */

	bool adopt_main = vp_current() == NULL && vp_is_initial_kthread();
	if (adopt_main) {
		/* The initial thread becomes the main user thread on VP 0; VP 0's
		 * scheduler loop gets a stack of its own.  (In a child forked by
		 * a foreign thread, that thread is the initial one: its TCB.) */
		struct ult *m = ult_foreign_self();
		if (idle_setup(v0) != 0) {
			spin_unlock(&ppl_rt.lock);
			return EAGAIN;
		}
		sig_alt_adopt(m);   /* the alternate stack main set up, if any */
		vp_adopt(&v0->vp);
		sig_vp_init(v0);   /* the mask its kernel thread has: main's */
		if (m->alt.ss_sp != NULL)
			sig_alt_switch(m, v0);
		/* Whatever the program blocked while it was single-threaded. */
		m->sigmask = vp_get_sigmask();
		vp_kstate_changed();
		sig_adopt_pending(m);
		m->foreign = false;
		m->is_main = true;
		m->vp = v0;
		v0->current = m;
		atomic_store_explicit(&v0->cur_prio, m->prio, memory_order_relaxed);
		if (tls_per_thread) {
			/* The main thread keeps the process's original block and
			 * may migrate; VP 0's loop has a block of its own. */
			m->ctx.tls = ctx_tls_self();
			m->ctx.tls_sel = ctx_tls_selector(m->ctx.tls);   /* 0: above 4 GiB */
			tls_adopt_main();
		} else {
			/* With TLS shared per VP, the main thread keeps the
			 * process's original TLS block (libraries' state from
			 * before start-up, such as a test harness's) by staying
			 * on VP 0. */
			m->home = v0;
		}
		preempt_vp_start(v0);   /* VP 0's kernel thread is this one */
		ppl_rt.vp0_initial = true;
	} else if (ppl_vp_create(v0) != 0) {
		spin_unlock(&ppl_rt.lock);
		return EAGAIN;
	} else {
		monitor_count_kthread();
	}
	int err = start_vps(1, n);
	if (err && ppl_rt.nvps_total > 0) {
		ppl_rt.nvps = ppl_rt.nvps_total;   /* run with the VPs we got */
		err = 0;
	}
	if (err == 0)
		monitor_start();
	atomic_store_explicit(&ppl_rt.started, 1, memory_order_release);
	spin_unlock(&ppl_rt.lock);
	sig_catch_defaults();
	sig_catcher_start();
	return err;
}

/* ---- concurrency ------------------------------------------------------------ */

int ppl_pthread_getconcurrency(void)
{
	return ppl_rt.concurrency;
}

int ppl_pthread_setconcurrency(int level)
{
	if (level < 0)
		return EINVAL;
	spin_lock(&ppl_rt.lock);
	ppl_rt.concurrency = level;
	if (!atomic_load(&ppl_rt.started)) {
		spin_unlock(&ppl_rt.lock);
		return 0;
	}
	int want = wanted_vps();
	int err = 0;
	if (want > ppl_rt.nvps) {
		err = start_vps(ppl_rt.nvps, want);
		if (err)
			want = ppl_rt.nvps_total;
	} else {
		for (int i = want; i < ppl_rt.nvps; i++)   /* VP 0 is never retired */
			atomic_store(&ppl_rt.vps[i]->retired, true);
	}
	ppl_rt.nvps = want;
	spin_unlock(&ppl_rt.lock);
	return err;
}

/* ---- VPs of SCOPE_SYSTEM threads ----------------------------------------------- */

/* A VP for t alone: a spare of an exited bound thread, else a new one.
 * If `t_queued`, t is new and queued there before its kernel thread
 * starts (the VP's loop finds it at once); else t runs or waits elsewhere
 * and its home moves there (the caller moves it).  0, or EAGAIN (no
 * kernel thread) with t unbound. */
static int bind_vp(struct ult *t, bool t_queued)
{
	spin_lock(&ppl_rt.lock);
	struct vproc *v = ppl_rt.spare_bound;
	if (v)
		ppl_rt.spare_bound = v->spare_next;
	spin_unlock(&ppl_rt.lock);
	bool made = v == NULL;
	if (made) {
		static _Atomic int bound_ids = PPL_MAX_VPS;   /* never mistaken for a shared VP */
		v = vproc_new(atomic_fetch_add(&bound_ids, 1));
		if (v == NULL)
			return EAGAIN;
		v->dedicated = true;
	}
	v->bound_to = t;
	if (made && !t_queued) {
		/* Its kernel thread first: t goes there only once it exists. */
		if (ppl_vp_create(v) != 0) {
			vproc_free(v);
			return EAGAIN;
		}
		monitor_count_kthread();
	}
	spin_lock(&t->lock);
	t->bound = true;
	t->home = v;
	t->aff_home = NULL;
	if (t_queued)
		t->vp = v;
	spin_unlock(&t->lock);
	if (!made)
		atomic_store(&v->retired, false);
	if (t_queued)
		sched_push(t);
	else if (t != ult_self_peek())
		sched_rehome(t);   /* ready: queued there now; running: at its next switch */
	if (!made || !t_queued)
		return 0;
	int err = ppl_vp_create(v);
	if (err) {
		spin_lock(&t->lock);
		t->bound = false;
		t->home = NULL;
		spin_unlock(&t->lock);
		/* A queued thread was only ever queued there: the VP never ran. */
		vproc_free(v);
		return EAGAIN;
	}
	monitor_count_kthread();
	return 0;
}

int ppl_bind_new_vp(struct ult *t)
{
	return bind_vp(t, true);
}

int ppl_bind_running(struct ult *t)
{
	return bind_vp(t, false);
}

/* t's own VP (its home: a thread bound while running may exit before it
 * ever got there) becomes a spare for the next bound thread. */
void ppl_unbind_vp(struct ult *t)
{
	struct vproc *v = t->home;
	v->bound_to = NULL;
	atomic_store(&v->retired, true);
	spin_lock(&ppl_rt.lock);
	v->spare_next = ppl_rt.spare_bound;
	ppl_rt.spare_bound = v;
	spin_unlock(&ppl_rt.lock);
}

/* ---- retirement (retire.c) ------------------------------------------------------- */

/* The VPs but VP 0 and the monitor have ended (the monitor's spares are
 * VPs too): their structures go to the leftovers, for vproc_new, and the
 * next pthread_create restarts the set, as in a forked child. */
void ppl_runtime_retired(void)
{
	spin_lock(&ppl_rt.lock);
	for (int i = 1; i < ppl_rt.nvps_total; i++) {
		struct vproc *o = ppl_rt.vps[i];
		ppl_rt.vps[i] = NULL;
		if (o == NULL)
			continue;
		spin_lock(&leftover_lock);
		o->spare_next = leftover;
		leftover = o;
		spin_unlock(&leftover_lock);
	}
	ppl_rt.nvps = ppl_rt.nvps_total = 1;
	monitor_fork_child();   /* the same state: no monitor, no spare */
	atomic_store_explicit(&ppl_rt.started, 2, memory_order_release);
	spin_unlock(&ppl_rt.lock);
}

/* ---- fork ------------------------------------------------------------------------ */

/* The child of fork: the forking thread is the only thread left, and the
 * kernel thread running it the only kernel thread.  Its VP (if it ran on
 * one) becomes VP 0, the only VP, with empty queues and no timers; the
 * other VPs are freed and restart at the next pthread_create.  The libppl
 * locks whose state the child keeps were held across fork (fork.c) and are
 * free again; the per-VP ones belong to VPs the child drops or resets here. */
void ppl_runtime_fork_child(void)
{
	struct vproc *v = (struct vproc *)vp_current();
	struct ult *self = v ? v->current : ult_foreign_self();
	/* One thread from here on: any lock found held has a dead holder. */
	atomic_store_explicit(&spin_orphans, true, memory_order_relaxed);
	self->fork_gen = ++ppl_rt.fork_gen;
	spin_init(&ppl_rt.lock);
	spin_init(&leftover_lock);
	for (int i = 0; i < ppl_rt.nvps_total; i++) {
		struct vproc *o = ppl_rt.vps[i];
		ppl_rt.vps[i] = NULL;
		if (o == NULL || o == v)
			continue;
		stack_free(&o->idle_stack);
		o->spare_next = leftover;
		leftover = o;
	}
	for (struct vproc *o = ppl_rt.spare_bound; o; ) {
		struct vproc *next = o->spare_next;
		if (o != v) {
			o->spare_next = leftover;
			leftover = o;
		}
		o = next;
	}
	ppl_rt.spare_bound = NULL;
	atomic_store_explicit(&ppl_rt.nspinning, 0, memory_order_relaxed);
	atomic_store_explicit(&ppl_rt.nsleeping, 0, memory_order_relaxed);
	atomic_store_explicit(&ppl_rt.nthreads, 1, memory_order_relaxed);
	monitor_fork_child();
	sig_claims_fork_child();
	if (v == NULL) {
		/* Forked by a kernel thread libppl did not create: the child
		 * starts afresh, with that thread as its initial thread. */
		ppl_rt.nvps = ppl_rt.nvps_total = 0;
		ppl_rt.vp0_initial = false;
		atomic_store_explicit(&ppl_rt.started, 0, memory_order_release);
		return;
	}

	v->vp.id = 0;
	vproc_parts_fork_child(v, self);
	atomic_store_explicit(&v->retired, false, memory_order_relaxed);
	v->bound_to = NULL;
	v->dedicated = false;
	v->spare_next = NULL;
	vp_fork_child(&v->vp);
	preempt_vp_start(v);
	if (v->idle_stack.lo == NULL) {
		/* A VP other than VP 0 ran its loop on its kernel thread's stack
		 * and TLS block, which glibc's fork has just put in its cache of
		 * dead threads' stacks: give the loop a stack of its own. */
		if (idle_setup(v) != 0)
			ppl_fatal("fork: no memory for the child's scheduler stack");
	}
	ppl_rt.vps[0] = v;
	ppl_rt.nvps = ppl_rt.nvps_total = 1;
	ppl_rt.vp0_initial = true;   /* the child's only kernel thread is its initial one */
	self->bound = self->bound_late = false;
	self->vp = v;
	/* Only the main thread with shared TLS is tied to a VP: the one that
	 * holds the process's original block, which is now this one. */
	self->home = (!tls_per_thread && self->is_main) ? v : NULL;
	/* Its pin and affinity VP may name VPs that are gone (migrate.c). */
	self->pin = self->aff_home = NULL;
	self->migrating = false;
	atomic_store_explicit(&ppl_rt.started, 2, memory_order_release);
}

/* After a successful dlopen (preload's dl.c): static TLS of new modules in
 * the blocks glibc does not know (glibcabi). */
void ppl_after_dlopen(void)
{
	tls_after_dlopen();
}

void ppl_after_dlclose(void)
{
	tls_modules_changed();
}
