/* Per-thread CPU-time clocks: pthread_getcpuclockid, and clock_gettime /
 * clock_getres on the clocks it returns, on CLOCK_THREAD_CPUTIME_ID (the
 * calling thread's) and on the kernel's encoding of a gettid() value;
 * getrusage(RUSAGE_THREAD).
 *
 * The kernel measures the CPU time of the VPs' kernel threads, not of user
 * threads.  A user thread's time is the sum, over the times it ran, of its
 * kernel thread's CPU time between switch-in and switch-out (cpu_switch,
 * called at every switch).  Reading the kernel thread's CPU clock is a
 * system call, so switches pay for it only once a program has asked for a
 * CPU clock: counting starts at the first pthread_getcpuclockid, or the
 * first read of a thread's CPU time.  Threads that were running then
 * (or that a VP switched in as it began, before it saw it) count from the
 * first of: their next switch-in, their VP's next preemption tick
 * (cpuclock_tick), a read of their own clock; the caller from then;
 * threads created later count from zero.  Not from their next switch-in
 * only: a thread computing alone on its VP is never switched out, and its
 * clock and its timers stood still (tp_cputimer on 2 VPs hung, its timed
 * thread reading 0 ns for ever).  A thread with a kernel thread of its
 * own since it began (foreign, and the initial thread before start-up)
 * reads that kernel thread's clock, which has its whole time.
 *
 * Clock ids: the kernel's CPU clock of a kernel thread is vpdep's
 * vp_kthread_cpuclock(tid), (~tid << 3) | 6;
 * libppl's use the low bits 7, a clock type the kernel rejects (EINVAL), so
 * they can never be mistaken for the kernel's.  The bits above are an index
 * into a table of the threads that asked; a thread's entry records its
 * sequence number, so a clock of a thread that is gone reads EINVAL.
 * The kernel's encoding of an id that gettid() gave a user thread (above
 * every kernel id: threadid.c) names that thread's clock too. */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cpuclock.h"
#include "preempt.h"
#include "scheduler.h"
#include "thread.h"
#include "ult.h"
#include "vproc.h"

#define CLOCK_TAG 7
#define CHUNK 1024
#define CHUNKS 1024    /* up to a million clocks */

struct clock_slot {
	struct ult *_Atomic t;
	_Atomic unsigned long id;
};

static struct {
	spin_t lock;
	int used;                                  /* slots handed out */
	struct clock_slot *_Atomic chunk[CHUNKS];
} clocks;

_Atomic bool cpu_counting;

/* The C library's clock_gettime and clock_getres. */
typedef int gettime_fn(clockid_t, struct timespec *);
static gettime_fn *_Atomic next_gettime;

static int real_gettime(clockid_t c, struct timespec *ts)
{
	void *f = vp_libc_fn((void *_Atomic *)&next_gettime, "clock_gettime", NULL);
	return ((gettime_fn *)f)(c, ts);
}

static int real_getres(clockid_t c, struct timespec *ts)
{
	static void *_Atomic next;
	return ((int (*)(clockid_t, struct timespec *))vp_libc_fn(&next, "clock_getres", NULL))(c, ts);
}

/* The calling kernel thread's CPU time, in ns. */
static int64_t kcpuclock_ns(void)
{
	struct timespec ts;
	real_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return timespec_to_ns(&ts);
}

/* A thread's cpu_ns and cpu_since change only on the VP that runs it (one
 * writer at a time), and its vp before it is switched in there; another
 * thread reads them together, retrying while cpu_seq is odd or moved
 * (cpuclock_ns).  Read apart, a switch-out and a switch-in on another VP
 * between the reads paired the old total with a start on the new VP's
 * clock, and the read came out a whole segment behind (peercpu on clone:
 * 112 ms, 1 run in 70). */
static void seq_write(struct ult *t)
{
	uint32_t s = atomic_load_explicit(&t->cpu_seq, memory_order_relaxed);
	atomic_store_explicit(&t->cpu_seq, s + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

static void seq_done(struct ult *t)
{
	uint32_t s = atomic_load_explicit(&t->cpu_seq, memory_order_relaxed);
	atomic_store_explicit(&t->cpu_seq, s + 1, memory_order_release);
}

void cpu_switch_slow(struct ult *from, struct ult *to)
{
	int64_t now = kcpuclock_ns();
	if (from != NULL) {
		seq_write(from);
		if (from->cpu_since != 0)   /* 0: running since before counting began */
			from->cpu_ns += now - from->cpu_since;
		from->cpu_since = 0;
		seq_done(from);
		/* Its CPU-time timers (cputimer.c): due now that it stops. */
		int64_t due = atomic_load_explicit(&from->cputimer_due, memory_order_relaxed);
		if (ppl_unlikely(due != 0) && from->cpu_ns >= due)
			cputimer_expire(from, from->cpu_ns);
	}
	if (to != NULL) {
		seq_write(to);
		to->cpu_since = now;
		seq_done(to);
	}
}

static struct clock_slot *slot(int i)
{
	struct clock_slot *c = atomic_load_explicit(&clocks.chunk[i / CHUNK], memory_order_acquire);
	return c ? &c[i % CHUNK] : NULL;
}

/* Counting starts now, for the caller too: from its kernel thread's time
 * now, or from that thread's start if it has run alone there (foreign;
 * cpu_since 1: 0 means not counting). */
void cpuclock_counting_start(void)
{
	if (ppl_likely(atomic_load_explicit(&cpu_counting, memory_order_acquire)))
		return;
	if (!atomic_exchange_explicit(&cpu_counting, true, memory_order_acq_rel)) {
		struct ult *self = ult_self();
		seq_write(self);
		self->cpu_since = self->foreign ? 1 : kcpuclock_ns();
		seq_done(self);
	}
}

int ppl_pthread_getcpuclockid(pthread_t th, clockid_t *cid)
{
	struct ult *t = (struct ult *)th;
	int state = atomic_load_explicit(&t->state, memory_order_acquire);
	if (state == ULT_FREE)
		return ESRCH;
	cpuclock_counting_start();
	spin_lock(&clocks.lock);
	int i = t->cpu_clock - 1;
	if (i < 0 || slot(i) == NULL ||
	    atomic_load_explicit(&slot(i)->t, memory_order_relaxed) != t) {
		i = clocks.used;
		if (i >= CHUNK * CHUNKS) {
			spin_unlock(&clocks.lock);
			return EAGAIN;
		}
		if (slot(i) == NULL) {
			struct clock_slot *c = calloc(CHUNK, sizeof *c);
			if (c == NULL) {
				spin_unlock(&clocks.lock);
				return ENOMEM;
			}
			atomic_store_explicit(&clocks.chunk[i / CHUNK], c, memory_order_release);
		}
		clocks.used++;
		atomic_store_explicit(&slot(i)->id, t->id, memory_order_relaxed);
		atomic_store_explicit(&slot(i)->t, t, memory_order_release);
		t->cpu_clock = i + 1;
	}
	spin_unlock(&clocks.lock);
	*cid = (clockid_t)(((unsigned)~i << 3) | CLOCK_TAG);
	return 0;
}

/* The thread a libppl clock id names, or NULL (not ours, or gone).  Ours:
 * libppl's ids, CLOCK_THREAD_CPUTIME_ID (the caller, unless it has a
 * kernel thread of its own: then the kernel's), and the kernel's encoding
 * of a user thread's gettid() value. */
struct ult *cpuclock_thread(clockid_t c, bool *ours)
{
	*ours = false;
	if (c == CLOCK_THREAD_CPUTIME_ID || c == vp_kthread_cpuclock(0)) {
		struct ult *self = ult_self();
		*ours = !self->foreign;
		return *ours ? self : NULL;
	}
	pid_t tid = vp_cpuclock_kthread(c);
	if (tid >= 0) {
		if (!tid_is_virtual(tid))
			return NULL;
		*ours = true;
		return tid_thread(tid);
	}
	*ours = c < 0 && (c & 7) == CLOCK_TAG;
	if (!*ours)
		return NULL;
	int i = (int)~((unsigned)c >> 3) & 0x1fffffff;
	if (i < 0 || i >= CHUNK * CHUNKS || slot(i) == NULL)
		return NULL;
	struct ult *t = atomic_load_explicit(&slot(i)->t, memory_order_acquire);
	if (t == NULL || t->id != atomic_load_explicit(&slot(i)->id, memory_order_relaxed) ||
	    atomic_load_explicit(&t->state, memory_order_acquire) == ULT_FREE)
		return NULL;
	return t;
}

void cpuclock_tick(struct ult *t)
{
	if (ppl_unlikely(t->cpu_since == 0) && !t->foreign &&
	    atomic_load_explicit(&cpu_counting, memory_order_acquire)) {
		seq_write(t);
		t->cpu_since = kcpuclock_ns();
		seq_done(t);
	}
}

/* t's CPU time.  A thread running on another VP right now: what it had
 * at its last switch-out plus its kernel thread's time since. */
int64_t cpuclock_ns(struct ult *t)
{
	cpuclock_counting_start();
	struct timespec ts;
	if (t->foreign) {
		/* Its own kernel thread's, whole. */
		clockid_t k = t == ult_self() ? CLOCK_THREAD_CPUTIME_ID : vp_kthread_cpuclock(t->ktid);
		return real_gettime(k, &ts) == 0 ? timespec_to_ns(&ts) : t->cpu_ns;
	}
	struct vproc *me = (struct vproc *)vp_current();
	if (me != NULL && me->current == t) {
		/* Running here since before counting began (or switched in by
		 * a VP that had not seen it begin): it counts from now. */
		cpuclock_tick(t);
		return t->cpu_ns + kcpuclock_ns() - t->cpu_since;
	}
	for (;;) {
		uint32_t seq = atomic_load_explicit(&t->cpu_seq, memory_order_acquire);
		if (seq & 1) {
			cpu_relax();
			continue;
		}
		int64_t total = t->cpu_ns, since = t->cpu_since;
		struct vproc *v = t->vp;
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&t->cpu_seq, memory_order_relaxed) != seq)
			continue;
		if (since == 0)
			return total;
		/* The kernel's CPU clock of that kernel thread (glibc's
		 * encoding); the kernel reads no other thread group's (the
		 * process backend's VP processes): then /proc's count.  An
		 * unchanged cpu_seq after the read says t ran there all along. */
		int tid = v ? vp_kthread_id(&v->vp) : 0;
		if (tid > 0 && v->current == t) {
			int64_t now = real_gettime(vp_kthread_cpuclock(tid), &ts) == 0
					      ? timespec_to_ns(&ts)
					      : vp_kthread_runtime_ns(tid);
			atomic_thread_fence(memory_order_acquire);
			if (atomic_load_explicit(&t->cpu_seq, memory_order_relaxed) != seq)
				continue;   /* switched meanwhile: `now` may be another's */
			if (now - since > 0)
				total += now - since;
		}
		return total;
	}
}

static __attribute__((noinline)) int clock_gettime_slow(clockid_t c, struct timespec *ts)
{
	if (vp_cpuclock_is_program(c)) {
		/* The program's, which a VP backend may make of several processes. */
		int64_t ns = vp_process_cputime_ns();
		if (ns < 0)
			return real_gettime(c, ts);
		struct timespec all = ns_to_timespec(ns);
		if (vp_copy_out(ts, &all, sizeof all) != 0) {
			errno = EFAULT;
			return -1;
		}
		return 0;
	}
	bool ours;
	struct ult *t = cpuclock_thread(c, &ours);
	if (!ours)
		return real_gettime(c, ts);
	if (t == NULL) {
		errno = EINVAL;
		return -1;
	}
	/* The kernel writes a CPU clock's time: EFAULT for a bad ts. */
	struct timespec now = ns_to_timespec(cpuclock_ns(t));
	if (vp_copy_out(ts, &now, sizeof now) != 0) {
		errno = EFAULT;
		return -1;
	}
	/* A thread that spins reading its own CPU clock is nearly always
	 * here, where a tick does not switch it out: a preemption put off
	 * (a thread woken for a signal, say) is taken on the way out. */
	preempt_point();
	return 0;
}

/* The other clocks (CLOCK_MONOTONIC and co., the C library's vDSO path)
 * pay three compares, a call and preempt_point's load: no stack protector,
 * which the slow path's locals would bring.  A thread that spins until a
 * deadline is nearly always in the vDSO, where a tick is deferred: it
 * pays here (spincalls.c).  Callgrind, a loop of calls: 17 instructions a
 * call natively, 31 through libppl as a tail call, 39 with the point. */
int ppl_clock_gettime(clockid_t c, struct timespec *ts)
{
	if (ppl_likely(c >= 0 && c != CLOCK_THREAD_CPUTIME_ID && c != CLOCK_PROCESS_CPUTIME_ID)) {
		gettime_fn *f = atomic_load_explicit(&next_gettime, memory_order_acquire);
		if (ppl_likely(f != NULL)) {
			int r = f(c, ts);
			preempt_point();
			return r;
		}
	}
	return clock_gettime_slow(c, ts);
}

/* glibc's clock() reads CLOCK_PROCESS_CPUTIME_ID by an internal call,
 * which a VP backend of several processes would count for one: the same
 * computation on the program's CPU time. */
clock_t ppl_clock(void)
{
	struct timespec ts;
	if (ppl_clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
		return (clock_t)-1;
	return (clock_t)ts.tv_sec * CLOCKS_PER_SEC + ts.tv_nsec / (1000000000 / CLOCKS_PER_SEC);
}

int ppl_clock_getres(clockid_t c, struct timespec *ts)
{
	bool ours;
	struct ult *t = cpuclock_thread(c, &ours);
	if (!ours)
		return real_getres(c, ts);
	if (t == NULL) {
		errno = EINVAL;
		return -1;
	}
	struct timespec res = { 0, 1 };
	if (ts != NULL && vp_copy_out(ts, &res, sizeof res) != 0) {
		errno = EFAULT;
		return -1;
	}
	return 0;
}

/* getrusage(RUSAGE_THREAD) of a user thread: its CPU time, split between
 * user and system time in the proportion of its kernel thread's; the other
 * fields are that kernel thread's (docs/scheduling.md). */
int ppl_getrusage(__rusage_who_t who, struct rusage *r)
{
	static void *_Atomic next;
	int (*real)(__rusage_who_t, struct rusage *) =
		(int (*)(__rusage_who_t, struct rusage *))vp_libc_fn(&next, "getrusage", NULL);
	struct ult *self;
	if (who != RUSAGE_THREAD)
		return procwide_rusage(who, r);
	if ((self = ult_self())->foreign)
		return real(who, r);
	struct rusage k;
	if (real(who, &k) != 0)
		return -1;
	int64_t total = cpuclock_ns(self);
	int64_t ku = (int64_t)k.ru_utime.tv_sec * 1000000000 + k.ru_utime.tv_usec * 1000;
	int64_t ks = (int64_t)k.ru_stime.tv_sec * 1000000000 + k.ru_stime.tv_usec * 1000;
	int64_t user = ku + ks > 0 ? (int64_t)((double)total * ku / (ku + ks)) : total;
	int64_t sys = total - user;
	k.ru_utime = (struct timeval){ user / 1000000000, user % 1000000000 / 1000 };
	k.ru_stime = (struct timeval){ sys / 1000000000, sys % 1000000000 / 1000 };
	if (vp_copy_out(r, &k, sizeof k) != 0) {
		errno = EFAULT;
		return -1;
	}
	return 0;
}
