/* POSIX timers on a user thread's CPU clock: timer_create on
 * CLOCK_THREAD_CPUTIME_ID, on a pthread_getcpuclockid clock or on the
 * kernel's clock of a gettid() value, and timer_settime, timer_gettime,
 * timer_getoverrun and timer_delete on them.  Every other timer is the C
 * library's, passed through untouched.
 *
 * The kernel's CPU timers measure kernel threads, and a VP's runs many
 * user threads.  A libppl timer is due when its thread's CPU time
 * (cpuclock.c) reaches a value: checked when the thread is switched out
 * (cpu_switch_slow) and at each preemption tick of its VP while it runs
 * (preempt.c), so it expires up to a tick of the thread's CPU time late
 * (docs/scheduling.md).  ult->cputimer_due is the earliest value of its
 * thread's timers, so other threads pay one load.
 *
 * timer_t: glibc 2.36 hands out the kernel's timer id (0 to INT_MAX) or,
 * for SIGEV_THREAD, a negative value; libppl's are ID_BASE + slot, above
 * both, so the two kinds mix in one program.
 *
 * Notification as the kernel's: SIGEV_SIGNAL queues si_code SI_TIMER with
 * sigev_value and the overrun to the process; SIGEV_THREAD_ID to the
 * thread gettid() named; SIGEV_NONE nothing; SIGEV_THREAD, as glibc's
 * helper does, runs the function in a new detached thread: a kernel thread
 * of libppl's (vp_helper_create) starts them, woken by a futex, since an
 * expiry happens inside a switch or a signal handler. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpuclock.h"
#include "sig.h"
#include "thread.h"
#include "ult.h"

#define MAX_TIMERS 1024
#define ID_BASE ((uintptr_t)0x7050 << 32)

struct cputimer {
	struct ult *t;             /* its thread; NULL: the slot is free */
	unsigned long tseq;        /* t->id at creation: t may be reused */
	int64_t due;               /* t's CPU time at expiry, 0: disarmed */
	int64_t interval;
	int notify, signo;
	union sigval value;
	struct ult *target;        /* SIGEV_THREAD_ID */
	unsigned long target_seq;
	void (*fn)(union sigval);  /* SIGEV_THREAD */
	pthread_attr_t attr;
	bool has_attr;
	unsigned fired;            /* SIGEV_THREAD expiries the helper has not started */
	bool queued;               /* SIGEV_SIGNAL: a signal of ours may be pending */
	int overrun_queued;        /* ... with this overrun */
	int overrun_more;          /* expiries while it was pending */
	int overrun_last;          /* timer_getoverrun */
};

static struct {
	spin_t lock;
	int hi;                    /* slots below are or were in use */
	struct cputimer slot[MAX_TIMERS];
} tab;

static _Atomic uint32_t helper_word;
static _Atomic bool helper_on;

bool cputimer_used(void)
{
	return __atomic_load_n(&tab.hi, __ATOMIC_RELAXED) > 0;
}

static bool alive(const struct cputimer *ct)
{
	return ct->t->id == ct->tseq &&
	       atomic_load_explicit(&ct->t->state, memory_order_acquire) != ULT_FREE;
}

static struct cputimer *lookup(timer_t id)
{
	uintptr_t v = (uintptr_t)id;
	if (v < ID_BASE || v >= ID_BASE + MAX_TIMERS)
		return NULL;
	return &tab.slot[v - ID_BASE];
}

static int sat(int64_t n)
{
	return n > DELAYTIMER_MAX ? DELAYTIMER_MAX : (int)n;
}

/* t's earliest due time, again (tab.lock held). */
static void due_update(struct ult *t)
{
	int64_t d = 0;
	for (int i = 0; i < tab.hi; i++) {
		struct cputimer *ct = &tab.slot[i];
		if (ct->t == t && ct->tseq == t->id && ct->due != 0 && (d == 0 || ct->due < d))
			d = ct->due;
	}
	atomic_store_explicit(&t->cputimer_due, d, memory_order_relaxed);
}

/* Our last signal has been taken: its overrun, and those of the expiries
 * while it was pending, are what timer_getoverrun reports.  Pending: on
 * the kernel, or claimed by the process and not yet taken (sigroute.c). */
static void overrun_settle(struct cputimer *ct)
{
	uint64_t pend = vp_program_sigpending() |
			atomic_load_explicit(&sig_claims, memory_order_acquire);
	if (ct->queued && !(pend & (1ull << (ct->signo - 1)))) {
		ct->queued = false;
		ct->overrun_last = sat((int64_t)ct->overrun_queued + ct->overrun_more);
		ct->overrun_more = 0;
	}
}

static void notify(struct cputimer *ct, int overrun)
{
	siginfo_t si;
	memset(&si, 0, sizeof si);
	si.si_signo = ct->signo;
	si.si_code = SI_TIMER;
	si.si_timerid = (int)(ct - tab.slot);
	si.si_value = ct->value;
	switch (ct->notify) {
	case SIGEV_SIGNAL:
		overrun_settle(ct);
		if (ct->queued) {
			/* Still pending: the kernel counts an overrun. */
			ct->overrun_more = sat((int64_t)ct->overrun_more + overrun + 1);
			return;
		}
		si.si_overrun = overrun;
		ct->queued = vp_process_sigqueue(ct->signo, &si) == 0;
		ct->overrun_queued = overrun;
		if (!ct->queued)
			ct->overrun_last = overrun;
		return;
	case SIGEV_THREAD_ID:
		si.si_overrun = overrun;
		ct->overrun_last = overrun;
		if (ct->target->id == ct->target_seq)
			sig_queue_ult(ct->target, &si);
		return;
	case SIGEV_THREAD:
		ct->overrun_last = overrun;
		ct->fired++;
		atomic_fetch_add_explicit(&helper_word, 1, memory_order_release);
		futex_wake(&helper_word, 1);
		return;
	default:   /* SIGEV_NONE */
		ct->overrun_last = overrun;
		return;
	}
}

/* ct is due at `now` (tab.lock held): notify, and reload or disarm. */
static void fire(struct cputimer *ct, int64_t now)
{
	int64_t n = 1;
	if (ct->interval > 0) {
		n += (now - ct->due) / ct->interval;
		ct->due += n * ct->interval;
	} else {
		ct->due = 0;
	}
	notify(ct, sat(n - 1));
}

void cputimer_expire(struct ult *t, int64_t now)
{
	spin_lock(&tab.lock);
	for (int i = 0; i < tab.hi; i++) {
		struct cputimer *ct = &tab.slot[i];
		if (ct->t == t && ct->tseq == t->id && ct->due != 0 && ct->due <= now)
			fire(ct, now);
	}
	due_update(t);
	spin_unlock(&tab.lock);
}

void cputimer_fork_child(void)
{
	/* The forking thread held no lock of ours: fork takes none of them,
	 * but another thread of the parent may have held it.  Nothing is
	 * written that is already as it should be: a store copies the page
	 * (155 KiB of table, which a child that made no timer never touches). */
	if (atomic_load_explicit(&tab.lock, memory_order_relaxed) != 0)
		spin_init(&tab.lock);
	for (int i = 0; i < tab.hi; i++) {
		struct cputimer *ct = &tab.slot[i];
		if (ct->t != NULL && ct->tseq == ct->t->id)
			atomic_store_explicit(&ct->t->cputimer_due, 0, memory_order_relaxed);
		if (ct->has_attr)
			ppl_pthread_attr_destroy(&ct->attr);
	}
	if (tab.hi != 0) {
		memset(tab.slot, 0, (size_t)tab.hi * sizeof *tab.slot);
		tab.hi = 0;
	}
	if (atomic_load(&helper_on))
		atomic_store(&helper_on, false);
}

/* ---- SIGEV_THREAD ------------------------------------------------------------- */

struct start {
	void (*fn)(union sigval);
	union sigval value;
};

static void *sigev_thread(void *arg)
{
	struct start s = *(struct start *)arg;
	free(arg);
	/* glibc's runs the function with no signal blocked. */
	sigset_t none;
	sigemptyset(&none);
	ppl_pthread_sigmask(SIG_SETMASK, &none, NULL);
	s.fn(s.value);
	return NULL;
}

static void helper_main(void *arg)
{
	(void)arg;
	for (;;) {
		uint32_t seen = atomic_load_explicit(&helper_word, memory_order_acquire);
		struct start *s = malloc(sizeof *s);
		pthread_attr_t attr;
		bool found = false;
		spin_lock(&tab.lock);
		for (int i = 0; i < tab.hi && s != NULL && !found; i++) {
			struct cputimer *ct = &tab.slot[i];
			if (ct->t == NULL || ct->notify != SIGEV_THREAD || ct->fired == 0)
				continue;
			ct->fired--;
			s->fn = ct->fn;
			s->value = ct->value;
			attr = ct->attr;
			found = true;
		}
		spin_unlock(&tab.lock);
		if (!found) {
			free(s);
			futex_wait(&helper_word, seen, NULL, CLOCK_MONOTONIC);
			continue;
		}
		pthread_t th;
		if (ppl_pthread_create(&th, &attr, sigev_thread, s) != 0)
			free(s);
	}
}

/* The new threads' attributes: the caller's, detached (glibc copies them). */
static int attr_copy(pthread_attr_t *to, const pthread_attr_t *from)
{
	ppl_pthread_attr_init(to);
	if (from != NULL) {
		size_t n;
		int v;
		struct sched_param p;
		if (ppl_pthread_attr_getstacksize(from, &n) == 0)
			ppl_pthread_attr_setstacksize(to, n);
		if (ppl_pthread_attr_getguardsize(from, &n) == 0)
			ppl_pthread_attr_setguardsize(to, n);
		if (ppl_pthread_attr_getscope(from, &v) == 0)
			ppl_pthread_attr_setscope(to, v);
		if (ppl_pthread_attr_getinheritsched(from, &v) == 0)
			ppl_pthread_attr_setinheritsched(to, v);
		if (ppl_pthread_attr_getschedpolicy(from, &v) == 0)
			ppl_pthread_attr_setschedpolicy(to, v);
		if (ppl_pthread_attr_getschedparam(from, &p) == 0)
			ppl_pthread_attr_setschedparam(to, &p);
	}
	return ppl_pthread_attr_setdetachstate(to, PTHREAD_CREATE_DETACHED);
}

/* ---- the API ------------------------------------------------------------------------- */

/* GLIBC_2.3.3: the timer_t ABI of the headers; GLIBC_2.2.5 has the old
 * int-id ABI on x86_64 (the default, GLIBC_2.34 on 2.36, is the same as 2.3.3). */
#define REAL(name, type) ((type)vp_libc_fn(&next_##name, #name, "GLIBC_2.3.3"))
static void *_Atomic next_timer_create, *_Atomic next_timer_settime, *_Atomic next_timer_gettime,
	*_Atomic next_timer_getoverrun, *_Atomic next_timer_delete;

static int fail(int err)
{
	errno = err;
	return -1;
}

static bool sig_ok(int sig)
{
	return sig > 0 && sig <= 64 && !sig_reserved(sig) && sig != 32 && sig != 33;
}

int ppl_timer_create(clockid_t c, struct sigevent *restrict ev, timer_t *restrict id)
{
	typedef int create_fn(clockid_t, struct sigevent *, timer_t *);
	bool ours;
	struct ult *t = cpuclock_thread(c, &ours);
	if (!ours)
		return ktimer_create((void *)REAL(timer_create, create_fn *), c, ev, id);
	if (t == NULL)
		return fail(EINVAL);
	if (t->foreign)   /* a kernel thread of its own: the kernel's timer */
		return REAL(timer_create, create_fn *)(vp_kthread_cpuclock(t->ktid), ev, id);
	struct cputimer n = { .t = t, .tseq = t->id, .notify = SIGEV_SIGNAL, .signo = SIGALRM };
	if (ev != NULL) {
		struct sigevent e;
		if (vp_copy_in(&e, ev, sizeof e) != 0)
			return fail(EFAULT);
		n.notify = e.sigev_notify;
		n.signo = e.sigev_signo;
		n.value = e.sigev_value;
		switch (e.sigev_notify) {
		case SIGEV_NONE:
			break;
		case SIGEV_SIGNAL:
			if (!sig_ok(e.sigev_signo))
				return fail(EINVAL);
			break;
		case SIGEV_THREAD_ID:
			if (!sig_ok(e.sigev_signo) || e._sigev_un._tid <= 0 ||
			    (n.target = tid_thread(e._sigev_un._tid)) == NULL)
				return fail(EINVAL);
			n.target_seq = n.target->id;
			break;
		case SIGEV_THREAD:
			n.fn = e.sigev_notify_function;
			if (attr_copy(&n.attr, e.sigev_notify_attributes) != 0)
				return fail(EINVAL);
			n.has_attr = true;
			if (!atomic_exchange(&helper_on, true) &&
			    vp_helper_create(helper_main, NULL) != 0) {
				atomic_store(&helper_on, false);
				ppl_pthread_attr_destroy(&n.attr);
				return fail(EAGAIN);
			}
			break;
		default:
			return fail(EINVAL);
		}
	}
	cpuclock_counting_start();
	spin_lock(&tab.lock);
	int i = 0;
	while (i < MAX_TIMERS && tab.slot[i].t != NULL)
		i++;
	if (i == MAX_TIMERS) {
		spin_unlock(&tab.lock);
		if (n.has_attr)
			ppl_pthread_attr_destroy(&n.attr);
		return fail(EAGAIN);
	}
	tab.slot[i] = n;
	if (i >= tab.hi)
		tab.hi = i + 1;
	spin_unlock(&tab.lock);
	timer_t v = (timer_t)(ID_BASE + (uintptr_t)i);
	if (vp_copy_out(id, &v, sizeof v) != 0) {
		ppl_timer_delete(v);
		return fail(EFAULT);
	}
	return 0;
}

/* ct's remaining time and interval (tab.lock held); expiries that are due
 * happen first, as the kernel's do when read. */
static void get(struct cputimer *ct, struct itimerspec *out)
{
	memset(out, 0, sizeof *out);
	if (!alive(ct) || ct->due == 0)
		return;
	int64_t now = cpuclock_ns(ct->t);
	if (ct->due <= now) {
		fire(ct, now);
		due_update(ct->t);
	}
	out->it_interval = ns_to_timespec(ct->interval);
	if (ct->due != 0)
		out->it_value = ns_to_timespec(ct->due > now ? ct->due - now : 1);
}

static bool ts_ok(const struct timespec *ts)
{
	return ts->tv_sec >= 0 && ts->tv_nsec >= 0 && ts->tv_nsec < 1000000000;
}

int ppl_timer_settime(timer_t id, int flags, const struct itimerspec *restrict v,
		      struct itimerspec *restrict old)
{
	typedef int settime_fn(timer_t, int, const struct itimerspec *, struct itimerspec *);
	struct cputimer *ct = lookup(id);
	if (ct == NULL)
		return ktimer_settime((void *)REAL(timer_settime, settime_fn *), id, flags, v, old);
	struct itimerspec nv, ov;
	if (vp_copy_in(&nv, v, sizeof nv) != 0)
		return fail(EFAULT);
	if (!ts_ok(&nv.it_value) || !ts_ok(&nv.it_interval))
		return fail(EINVAL);
	spin_lock(&tab.lock);
	if (ct->t == NULL) {
		spin_unlock(&tab.lock);
		return fail(EINVAL);
	}
	if (!alive(ct)) {
		spin_unlock(&tab.lock);
		return fail(ESRCH);
	}
	get(ct, &ov);
	int64_t now = cpuclock_ns(ct->t);
	int64_t val = timespec_to_ns(&nv.it_value);
	ct->interval = val ? timespec_to_ns(&nv.it_interval) : 0;
	ct->due = val == 0 ? 0 : (flags & TIMER_ABSTIME) ? val : now + val;
	if (ct->due != 0 && ct->due <= now)
		fire(ct, now);   /* already due: at once, as the kernel's */
	due_update(ct->t);
	spin_unlock(&tab.lock);
	if (old != NULL && vp_copy_out(old, &ov, sizeof ov) != 0)
		return fail(EFAULT);
	return 0;
}

int ppl_timer_gettime(timer_t id, struct itimerspec *v)
{
	typedef int gettime_fn(timer_t, struct itimerspec *);
	struct cputimer *ct = lookup(id);
	if (ct == NULL)
		return ktimer_gettime((void *)REAL(timer_gettime, gettime_fn *), id, v);
	struct itimerspec cur;
	spin_lock(&tab.lock);
	if (ct->t == NULL) {
		spin_unlock(&tab.lock);
		return fail(EINVAL);
	}
	get(ct, &cur);
	spin_unlock(&tab.lock);
	if (vp_copy_out(v, &cur, sizeof cur) != 0)
		return fail(EFAULT);
	return 0;
}

int ppl_timer_getoverrun(timer_t id)
{
	struct cputimer *ct = lookup(id);
	if (ct == NULL)
		return ktimer_id_call((void *)REAL(timer_getoverrun, int (*)(timer_t)), id);
	spin_lock(&tab.lock);
	if (ct->t == NULL) {
		spin_unlock(&tab.lock);
		return fail(EINVAL);
	}
	if (ct->notify == SIGEV_SIGNAL)
		overrun_settle(ct);
	int n = ct->overrun_last;
	spin_unlock(&tab.lock);
	return n;
}

int ppl_timer_delete(timer_t id)
{
	struct cputimer *ct = lookup(id);
	if (ct == NULL)
		return ktimer_id_call((void *)REAL(timer_delete, int (*)(timer_t)), id);
	spin_lock(&tab.lock);
	struct ult *t = ct->t;
	if (t == NULL) {
		spin_unlock(&tab.lock);
		return fail(EINVAL);
	}
	bool has_attr = ct->has_attr;
	pthread_attr_t attr = ct->attr;
	memset(ct, 0, sizeof *ct);
	due_update(t);
	spin_unlock(&tab.lock);
	if (has_attr)
		ppl_pthread_attr_destroy(&attr);
	return 0;
}
