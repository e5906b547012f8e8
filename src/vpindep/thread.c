/* Thread life cycle: create, exit, join, detach, identity, names.
 *
 * A TCB goes RUNNING -> (READY/BLOCKED)* -> EXITING -> ZOMBIE -> FREE.
 * EXITING -> ZOMBIE happens in ult_exited(), which runs on the next
 * context once the thread is off its stack; only then may a joiner (or, for
 * a detached thread, ult_exited itself) recycle stack and TCB.  `lock`
 * orders the exit against join and detach.  TCBs are pooled, never freed,
 * so a stale pthread_t still points at a TCB (state FREE gives ESRCH): the
 * cache keeps those with a stack (to a bound) and a few without, and the
 * others go cold in tcbpool.c, whose pages then go back to the kernel. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attr.h"
#include "base.h"
#include "cancel.h"
#include "fork.h"
#include "glibcabi.h"
#include "monitor.h"
#include "mutex_prio.h"
#include "mutex_robust.h"
#include "preempt.h"
#include "runtime.h"
#include "schedhooks.h"
#include "schedparam.h"
#include "scheduler.h"
#include "sig.h"
#include "stack.h"
#include "tcbpool.h"
#include "thread.h"
#include "timer.h"
#include "ult.h"
#include "waitq.h"

/* Cached TCBs keep their stacks up to this much stack in all, as NPTL's
 * stack cache (stack_cache_maxsize, 40 MiB, which counts guards too): a
 * page short, so that 8 MiB stacks are four, not five; 639 of 64 KiB.
 * A fork copies the page tables of every stack kept, two per stack of
 * 2 MiB or more (its top and its guard): 256 stacks of 8 MiB kept (the
 * bound before) made a fork 2 ms dearer.  See stack.c. */
#define STACK_CACHE_BYTES ((40UL << 20) - 4096)
/* Cached TCBs without a stack, at most: the others go cold (tcbpool.c),
 * so that a burst of threads leaves no TCB pages for fork to copy. */
#define BARE_CACHE 64

static spin_t cache_lock PPL_FORK_STATE;
/* Recycled TCBs: those with a stack apart from those without, so that a
 * create finds a stack first however many bare TCBs a burst left (in one
 * list the stacked ones, cached first, lay under them all: every thread
 * after a burst mapped a stack anew). */
static struct ult *cache;          /* each with its stack */
static struct ult *bare;           /* without a stack */
static size_t cache_room = STACK_CACHE_BYTES;   /* less the cached TCBs' stacks */
static size_t cache_bare;          /* length of `bare` */
static _Atomic unsigned long next_id = 2;   /* 1 is the main thread */

/* The two lists of cached TCBs; under cache_lock. */
static struct ult *pop_stacked(void)
{
	struct ult *t = cache;
	if (t != NULL) {
		cache = t->cache_next;
		cache_room += t->stack.size;
	}
	return t;
}

static struct ult *pop_bare(void)
{
	struct ult *t = bare;
	if (t != NULL) {
		bare = t->cache_next;
		cache_bare--;
	}
	return t;
}

static void push_bare(struct ult *t)
{
	t->cache_next = bare;
	bare = t;
	cache_bare++;
}

/* A TCB for a new thread, recycled if one is cached: one with a stack first
 * for a thread that takes a pooled stack (pooled_stack), one without first
 * for a thread on the application's stack or a kernel thread's, which would
 * give that stack up and leave the C library's state of its TLS block to
 * be made again (tp_stackslot); fresh: one never used (for a kernel
 * thread libppl meets, which the program did not create: it must not take
 * the pthread_t of a thread that has just ended, which a late join or
 * detach still finds detached, as glibc's would). */
static struct ult *tcb_get(bool fresh, bool pooled_stack)
{
	struct ult *t = NULL;
	if (!fresh) {
		spin_lock(&cache_lock);
		t = pooled_stack ? pop_stacked() : pop_bare();
		if (t == NULL)
			t = pooled_stack ? pop_bare() : pop_stacked();
		spin_unlock(&cache_lock);
	}
	if (t == NULL) {
		t = fresh ? tcb_pool_take_new() : tcb_pool_take();
		if (t == NULL)
			return NULL;
		memset(t, 0, sizeof *t);
	}

	/* Reset everything but the pooled stack and the key blocks. */
	t->next = t->prev = NULL;
	t->foreign = t->is_main = t->bound = t->sys_scope = t->bound_late = false;
	t->vp = NULL;
	t->queued_on = NULL;
	t->home = t->pin = t->aff_home = NULL;
	t->migrating = false;
	t->ks_vp = NULL;   /* its VP's kernel state not yet looked at (sig_resumed) */
	/* A foreign thread's until it says otherwise. */
	ult_set_sched(t, SCHED_OTHER, &(struct sched_param){ .sched_priority = 0 });
	t->saved_errno = 0;
	t->cpu_ns = t->cpu_since = 0;
	t->cpu_clock = 0;
	t->sig_unsafe = 0;
	t->prio_nheld = 0;
	t->prio_wait = NULL;
	atomic_store_explicit(&t->cputimer_due, 0, memory_order_relaxed);
	t->result = NULL;
	spin_init(&t->lock);
	t->detached = t->joined = false;
	t->joining = NULL;
	t->joinq.head = t->joinq.tail = NULL;
	t->id = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
	t->name[0] = '\0';
	t->wait_lock = NULL;
	t->wait_q = NULL;
	atomic_store_explicit(&t->wake, 0, memory_order_relaxed);
	atomic_store_explicit(&t->timer.state, TIMER_IDLE, memory_order_relaxed);
	t->timer.owner = NULL;
	t->cache_next = NULL;
	atomic_store_explicit(&t->cancel, 0, memory_order_relaxed);
	atomic_store_explicit(&t->async_owed, false, memory_order_relaxed);
	atomic_store_explicit(&t->park_lock, NULL, memory_order_relaxed);
	t->park_flags = 0;
	atomic_store_explicit(&t->cp_vp, NULL, memory_order_relaxed);
	spin_init(&t->sleep_lock);
	t->sleep_q.head = t->sleep_q.tail = NULL;
	t->cleanup = NULL;
	t->cleanup_jmp = NULL;
	t->landing = NULL;
	t->fork_gen = ppl_rt.fork_gen;
	t->robust_held = 0;
	t->robust_own = false;
	atomic_store_explicit(&t->state, ULT_RUNNING, memory_order_relaxed);
	return t;
}

/* The thread's stack goes (back to its arena, or to the application), and
 * with it the TLS block at its top. */
__attribute__((noinline)) static void stack_release(struct ult *t)
{
	if (t->tls_in_stack) {
		tls_block_leave(t->tls, &t->tls_libc);
		t->tls = NULL;
		t->tls_in_stack = false;
	}
	if (t->stack.user)
		stack_vg_deregister(&t->stack);
	else
		stack_free(&t->stack);
	t->stack.lo = NULL;
	t->stack.size = 0;   /* what the TCB cache counts */
}

static void tcb_put(struct ult *t)
{
	atomic_store_explicit(&t->state, ULT_FREE, memory_order_release);
	spin_lock(&cache_lock);
	if (t->stack.size != 0 && t->stack.size <= cache_room) {
		t->cache_next = cache;
		cache = t;
		cache_room -= t->stack.size;
		spin_unlock(&cache_lock);
		return;
	}
	spin_unlock(&cache_lock);
	/* Cache full: the stack goes back to its arena. */
	if (t->stack.size != 0)
		stack_release(t);
	/* A few bare TCBs stay cached; one with a TLS block of its own (the
	 * ldt method's, below 4 GiB) always does: the block goes with it. */
	spin_lock(&cache_lock);
	if (t->tls != NULL || cache_bare < BARE_CACHE) {
		push_bare(t);
		spin_unlock(&cache_lock);
		return;
	}
	spin_unlock(&cache_lock);
	/* The C library's state it carried goes to the next block made. */
	tls_libc_park(&t->tls_libc);
	free(t->pin_vps);
	t->pin_vps = NULL;
	tcb_pool_cool(t);
}

void ult_recycle(struct ult *t)
{
	if (t->is_main)
		return;
	if (ppl_unlikely(t->stack.user))
		stack_release(t);       /* the application's memory: forget it */
	tcb_put(t);
}

/* Give the stacks that cached TCBs keep back to their arenas' free lists,
 * where a thread of any TCB can take them: when no more address space can
 * be had (RLIMIT_AS), a stackless TCB on top of the cache would otherwise
 * fail every create while the stacks below it sit unused. */
static void tcb_cache_release_stacks(void)
{
	spin_lock(&cache_lock);
	for (struct ult *t; (t = pop_stacked()) != NULL;) {
		stack_release(t);
		push_bare(t);
	}
	spin_unlock(&cache_lock);
}

/* The TCBs on the cache list stay usable in a forked child: the forking
 * thread holds cache_lock across fork (fork.c). */
void ult_cache_atfork(enum fork_phase ph)
{
	if (ph == FORK_PREPARE) {
		spin_lock(&cache_lock);
		tcb_pool_atfork(ph);
	} else {
		tcb_pool_atfork(ph);
		spin_unlock(&cache_lock);
	}
}

/* ---- foreign kernel threads -------------------------------------------------- */

/* per kernel thread, never per VP; initial-exec, as vp.c's: no __tls_get_addr
 * call, which AddressSanitizer intercepts and answers with pthread_getspecific,
 * which comes back here (docs/debugging.md) */
static __thread struct ult *foreign_tcb __attribute__((tls_model("initial-exec")));

static void foreign_release(void *arg)
{
	struct ult *t = arg;
	key_run_destructors(t);
	foreign_tcb = NULL;
	tcb_put(t);
}

static bool is_main_kthread(void)
{
	return vp_is_initial_kthread();
}

struct ult *ult_foreign_self(void)
{
	struct ult *t = foreign_tcb;
	if (t)
		return t;
	if (is_main_kthread() && (ppl_rt.main_ult.foreign || !atomic_load(&ppl_rt.started))) {
		t = &ppl_rt.main_ult;
	} else {
		t = tcb_get(true, false);
		if (t == NULL)
			ppl_fatal("out of memory for the TCB of a kernel thread");
		t->foreign = true;
		t->tls_countdown = 0;   /* not switched by libppl */
		t->ktid = vp_gettid();
		__cxa_thread_atexit_impl(foreign_release, t, &__dso_handle);
	}
	foreign_tcb = t;
	return t;
}

/* vfork.c: the child of a vfork is the caller's thread (its TCB) while
 * it runs on the caller's TLS; the old value comes back after. */
struct ult *ult_foreign_swap(struct ult *t)
{
	struct ult *old = foreign_tcb;
	foreign_tcb = t;
	return old;
}

/* The calling kernel thread's TCB if it has one (or is the main thread),
 * else NULL: pthread_getspecific on a thread libppl has not seen yet makes
 * no TCB (all its values are NULL).  AddressSanitizer asks it for its
 * thread state from its malloc, which a TCB's allocation would re-enter. */
static __thread bool known_foreign __attribute__((tls_model("initial-exec")));

struct ult *ult_foreign_peek(void)
{
	if (foreign_tcb || known_foreign)
		return foreign_tcb;
	if (is_main_kthread())
		return ult_foreign_self();
	known_foreign = true;
	return NULL;
}

/* One of libppl's kernel threads, made through a sanitizer's pthread_create
 * wrapper (vp_creating_kthread): the wrapper's start routine calls
 * pthread_setspecific before the sanitizer can serve a malloc on the new
 * kernel thread (ThreadSanitizer crashes), so its TCB is made here, by the
 * creator, and installed before that routine runs.  No exit hook is
 * registered for it (that would allocate too): such a kernel thread keeps
 * its TCB. */
static void *kthread_born(void *p)
{
	struct ult *t = p;   /* start and arg: the wrapper's routine */
	t->ktid = vp_gettid();
	foreign_tcb = t;
	known_foreign = true;
	return t->start(t->arg);
}

static int kthread_through_wrapper(pthread_t *out, const pthread_attr_t *a, void *(*fn)(void *),
				   void *arg)
{
	struct ult *t = tcb_get(false, false);
	if (t == NULL)
		return EAGAIN;
	t->foreign = true;
	t->tls_countdown = 0;   /* not switched by libppl */
	t->start = fn;
	t->arg = arg;
	int err = vp_real_pthread_create(out, a, kthread_born, t);
	if (err)
		tcb_put(t);
	return err;
}

/* ---- create ---------------------------------------------------------------------- */

/* The bottom frame of every created thread.  `landing` is where an unwind
 * (pthread_exit, cancellation) ends once it has passed the thread's own
 * frames; returning from start ends up at the same place. */
static void ult_entry(void *arg)
{
	struct ult *t = arg;
	/* Above every frame a longjmp of this thread can reach (tls.h). */
	struct _pthread_cleanup_buffer libc_hook;
	cancel_thread_start(&libc_hook);
	if (tls_per_thread) {
		tls_thread_start(t->tls_used);
		t->tls_used = true;
		if (__builtin_expect(t->tls_countdown != 0, 0))
			ult_tls_entered(t);
	}
	if (ppl_unlikely(t->migrating))   /* ppl_migrate'd before it ran */
		sched_migrate_arrived(t);
	jmp_buf landing;
	if (setjmp(landing) == 0) {
		unwind_set_landing(t, &landing);
		errno = 0;
		sig_resumed(t);
		t->result = t->start(t->arg);
		/* A return is an implicit pthread_exit: no more cancellation. */
		cancel_exiting(t);
	}
	ult_finish(ult_self());
}

/* A thread's stack: the application's or a slot of libppl's, the pooled one
 * if it fits.  With per-thread TLS its block sits at the stack's top, as
 * NPTL's does (inside the size asked for): a new stack gets a new block. */
static int give_stack(struct ult *t, const struct thread_attrs *at)
{
	if (at->stackaddr) {
		if (t->stack.lo)
			stack_release(t);
		t->stack = (struct stack){ .lo = at->stackaddr, .size = at->stacksize, .user = true };
		stack_vg_register(&t->stack);
		return 0;
	}
	size_t size = at->stacksize ? at->stacksize : stack_default_size();
	size_t page = stack_page_size();
	size_t guard = (at->guardsize + page - 1) & ~(page - 1);
	size = (size + page - 1) & ~(page - 1);
	/* No room is added for the signal frame of a preemption tick (about
	 * 12 KB with AVX-512): a stack is exactly the size asked for, as on
	 * NPTL, where any signal needs the same room.  PTHREAD_STACK_MIN
	 * leaves it to a thread that does not fill its stack. */
	if (t->stack.lo && !t->stack.user && t->stack.size == size && t->stack.guard == guard)
		return 0;   /* the recycled stack fits */
	if (t->stack.lo)
		stack_release(t);
	return stack_alloc(size, guard, &t->stack);
}

/* glibc's MINIMAL_REST_STACK: what a stack must keep below its TLS. */
#define STACK_REST_MIN 2048

/* Per-thread TLS, for a thread without a block (one kept with its TCB or
 * its stack is reused): a block below 4 GiB for the ldt switch method while there is
 * room, else at the top of the stack.  0, EINVAL (the stack cannot hold its
 * block and STACK_REST_MIN more, as glibc says) or EAGAIN. */
static int give_tls(struct ult *t)
{
	if (t->stack.size < tls_block_room() + STACK_REST_MIN)
		return EINVAL;
	t->tls_used = false;
	t->tls_sel = 0;
	t->tls_countdown = 0;
	if ((t->tls = tls_block_low()) != NULL) {
		/* ldt method: an entry once the thread proves to switch (sched.c) */
		if (ctx_tls_selectable(t->tls)) {
			if (ppl_env_tls_ldt_after == 0)
				t->tls_sel = ctx_tls_selector(t->tls);
			else
				t->tls_countdown = ppl_env_tls_ldt_after;
		}
		t->tls_room = 0;
		return 0;
	}
	t->tls = tls_block_in_stack(t->stack.lo, t->stack.size, &t->tls_libc, &t->tls_room);
	if (t->tls == NULL)
		return EAGAIN;
	t->tls_in_stack = true;
	return 0;
}

/* A new thread that wants from its VP's kernel thread what its creator has
 * there (signal mask, no alternate stack, CPU set, scheduling class) takes
 * the creator's look at it: if it starts on that VP before anything there
 * changes (vp_kstate_gen), sig_resumed needs no look of its own. */
static void ks_inherit(struct ult *t, const struct ult *creator)
{
	if (creator->ks_vp != NULL && t->sigmask == creator->sigmask &&
	    t->alt.ss_sp == creator->alt.ss_sp &&
	    atomic_load_explicit(&t->kcpus, memory_order_relaxed) ==
		    atomic_load_explicit(&creator->kcpus, memory_order_relaxed) &&
	    ult_kclass(t) == ult_kclass(creator)) {
		t->ks_vp = creator->ks_vp;
		t->ks_gen = creator->ks_gen;
	}
}

int ppl_pthread_create(pthread_t *out, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
	if (ppl_unlikely(vp_creating_kthread()))   /* a sanitizer's wrapper, for a VP */
		return kthread_through_wrapper(out, a, fn, arg);
	sched_point();
	struct thread_attrs at;
	attr_read(a, &at);
	/* An explicit priority out of the policy's range: EINVAL before
	 * anything else, as glibc (the attribute checked it against the
	 * policy it had then). */
	if (at.inheritsched == PTHREAD_EXPLICIT_SCHED) {
		int e = sched_check(at.policy, &at.param);
		if (e)
			return e;
	}
	int err = ppl_runtime_start();
	if (err)
		return err;
	struct ult *self = ult_self();   /* the creator (once: a call each) */
	struct ult *t = tcb_get(false, at.stackaddr == NULL);
	if (t == NULL)
		return EAGAIN;
	err = give_stack(t, &at);
	if (err == EAGAIN) {
		/* Out of address space (RLIMIT_AS): threads that are ready may
		 * be about to exit and give stacks back, but on this VP they
		 * run only when the caller yields (a loop that retries a
		 * failed create would starve them): let them, and take what
		 * the cache keeps, and try once more. */
		sched_yield_user();
		tcb_cache_release_stacks();
		err = give_stack(t, &at);
	}
	if (err) {
		t->stack.lo = NULL;   /* nothing, or a slot given up */
		t->stack.size = 0;
	}
	else if (tls_per_thread && t->tls == NULL)
		err = give_tls(t);
	if (err) {
		if (t->stack.user)
			stack_release(t);
		tcb_put(t);
		return err == EINVAL ? EINVAL : EAGAIN;
	}
	t->start = fn;
	t->arg = arg;
	sig_thread_init(t, self);
	t->detached = at.detachstate == PTHREAD_CREATE_DETACHED;
	t->attr_guard = at.stackaddr ? 0 : at.guardsize;
	t->inherit_sched = at.inheritsched == PTHREAD_INHERIT_SCHED;
	t->nice = self->nice;
	if (t->inherit_sched) {
		ult_set_sched(t, self->sched_policy, &self->sched_param);
	} else {
		ult_set_sched(t, at.policy, &at.param);
	}
	if (at.sigmask)
		sig_thread_mask(t, at.sigmask);
	/* Its creator's CPUs, as a kernel thread's, or the attribute's as
	 * pthread_setaffinity_np on it gives them (affinity.c). */
	affinity_inherit(t, self);
	if (at.cpuset) {
		err = ppl_pthread_setaffinity_np((pthread_t)t, at.cpusetsize, at.cpuset);
		if (err) {
			ult_recycle(t);
			return err;
		}
	}
	ks_inherit(t, self);
	/* The frames stay below the TLS block at the stack's top. */
	size_t frames = t->stack.size - (tls_per_thread ? t->tls_room : 0);
	ctx_make(&t->ctx, t->stack.lo, frames, ult_entry, t);
	if (tls_per_thread) {
		t->ctx.tls = t->tls;
		t->ctx.tls_sel = t->tls_sel;
		tls_block_set_stack(t->tls, t->stack.lo, frames);
		cancel_thread_reset(t);
	}
	atomic_fetch_add_explicit(&ppl_rt.nthreads, 1, memory_order_relaxed);
	*out = (pthread_t)t;
	/* The creator's scheduler key: a simulation's new thread starts at
	 * its creator's time (schedplug.c). */
	struct ult *creator = ult_self_peek();
	t->sched_key = creator ? creator->sched_key : 0;
	t->sys_scope = at.scope == PTHREAD_SCOPE_SYSTEM;
	if (t->sys_scope && ppl_env_system_bound) {
		err = ppl_bind_new_vp(t);
		if (err) {
			atomic_fetch_sub_explicit(&ppl_rt.nthreads, 1, memory_order_relaxed);
			ult_recycle(t);
			return err;
		}
		return 0;
	}
	if (ppl_env_work_first && sched_run_new(t))
		return 0;
	sched_ready_new(t);
	preempt_point();
	return 0;
}

/* ---- exit -------------------------------------------------------------------------- */

void ult_exited(struct ult *t)
{
	spin_lock(&t->lock);
	atomic_store_explicit(&t->state, ULT_ZOMBIE, memory_order_release);
	if (t->bound)
		ppl_unbind_vp(t);
	if (t->detached) {
		spin_unlock(&t->lock);
		ult_recycle(t);
		return;
	}
	struct ult *joiner = waitq_pop(&t->joinq);
	spin_unlock(&t->lock);
	if (joiner)
		sched_wake(joiner);
}

struct ult *ult_exit_joiner(struct ult *t)
{
	if (t->bound || t->detached)
		return NULL;
	spin_lock(&t->lock);
	struct ult *j = NULL;
	if (!t->detached && !waitq_empty(&t->joinq)) {   /* a forked child's: pruned */
		j = t->joinq.head;
		if (j->foreign || j->home != NULL || j->prio != 0)
			j = NULL;
	}
	if (j != NULL)
		waitq_pop(&t->joinq);
	spin_unlock(&t->lock);
	return j;
}

void ppl_pthread_exit(void *result)
{
	struct ult *self = ult_self();
	/* glibc: pthread_exit during a cancellation's unwind (in a cleanup
	 * handler) keeps unwinding from there, with the new value. */
	cancel_exiting(self);
	self->result = result;
	ult_unwind();
}

_Noreturn void ult_finish(struct ult *self)
{
	self->landing = NULL;
	/* No longer a thread a claim of the process's is given to (sigroute.c):
	 * a claim made before this is seen here, one made after sees it. */
	atomic_store_explicit(&self->sig_done, true, memory_order_seq_cst);
	if (ppl_unlikely(atomic_load_explicit(&sig_claims, memory_order_seq_cst) != 0) &&
	    !self->foreign)
		sig_take_claims(self, false);
	/* glibc's order: C++ thread_local destructors, then keys. */
	if (tls_per_thread && !self->foreign)
		tls_thread_exit();
	key_run_destructors(self);
	/* What the kernel does for a dying kernel thread's robust list. */
	if (self->robust_held != 0)   /* the call sets up a stack canary */
		robust_thread_exit(self);
	if (self->robust_own)   /* one of its own, by raw system call */
		robust_list_exit(self);
	/* PI/PP mutexes it exits holding (undefined): forget them. */
	if (self->prio_nheld != 0)
		prio_thread_exit(self);
	if (self->foreign && !self->is_main)
		vp_kthread_exit(self->result);
	/* glibc: when the last thread exits, the process exits with status 0.
	 * That thread runs exit's handlers, and takes the process's signals
	 * again meanwhile, as NPTL's last thread does: a default-action
	 * kill(getpid()) from an atexit handler ends the process (glibc's
	 * tst-basic3, tst-basic4), instead of waiting for a taker. */
	if (atomic_fetch_sub_explicit(&ppl_rt.nthreads, 1, memory_order_acq_rel) == 1 ||
	    self->foreign) {
		/* (foreign: the main thread before any other thread existed) */
		atomic_store_explicit(&self->sig_done, false, memory_order_seq_cst);
		exit(0);
	}
	sched_exit(self);
}

/* ---- join and detach ------------------------------------------------------------------ */

bool ult_stale(struct ult *t)
{
	return t == NULL || atomic_load_explicit(&t->state, memory_order_acquire) == ULT_FREE;
}

/* What a join or a detach of a stale t says: a detached thread that ended
 * is recycled at once, but its TCB keeps the flag until the next thread
 * reuses it (the pool keeps it for a TCB whose pages went back), so one
 * that comes too late says EINVAL, as glibc's does (its stack cache keeps
 * the descriptor, still detached); else ESRCH. */
static int stale_error(const struct ult *t)
{
	return t != NULL && (t->detached || tcb_pool_ended_detached(t)) ? EINVAL : ESRCH;
}

/* t joins the caller but has a cancel request pending (its join, a
 * cancellation point, acts on it) or is exiting: glibc 2.34+ waits for
 * such a thread instead of saying EDEADLK (tst-join5: a thread joins main,
 * main cancels it and joins it).  Like glibc, whether t has cancellation
 * enabled is not looked at. */
static bool leaves_join(struct ult *t)
{
	return (atomic_load_explicit(&t->cancel, memory_order_seq_cst) &
		(CANCEL_PENDING | CANCEL_ACTING)) != 0;
}

int ult_join(struct ult *t, void **res, const struct timespec *abstime, clockid_t clk,
	     bool try_only)
{
	struct ult *self = ult_self();
	if (ult_stale(t))
		return stale_error(t);
	/* glibc's pthread_tryjoin_np looks at nothing else first: a running
	 * thread, the caller or a detached one included, is EBUSY. */
	if (try_only && atomic_load_explicit(&t->state, memory_order_acquire) != ULT_ZOMBIE)
		return EBUSY;
	if (t == self)
		return EDEADLK;
	spin_lock(&t->lock);
	if (t->detached || (t->joined && atomic_load(&t->state) != ULT_ZOMBIE)) {
		spin_unlock(&t->lock);
		return EINVAL;
	}
	if (t->joining == self && !leaves_join(t)) {   /* both would wait forever */
		spin_unlock(&t->lock);
		return EDEADLK;
	}
	while (atomic_load_explicit(&t->state, memory_order_acquire) != ULT_ZOMBIE) {
		if (try_only) {
			spin_unlock(&t->lock);
			return EBUSY;
		}
		t->joined = true;
		self->joining = t;
		waitq_push(&t->joinq, self);
		int err = sched_park_flags(&t->lock, &t->joinq, abstime, clk, PARK_CP | PARK_INTR);
		self->joining = NULL;
		spin_lock(&t->lock);
		/* A signal: the handler has run, wait again (the loop re-queues us). */
		if (err && err != EINTR &&
		    atomic_load_explicit(&t->state, memory_order_acquire) != ULT_ZOMBIE) {
			t->joined = false;
			spin_unlock(&t->lock);
			return err;
		}
	}
	t->joined = true;
	spin_unlock(&t->lock);
	if (res)
		*res = t->result;
	ult_recycle(t);
	return 0;
}

/* A cancelled join leaves the target joinable (ult_join undid its claim). */
static int join_cp(int err)
{
	if (ppl_unlikely(err == ECANCELED))
		cancel_act();
	return err;
}

int ppl_pthread_join(pthread_t t, void **res)
{
	sched_point();
	cancel_point();
	return join_cp(ult_join((struct ult *)t, res, NULL, CLOCK_REALTIME, false));
}

int ppl_pthread_tryjoin_np(pthread_t th, void **res)
{
	sched_point();
	/* A thread still running is EBUSY before anything else, as in glibc:
	 * the caller itself, or a detached thread, too. */
	struct ult *t = (struct ult *)th;
	if (!ult_stale(t) && atomic_load_explicit(&t->state, memory_order_acquire) != ULT_ZOMBIE)
		return EBUSY;
	return ult_join(t, res, NULL, CLOCK_REALTIME, true);
}

int ppl_pthread_timedjoin_np(pthread_t t, void **res, const struct timespec *ts)
{
	sched_point();
	cancel_point();
	if (ts && (ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000L))
		return EINVAL;
	return join_cp(ult_join((struct ult *)t, res, ts, CLOCK_REALTIME, false));
}

int ppl_pthread_clockjoin_np(pthread_t t, void **res, clockid_t c, const struct timespec *ts)
{
	sched_point();
	if (c != CLOCK_REALTIME && c != CLOCK_MONOTONIC)
		return EINVAL;
	cancel_point();
	if (ts && (ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000L))
		return EINVAL;
	return join_cp(ult_join((struct ult *)t, res, ts, c, false));
}

int ppl_pthread_detach(pthread_t th)
{
	struct ult *t = (struct ult *)th;
	if (ult_stale(t))
		return stale_error(t);
	spin_lock(&t->lock);
	if (t->detached || t->joined) {
		spin_unlock(&t->lock);
		return EINVAL;
	}
	t->detached = true;
	bool zombie = atomic_load_explicit(&t->state, memory_order_acquire) == ULT_ZOMBIE;
	spin_unlock(&t->lock);
	if (zombie)
		ult_recycle(t);
	return 0;
}

/* ---- identity ----------------------------------------------------------------------------- */

pthread_t ppl_pthread_self(void)
{
	return (pthread_t)ult_self();
}

int ppl_pthread_equal(pthread_t a, pthread_t b)
{
	return a == b;
}

int ppl_pthread_yield(void)
{
	sched_yield_user();
	cancel_async_check();
	return 0;
}

int ppl_pthread_getattr_np(pthread_t th, pthread_attr_t *a)
{
	struct ult *t = (struct ult *)th;
	if (ult_stale(t))
		return ESRCH;
	struct thread_attrs at = {
		.stacksize = t->stack.size,
		.stackaddr = t->stack.lo,
		.guardsize = t->attr_guard,
		.detachstate = t->detached ? PTHREAD_CREATE_DETACHED : PTHREAD_CREATE_JOINABLE,
		.scope = t->sys_scope ? PTHREAD_SCOPE_SYSTEM : PTHREAD_SCOPE_PROCESS,
		.inheritsched = t->inherit_sched ? PTHREAD_INHERIT_SCHED : PTHREAD_EXPLICIT_SCHED,
		.policy = t->sched_policy,
		.param = t->sched_param,
	};
	if (t->is_main) {
		/* The process's own kernel thread and stack, as glibc says:
		 * system scope, and the stack RLIMIT_STACK allows now (it
		 * may have been lowered since start-up). */
		at.scope = PTHREAD_SCOPE_SYSTEM;
		int err = vp_kthread_stack(ppl_rt.main_kthread, &at.stackaddr, &at.stacksize);
		if (err)
			return err;
	} else if (t->foreign) {
		int err = vp_kthread_stack(0, &at.stackaddr, &at.stacksize);
		if (err)
			return err;
	}
	/* glibc gives every thread's attributes its affinity. */
	cpu_set_t cpus;
	if (ppl_pthread_getaffinity_np(th, sizeof cpus, &cpus) == 0) {
		at.cpuset = &cpus;
		at.cpusetsize = sizeof cpus;
	}
	return attr_write(a, &at);
}

/* ---- names ----------------------------------------------------------------------------------- */

int ppl_pthread_setname_np(pthread_t th, const char *name)
{
	struct ult *t = (struct ult *)th;
	if (ult_stale(t))
		return ESRCH;
	size_t n = strlen(name);
	if (n >= sizeof t->name)
		return ERANGE;
	memcpy(t->name, name, n + 1);
	/* The kernel's name too, as glibc gives it: the caller's kernel
	 * thread (for a user thread its VP's, which keeps the name of the
	 * last thread that named itself there: docs/posix.md), and the
	 * kernel thread that gettid() names: the one a bound or foreign
	 * thread has to itself, the initial one for the initial thread
	 * (which may run on another VP: /proc/self/task/<gettid()>/comm
	 * then still reads its name, glibc's tst-setgetname). */
	if (t == ult_self()) {
		int err = vp_kthread_set_name(0, t->name);
		if (err)
			return err;
	}
	int tid = t->is_main ? vp_initial_kthread_id() : own_kthread(t);
	if (tid == 0 || (t == ult_self() && tid == vp_gettid()))
		return 0;
	return vp_kthread_set_name(tid, t->name);
}

int ppl_pthread_getname_np(pthread_t th, char *buf, size_t len)
{
	struct ult *t = (struct ult *)th;
	if (ult_stale(t))
		return ESRCH;
	if (len < sizeof t->name)
		return ERANGE;
	if (t->name[0]) {
		strcpy(buf, t->name);
		return 0;
	}
	/* Unnamed: like a fresh kernel thread, it carries the program's name.
	 * Not a cancellation point, as in glibc. */
	return vp_process_name(buf, len);
}

