/* CPU affinity of user threads: pthread_setaffinity_np and
 * pthread_getaffinity_np (sched_setaffinity and sched_getaffinity on a
 * thread come here through schedparam.c), the attribute's set at create,
 * inheritance, and the VP kernel thread's own set while a thread runs.
 *
 * Invariants
 *  - A thread's set is the kernel's: the set given is checked by the
 *    kernel on the caller's kernel thread and read back (the kernel's
 *    EINVAL, EFAULT, its cgroup and online CPUs), then the caller's kernel
 *    thread gets back what it had.  Sets are interned (struct cpus, never
 *    freed), so a thread's set is one pointer, read without a lock, and two
 *    threads with one set have one pointer.
 *  - t->kcpus is the set a VP's kernel thread must have while t runs:
 *    NULL (the process's set, which every VP starts with) when t's set
 *    holds every CPU of the process, else t's set.  v->kcpus is what v's
 *    kernel thread has; only v itself changes it (sched_cpus_install, on
 *    resume: sig_resumed, and at its tick), so threads of one set switch
 *    with a compare and no system call, and a thread with a narrowed set
 *    never runs its code on a kernel thread that may run elsewhere.
 *  - A narrowed thread keeps to a home VP (the i-th CPU of the process
 *    maps to VP i mod the VP count; none on one VP), so threads of one CPU
 *    share a VP and its pinned kernel thread; the scheduler never takes a
 *    thread off its home (sched.c's list_find).  Any VP that does run it
 *    (a spare, one VP) re-pins itself first, so no set lacks a VP.
 *  - A new thread inherits its creator's set (as a kernel thread does),
 *    unless its attribute gives one.
 *  - Checking another thread's set never moves the caller: its kernel
 *    thread is given the set joined with its own (which holds the CPU it
 *    is on), and the kernel's answer for the set alone is what it kept of
 *    the set's CPUs.  Given the set alone, the kernel moved the caller to
 *    one of them before the call returned and back after, so its VP, and
 *    every thread queued there, waited for a turn on the new thread's CPU
 *    and then on its own (0.1 to 0.5 s a call under load, in a program
 *    that creates a thread pinned to each CPU, as glibc's
 *    tst-thread-affinity-* do); NPTL's caller does not move. */
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "pthread_impl.h"

struct cpus {
	struct cpus *next;   /* the interned list */
	bool wide;           /* holds every CPU of the process */
	bool inside;         /* holds only CPUs of the process */
	int index;           /* its first CPU's place among the process's */
	cpu_set_t set;
};

/* The initial thread's CPUs at start-up, which every VP's kernel thread
 * inherits and goes back to for a thread whose kcpus is NULL. */
static cpu_set_t process_cpus;
static struct cpus *interned;
/* Taken around a kernel check, which gives the caller's kernel thread
 * another set for a moment: no switch (a held lock defers ticks) may run
 * another thread there meanwhile.  Also guards `interned`. */
static spin_t check_lock;
/* Once true, a new VP's kernel thread may have inherited a narrowed set. */
static _Atomic bool narrowed;
static const struct cpus unknown;

void affinity_init(void)
{
	if (vp_task_getaffinity(0, sizeof process_cpus, &process_cpus) <= 0)
		memset(&process_cpus, 0xff, sizeof process_cpus);
}

const struct cpus *affinity_vp_initial(void)
{
	return atomic_load_explicit(&narrowed, memory_order_acquire) ? &unknown : NULL;
}

extern long ppl_env_timeslice_us PPL_HIDDEN;

/* v's kernel thread has c (on v's own kernel thread).  A thread of the
 * process's set may run there until the next tick if c is inside it, and
 * ticks run: with preemption off the VP re-pins at once. */
static void vp_has(struct vproc *v, const struct cpus *c)
{
	v->kinside = ppl_env_timeslice_us != 0 && (c == NULL || c->inside);
	atomic_store_explicit(&v->kcpus, c, memory_order_relaxed);
	vp_kstate_changed();
}

void sched_cpus_install(struct vproc *v, const struct cpus *c)
{
	vp_has(v, c);
	int e = errno;
	/* Refused (its CPUs went offline): the thread runs where the
	 * kernel lets it, as NPTL's thread would. */
	(void)vp_task_setaffinity(0, sizeof(cpu_set_t), c ? &c->set : &process_cpus);
	errno = e;
}

/* Caller holds check_lock. */
static const struct cpus *intern(const cpu_set_t *set)
{
	for (struct cpus *c = interned; c; c = c->next)
		if (CPU_EQUAL(&c->set, set))
			return c;
	struct cpus *c = malloc(sizeof *c);
	if (c == NULL)
		return NULL;
	c->set = *set;
	c->wide = true;
	c->inside = true;
	c->index = -1;
	int place = 0;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		bool in = CPU_ISSET(cpu, set);
		if (in && c->index < 0)
			c->index = CPU_ISSET(cpu, &process_cpus) ? place : cpu;
		if (in && !CPU_ISSET(cpu, &process_cpus))
			c->inside = false;
		if (CPU_ISSET(cpu, &process_cpus)) {
			c->wide = c->wide && in;
			place++;
		}
	}
	c->next = interned;
	interned = c;
	return c;
}

/* The VP a thread with kernel set kc keeps to, or NULL (any). */
static struct vproc *home_of(const struct cpus *kc)
{
	int nvps = ppl_rt.nvps;
	if (kc == NULL || nvps <= 1)
		return NULL;
	return ppl_rt.vps[kc->index % nvps];
}

/* t's sets are c (interned); its home follows unless it has a VP of its
 * own, or is the main thread that TLS shared per VP keeps on VP 0. */
static void thread_take(struct ult *t, const struct cpus *c)
{
	const struct cpus *kc = c && !c->wide ? c : NULL;
	atomic_store_explicit(&t->cpus, c, memory_order_relaxed);
	atomic_store_explicit(&t->kcpus, kc, memory_order_release);
	vp_kstate_changed();
	if (!t->bound && !t->foreign && !(t->is_main && !tls_per_thread))
		sched_affinity_home(t, home_of(kc));   /* a ppl_pin still wins (migrate.c) */
}

void affinity_inherit(struct ult *t, const struct ult *creator)
{
	const struct cpus *c = atomic_load_explicit(&creator->cpus, memory_order_relaxed);
	t->cpus = c;
	t->kcpus = c && !c->wide ? c : NULL;
	t->home = t->aff_home = home_of(t->kcpus);
}

/* Caller holds check_lock.  The kernel's answer for `set` (n bytes) on the
 * caller's kernel thread, without moving it: 0 and the set into *eff, an
 * errno, or -1 if `set` cannot be read here (the kernel is asked with it). */
static int check_beside(size_t n, const cpu_set_t *set, cpu_set_t *eff)
{
	cpu_set_t want, own, both;
	memset(&want, 0, sizeof want);
	memset(&own, 0, sizeof own);   /* the kernel fills only its mask's size */
	/* The kernel reads no more than its mask's size and zero-fills a
	 * shorter one; bits past CPU_SETSIZE name no CPU here. */
	if (vp_copy_in(&want, set, n < sizeof want ? n : sizeof want) != 0)
		return -1;
	if (vp_task_getaffinity(0, sizeof own, &own) < 0)
		return -1;
	CPU_OR(&both, &want, &own);
	if (vp_task_setaffinity(0, sizeof both, &both) != 0)
		return -1;
	cpu_set_t kept;
	memset(&kept, 0, sizeof kept);
	int err = vp_task_getaffinity(0, sizeof kept, &kept) < 0 ? errno : 0;
	(void)vp_task_setaffinity(0, sizeof own, &own);
	if (err)
		return err;
	CPU_AND(eff, &kept, &want);
	return CPU_COUNT(eff) ? 0 : EINVAL;   /* none allowed and online */
}

/* Set the caller's kernel thread to `set` for the kernel to check it, read
 * back what the kernel made of it, intern that as t's set, and give the
 * caller's kernel thread its own again (or keep it: t is the caller).
 * 0 or errno. */
static int check_and_take(struct ult *t, size_t n, const cpu_set_t *set)
{
	struct ult *self = ult_self();
	struct vproc *v = (struct vproc *)vp_current();
	cpu_set_t old, eff;
	memset(&eff, 0, sizeof eff);
	atomic_store_explicit(&narrowed, true, memory_order_release);
	spin_lock(&check_lock);
	int beside = t != self ? check_beside(n, set, &eff) : -1;
	if (beside >= 0) {
		const struct cpus *c = NULL;
		if (beside == 0 && (c = intern(&eff)) == NULL)
			beside = ENOMEM;
		if (beside == 0)
			thread_take(t, c);
		spin_unlock(&check_lock);
		return beside;
	}
	bool foreign = v == NULL || v->current != self;
	if (foreign && vp_task_getaffinity(0, sizeof old, &old) < 0) {
		spin_unlock(&check_lock);
		return errno;
	}
	if (vp_task_setaffinity(0, n, set) != 0) {
		int err = errno;
		spin_unlock(&check_lock);
		return err;
	}
	int err = 0;
	const struct cpus *c = NULL;
	if (vp_task_getaffinity(0, sizeof eff, &eff) < 0)
		err = errno;
	else if ((c = intern(&eff)) == NULL)
		err = ENOMEM;
	else
		thread_take(t, c);
	if (foreign)
		(void)vp_task_setaffinity(0, sizeof old, &old);
	else if (t == self && err == 0 && t->kcpus != NULL)
		vp_has(v, t->kcpus);   /* the kernel thread has it now */
	else if (t == self && err == 0)
		sched_cpus_install(v, NULL);
	else
		sched_cpus_install(v, v->kcpus == &unknown ? NULL : v->kcpus);
	spin_unlock(&check_lock);
	return err;
}

/* t has a kernel thread of its own (tid): the kernel sets it there. */
static int set_own(struct ult *t, pid_t tid, size_t n, const cpu_set_t *set)
{
	atomic_store_explicit(&narrowed, true, memory_order_release);
	if (vp_task_setaffinity(tid, n, set) != 0)
		return errno;
	cpu_set_t eff;
	memset(&eff, 0, sizeof eff);
	if (vp_task_getaffinity(tid, sizeof eff, &eff) < 0)
		return errno;
	spin_lock(&check_lock);
	const struct cpus *c = intern(&eff);
	if (c)
		thread_take(t, c);
	spin_unlock(&check_lock);
	/* Its VP's record of its kernel thread's set is stale now: the VP
	 * installs t's own set again when it next resumes t. */
	if (c && t->bound && t->home)
		atomic_store_explicit(&t->home->kcpus, &unknown, memory_order_relaxed);
	return c ? 0 : ENOMEM;
}

/* A user thread scheduled M:N whose set has just been narrowed gets a
 * kernel thread of its own, as a PTHREAD_SCOPE_SYSTEM thread may: a
 * program that pins a thread expects it to compete for its CPU as one
 * kernel thread, as on NPTL.  Kept on a shared VP, a pinned thread and
 * every thread queued there waited slices of that VP's CPU time, which
 * other processes' load stretched to seconds (glibc's
 * tst-thread-affinity-*: five threads on two VPs).  Not the main thread
 * (with TLS shared per VP it cannot leave VP 0; per thread, kept alike),
 * nor a thread pinned to a VP (ppl_pin wins).  The VP gives its kernel
 * thread t's set as it resumes t, before t's code runs (a spare VP whose
 * kernel thread already has it, by its record kcpus, makes no call).  Without a kernel thread
 * (EAGAIN) t stays M:N, on its home VP.  A bound thread stays bound when
 * its set is widened again: leaving needs no kernel thread less (NPTL's
 * thread keeps its own), and a program that pinned a thread once pins
 * it again (glibc's tests move one CPU to the next, widen, repeat). */
static void bind_pinned(struct ult *t)
{
	bool started = t->vp != NULL;   /* not a thread pthread_create is making */
	if (atomic_load_explicit(&t->kcpus, memory_order_relaxed) == NULL || t->bound ||
	    t->foreign || t->is_main || t->pin != NULL || t->migrating || ppl_bind_running(t) != 0)
		return;
	t->bound_late = started;
}

/* t may be running on another VP, w, whose kernel thread may run where t
 * may no longer: as the kernel moves a thread before its
 * sched_setaffinity returns, make w re-pin now (its tick does) and wait
 * until it has, or runs another thread.  Bounded: with preemption off
 * there is no tick to ask (w re-pins at t's next resume), and a VP that a
 * tick finds inside a lock re-pins at a later tick. */
static void moved_away(struct ult *t, struct vproc *w)
{
	const struct cpus *want = atomic_load_explicit(&t->kcpus, memory_order_relaxed);
	int64_t until = -1;
	while (atomic_load_explicit(&w->kcpus, memory_order_relaxed) != want &&
	       w->current == t && atomic_load_explicit(&t->state, memory_order_relaxed) == ULT_RUNNING) {
		int64_t now = clock_now_ns(CLOCK_MONOTONIC);
		if (until < 0) {
			if (!preempt_kick(w))
				return;
			until = now + 1000000000;
		} else if (now > until) {
			return;
		}
		sched_yield_user();
	}
}

int ppl_pthread_setaffinity_np(pthread_t th, size_t n, const cpu_set_t *set)
{
	struct ult *t = (struct ult *)th;
	if (ult_stale(t))
		return ESRCH;
	pid_t tid = own_kthread(t);
	int err = tid ? set_own(t, tid, n, set) : check_and_take(t, n, set);
	if (err || tid)
		return err;
	bind_pinned(t);
	struct vproc *w = t->vp;
	if (t == ult_self()) {
		if (t->home != NULL && t->home != w)
			sched_yield_ult();   /* moves there now */
	} else if (w != NULL && w != (struct vproc *)vp_current()) {
		moved_away(t, w);
	}
	return 0;
}

int ppl_pthread_getaffinity_np(pthread_t th, size_t n, cpu_set_t *set)
{
	struct ult *t = (struct ult *)th;
	if (ult_stale(t))
		return ESRCH;
	/* A bound thread's kernel thread takes its set when it resumes the
	 * thread (a spare VP, a thread bound by this set): report the set. */
	pid_t tid = t->foreign ? own_kthread(t) : 0;
	/* The kernel's checks of the size and the buffer, on a foreign
	 * thread's own kernel thread or the caller's; then the thread's set. */
	long r = vp_task_getaffinity(tid, n < INT_MAX ? n : INT_MAX, set);
	if (r < 0)
		return errno;
	if (!tid) {
		const struct cpus *c = atomic_load_explicit(&t->cpus, memory_order_relaxed);
		const cpu_set_t *mine = c ? &c->set : &process_cpus;
		size_t k = (size_t)r < sizeof *mine ? (size_t)r : sizeof *mine;
		memcpy(set, mine, k);
		memset((char *)set + k, 0, (size_t)r - k);
	}
	memset((char *)set + r, 0, n - (size_t)r);
	return 0;
}
