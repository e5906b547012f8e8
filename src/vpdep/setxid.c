/* Credential changes for every kernel thread of the process.
 *
 * Linux keeps credentials per kernel thread; glibc makes setuid and its
 * family process-wide by signalling each of its threads with SIGSETXID
 * (33), whose handler repeats the system call there (nptl_setxid.c).  Under
 * libppl that cannot work: glibc installs the handler only in its first
 * pthread_create while __libc_single_threaded is still set, which libppl
 * clears before it starts its VPs, so the signal killed the process
 * ("Unknown signal 33"); and glibc's bookkeeping runs on THREAD_SELF, which
 * is a user thread's TCB there, not the kernel thread's.
 *
 * So libppl does the same with its own handler on the same signal (which
 * applications cannot use: glibc's sigaction refuses it and libppl's masks
 * never block it): every other kernel thread the backend lists (its
 * each_task op; kthread: /proc/self/task, so VPs, spares, the monitor, and
 * threads libppl did not make, such as the C library's own helpers, which a
 * list of libppl's own kernel threads would miss; process: every VP
 * process's too) gets SIGSETXID and repeats the call; the caller waits for
 * them all, then lists the tasks again until it finds none it has not
 * done, so that a kernel thread created meanwhile by one not yet done is
 * done too; then it makes the call on its own kernel thread, last, as
 * glibc does.  As in glibc, a call that fails everywhere (EPERM) changes
 * nothing and returns the error, and one whose result differs between
 * kernel threads (credentials made to differ with a raw system call) is
 * reported for the caller to abort.
 *
 * The cost, for the caller and k other kernel threads: getpid and gettid
 * once, two lists of four system calls each, and per other thread its
 * tgkill, the handler's gettid, call and rt_sigreturn; one futex wake by
 * the last handler, and the caller's futex waits (docs/vpdep.md). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "context.h"
#include "futex.h"
#include "syscall_raw.h"
#include "vp_backend.h"

#define SIGSETXID 33

struct xid_task {
	_Atomic pid_t tid;
	pid_t tgid;           /* its thread group, for tgkill */
	_Atomic int done;     /* 1 once answered: by its handler, or gone */
	int err;              /* that call's errno, 0 on success; -1 not compared */
};

/* The broadcast in progress: one at a time (xid_lock). */
static struct {
	long nr, arg[3];
	pid_t sender;               /* the broadcaster's thread group */
	struct xid_task *_Atomic tasks;
	_Atomic size_t ntasks;
	_Atomic uint32_t pending;   /* tasks signalled, not yet done */
	_Atomic uint32_t finished;  /* futex word: 1 once pending went to 0 */
} xid;

static _Atomic uint32_t xid_lock;   /* 0 free, 1 held, 2 held with waiters */

#if defined(__x86_64__)
#define RESTORER ctx_sigreturn
#else
#define RESTORER NULL   /* the kernel's vDSO trampoline */
#endif

/* Marks t done if nobody has; the one that does counts it off, and wakes
 * the broadcaster if it was the last.  Whether it was this caller. */
static bool answer(struct xid_task *t, int err, bool wake)
{
	int z = 0;
	if (!atomic_compare_exchange_strong_explicit(&t->done, &z, 1, memory_order_acq_rel,
						     memory_order_relaxed))
		return false;
	t->err = err;
	if (atomic_fetch_sub_explicit(&xid.pending, 1, memory_order_acq_rel) == 1) {
		atomic_store_explicit(&xid.finished, 1, memory_order_release);
		if (wake)
			vp_syscall_raw(SYS_futex, (long)&xid.finished, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0);
	}
	return true;
}

static void xid_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	/* SI_TKILL's si_pid is the sender's thread group, which nobody can
	 * forge (the kernel refuses SI_TKILL from rt_sigqueueinfo): only the
	 * broadcaster's signal counts, and no system call to know it. */
	struct xid_task *t = atomic_load_explicit(&xid.tasks, memory_order_acquire);
	if (t == NULL || si->si_code != SI_TKILL || si->si_pid != xid.sender)
		return;
	/* Raw calls, errno untouched: the process backend's watcher threads
	 * take this signal on their VP's TLS block (vp_process.c). */
	pid_t me = (pid_t)vp_syscall_raw(SYS_gettid, 0, 0, 0, 0, 0, 0);
	size_t n = atomic_load_explicit(&xid.ntasks, memory_order_acquire);
	for (size_t i = 0; i < n; i++) {
		if (atomic_load_explicit(&t[i].tid, memory_order_relaxed) != me ||
		    atomic_load_explicit(&t[i].done, memory_order_acquire))
			continue;
		long r = vp_syscall_raw(xid.nr, xid.arg[0], xid.arg[1], xid.arg[2], 0, 0, 0);
		if (vp_backend_ops()->creds_changed != NULL)
			vp_backend_ops()->creds_changed(t[i].tgid);
		answer(&t[i], r < 0 ? (int)-r : 0, true);
		break;
	}
}

/* Also before a backend sends SIGSETXID for its own ends (the process
 * backend's watcher_stop): with no handler its default action ends the
 * whole thread group of the kernel thread it reaches. */
void vp_setxid_install(void)
{
	static _Atomic int installed;
	if (atomic_load_explicit(&installed, memory_order_acquire))
		return;
	struct vp_ksigaction ka = {
		.handler = xid_handler,
		.flags = SA_SIGINFO | SA_RESTART | VP_SA_RESTORER,
		.restorer = RESTORER,
		.mask = 0,
	};
	vp_syscall(SYS_rt_sigaction, SIGSETXID, &ka, NULL, sizeof ka.mask);
	atomic_store_explicit(&installed, 1, memory_order_release);
}

/* A futex lock that makes no system call uncontended (credentials.c
 * serializes its callers already). */
static void lock(void)
{
	uint32_t z = 0;
	if (atomic_compare_exchange_strong_explicit(&xid_lock, &z, 1, memory_order_acquire,
						    memory_order_relaxed))
		return;
	while (atomic_exchange_explicit(&xid_lock, 2, memory_order_acquire) != 0)
		futex_sys(&xid_lock, FUTEX_WAIT_PRIVATE, 2, NULL, 0);
}

static void unlock(void)
{
	if (atomic_exchange_explicit(&xid_lock, 0, memory_order_release) == 2)
		futex_sys(&xid_lock, FUTEX_WAKE_PRIVATE, 1, NULL, 0);
}

/* Whether tid is in the first n entries of t. */
static bool listed(const struct xid_task *t, size_t n, pid_t tid)
{
	for (size_t i = 0; i < n; i++)
		if (atomic_load_explicit(&t[i].tid, memory_order_relaxed) == tid)
			return true;
	return false;
}

struct scan {
	struct xid_task *t;
	size_t n, cap;
	long added;
	bool full;   /* out of memory: the rest is not listed */
};

static void scan_one(pid_t tgid, pid_t tid, void *arg)
{
	struct scan *s = arg;
	if (s->full || listed(s->t, s->n, tid))
		return;
	if (s->n == s->cap) {
		size_t c = s->cap ? 2 * s->cap : 64;
		struct xid_task *g = realloc(s->t, c * sizeof *g);
		if (g == NULL) {
			s->full = true;
			return;
		}
		s->t = g;
		s->cap = c;
	}
	struct xid_task *x = &s->t[s->n++];
	atomic_init(&x->tid, tid);
	x->tgid = tgid != 0 ? tgid : xid.sender;
	atomic_init(&x->done, 0);
	x->err = 0;
	s->added++;
}

/* Add the backend's kernel threads not yet in the list; -1 if they cannot
 * be listed, else how many were added.  Grows s->t (the handlers read it
 * only while the list is published, see below). */
static long scan(struct scan *s)
{
	s->added = 0;
	if (vp_backend_ops()->each_task(scan_one, s) != 0)
		return -1;
	return s->added;
}

static const long xid_nr[] = {
	[VP_SETUID] = SYS_setuid,       [VP_SETGID] = SYS_setgid,
	[VP_SETREUID] = SYS_setreuid,   [VP_SETREGID] = SYS_setregid,
	[VP_SETRESUID] = SYS_setresuid, [VP_SETRESGID] = SYS_setresgid,
	[VP_SETGROUPS] = SYS_setgroups,
};

static long task_kill(const struct xid_task *t, int sig)
{
	return vp_syscall_raw(SYS_tgkill, t->tgid, atomic_load_explicit(&t->tid, memory_order_relaxed),
			      sig, 0, 0, 0);
}

/* Waits until every task signalled since `from` has answered.  One that
 * exits before its handler ran never does: whenever a millisecond passes
 * without the last answer, those not done that are gone are counted off. */
static void wait_answers(struct xid_task *t, size_t from, size_t n)
{
	while (!atomic_load_explicit(&xid.finished, memory_order_acquire)) {
		struct timespec ms = { 0, 1000000 };
		if (futex_sys(&xid.finished, FUTEX_WAIT_PRIVATE, 0, &ms, 0) != ETIMEDOUT)
			continue;
		for (size_t i = from; i < n; i++)
			if (!atomic_load_explicit(&t[i].done, memory_order_acquire) &&
			    task_kill(&t[i], 0) == -ESRCH)
				answer(&t[i], -1, false);
	}
}

/* In fork's child: a broadcast another thread of the parent had under way
 * is over here (its kernel threads are gone), and the lock it held is free,
 * as glibc frees its stack-list lock, which its broadcast holds. */
void vp_setxid_fork_child(void)
{
	/* Only what differs: a store copies the page (spinlock.h, PPL_RESET). */
	if (atomic_load_explicit(&xid.tasks, memory_order_relaxed) != NULL)
		atomic_store_explicit(&xid.tasks, NULL, memory_order_relaxed);
	if (atomic_load_explicit(&xid.ntasks, memory_order_relaxed) != 0)
		atomic_store_explicit(&xid.ntasks, 0, memory_order_relaxed);
	if (atomic_load_explicit(&xid_lock, memory_order_relaxed) != 0)
		atomic_store_explicit(&xid_lock, 0, memory_order_relaxed);
}

int vp_setxid(enum vp_xid op, long a0, long a1, long a2, pid_t *bad_tid, int *bad_err)
{
	long nr = xid_nr[op];
	*bad_tid = 0;
	*bad_err = 0;
	vp_setxid_install();
	lock();
	/* The thread group and thread of the caller, once: the handlers
	 * compare si_pid with the one, the list skips the other. */
	xid.sender = (pid_t)vp_syscall_raw(SYS_getpid, 0, 0, 0, 0, 0, 0);
	pid_t self = (pid_t)vp_syscall_raw(SYS_gettid, 0, 0, 0, 0, 0, 0);
	xid.nr = nr;
	xid.arg[0] = a0;
	xid.arg[1] = a1;
	xid.arg[2] = a2;
	struct scan s = { 0 };
	struct xid_task *t = NULL;
	size_t n = 0, sent = 0;
	/* Signal every kernel thread listed; once they have all answered,
	 * list them again: a thread one of them made before its handler ran
	 * (its clone already past the kernel's check for pending signals)
	 * has the old credentials and was not listed.  Threads made after
	 * their maker's handler inherit the new ones, so the second list
	 * that adds nobody ends it (twice for a quiet process). */
	for (;;) {
		/* Unpublish while the array may move; the previous round's
		 * tasks have all answered, and the new ones are signalled only
		 * once it is published again. */
		atomic_store_explicit(&xid.tasks, NULL, memory_order_release);
		long added = scan(&s);
		t = s.t;
		n = s.n;
		if (added <= 0)
			break;
		uint32_t pending = 0;
		for (size_t i = sent; i < n; i++)
			if (atomic_load_explicit(&t[i].tid, memory_order_relaxed) != self)
				pending++;
		atomic_store_explicit(&xid.pending, pending, memory_order_relaxed);
		atomic_store_explicit(&xid.finished, pending == 0, memory_order_relaxed);
		atomic_store_explicit(&xid.ntasks, n, memory_order_release);
		atomic_store_explicit(&xid.tasks, t, memory_order_release);
		for (size_t i = sent; i < n; i++) {
			if (atomic_load_explicit(&t[i].tid, memory_order_relaxed) == self) {
				t[i].err = -1;
				atomic_store_explicit(&t[i].done, 1, memory_order_relaxed);
			} else if (task_kill(&t[i], SIGSETXID) != 0) {
				answer(&t[i], -1, false);   /* gone: nothing to compare */
			}
		}
		wait_answers(t, sent, n);
		sent = n;
	}
	/* The caller last, as glibc does: with its credentials changed first,
	 * it might no longer be allowed to signal the others (the kernel
	 * checks only between processes: the process VP backend's). */
	long r = vp_syscall(nr, a0, a1, a2);
	int err = r < 0 ? errno : 0;
	if (vp_backend_ops()->creds_changed != NULL)
		vp_backend_ops()->creds_changed(xid.sender);
	for (size_t i = 0; i < n; i++)
		if (t[i].err != -1 && t[i].err != err && *bad_tid == 0) {
			*bad_tid = atomic_load_explicit(&t[i].tid, memory_order_relaxed);
			*bad_err = t[i].err;
		}
	atomic_store_explicit(&xid.tasks, NULL, memory_order_release);
	atomic_store_explicit(&xid.ntasks, 0, memory_order_release);
	unlock();
	free(t);
	return err;
}
