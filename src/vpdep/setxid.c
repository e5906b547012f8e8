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
 * never block it): every other task listed in /proc/PID/task of each of
 * the program's processes (VPs, spares, the monitor, threads libppl did
 * not make; with the process VP backend every VP process) gets SIGSETXID
 * and repeats the call; the caller waits for each, then lists the tasks
 * again until it finds none it has not done, so that a kernel thread
 * created meanwhile by one not yet done is done too; then it makes the
 * call on its own kernel thread, last, as glibc does.  As in glibc, a call that fails everywhere (EPERM) changes
 * nothing and returns the error, and one whose result differs between
 * kernel threads (credentials made to differ with a raw system call) is
 * reported for the caller to abort. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "futex.h"
#include "vp_backend.h"
#include "vpdep.h"

#define SIGSETXID 33

struct xid_task {
	pid_t tgid;           /* its thread group (a VP process's with that backend) */
	_Atomic pid_t tid;
	_Atomic int done;     /* 1 once its handler made the call */
	int err;              /* that call's errno, 0 on success */
};

/* The broadcast in progress: one at a time (xid_lock). */
static struct {
	long nr, arg[3];
	struct xid_task *_Atomic tasks;
	_Atomic size_t ntasks;
	_Atomic uint32_t answers;   /* futex word: bumped by every handler */
} xid;

static _Atomic uint32_t xid_lock;

struct kernel_sigaction {
	void (*handler)(int, siginfo_t *, void *);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

#if defined(__x86_64__)
/* The kernel returns from a handler through sa_restorer on x86_64. */
void ppl_setxid_restore(void);
__asm__(".text\n.align 16\n.type ppl_setxid_restore,@function\nppl_setxid_restore:\n"
	"\tmovq $15, %rax\n\tsyscall\n.size ppl_setxid_restore,.-ppl_setxid_restore\n");
#define SA_RESTORER_FLAG 0x04000000UL
#define RESTORER ppl_setxid_restore
#else
#define SA_RESTORER_FLAG 0UL   /* the kernel's vDSO trampoline */
#define RESTORER NULL
#endif

static void xid_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si->si_code != SI_TKILL || !vp_process_own(si->si_pid))
		return;
	int saved = errno;
	pid_t me = (pid_t)syscall(SYS_gettid);
	struct xid_task *t = atomic_load_explicit(&xid.tasks, memory_order_acquire);
	size_t n = atomic_load_explicit(&xid.ntasks, memory_order_acquire);
	for (size_t i = 0; t != NULL && i < n; i++) {
		if (atomic_load_explicit(&t[i].tid, memory_order_relaxed) != me ||
		    atomic_load_explicit(&t[i].done, memory_order_relaxed))
			continue;
		long r = syscall(xid.nr, xid.arg[0], xid.arg[1], xid.arg[2]);
		t[i].err = r < 0 ? errno : 0;
		if (vp_backend_ops()->creds_changed != NULL)
			vp_backend_ops()->creds_changed();
		atomic_store_explicit(&t[i].done, 1, memory_order_release);
		atomic_fetch_add_explicit(&xid.answers, 1, memory_order_release);
		futex_sys(&xid.answers, FUTEX_WAKE_PRIVATE, 1, NULL, 0);
		break;
	}
	errno = saved;
}

static void xid_install(void)
{
	static _Atomic int installed;
	if (atomic_load_explicit(&installed, memory_order_acquire))
		return;
	struct kernel_sigaction ka = {
		.handler = xid_handler,
		.flags = SA_SIGINFO | SA_RESTART | SA_RESTORER_FLAG,
		.restorer = RESTORER,
		.mask = 0,
	};
	syscall(SYS_rt_sigaction, SIGSETXID, &ka, NULL, sizeof ka.mask);
	atomic_store_explicit(&installed, 1, memory_order_release);
}

static void lock(void)
{
	uint32_t z = 0;
	while (!atomic_compare_exchange_weak_explicit(&xid_lock, &z, 1, memory_order_acquire,
						      memory_order_relaxed)) {
		if (z != 0)
			futex_sys(&xid_lock, FUTEX_WAIT_PRIVATE, 1, NULL, 0);
		z = 0;
	}
}

static void unlock(void)
{
	atomic_store_explicit(&xid_lock, 0, memory_order_release);
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

/* Add the tasks of /proc/PID/task not yet in the list, for each of the
 * program's processes (one, except with the process VP backend, whose VP
 * processes have credentials of their own); -1 if none can be read, else
 * how many were added.  Grows *t (the handlers read it only while the list
 * is published, see below). */
static long scan_one(pid_t tgid, struct xid_task **t, size_t *n, size_t *cap);

struct scan_all {
	struct xid_task **t;
	size_t *n, *cap;
	long added;
};

static void scan_group(pid_t tgid, void *arg)
{
	struct scan_all *s = arg;
	long a = scan_one(tgid, s->t, s->n, s->cap);
	if (a >= 0)
		s->added = (s->added < 0 ? 0 : s->added) + a;
}

static long scan(struct xid_task **t, size_t *n, size_t *cap)
{
	struct scan_all s = { t, n, cap, -1 };
	vp_backend_ops()->each_process(scan_group, &s);
	return s.added;
}

static long scan_one(pid_t tgid, struct xid_task **t, size_t *n, size_t *cap)
{
	char path[48];
	snprintf(path, sizeof path, "/proc/%d/task", (int)tgid);
	DIR *d = opendir(path);
	if (d == NULL)
		return -1;
	long added = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		pid_t tid = (pid_t)atol(e->d_name);
		if (tid <= 0 || listed(*t, *n, tid))
			continue;
		if (*n == *cap) {
			size_t c = *cap ? 2 * *cap : 64;
			struct xid_task *g = realloc(*t, c * sizeof *g);
			if (g == NULL)
				break;
			*t = g;
			*cap = c;
		}
		struct xid_task *x = &(*t)[(*n)++];
		x->tgid = tgid;
		atomic_init(&x->tid, tid);
		atomic_init(&x->done, 0);
		x->err = 0;
		added++;
	}
	closedir(d);
	return added;
}

static const long xid_nr[] = {
	[VP_SETUID] = SYS_setuid,       [VP_SETGID] = SYS_setgid,
	[VP_SETREUID] = SYS_setreuid,   [VP_SETREGID] = SYS_setregid,
	[VP_SETRESUID] = SYS_setresuid, [VP_SETRESGID] = SYS_setresgid,
	[VP_SETGROUPS] = SYS_setgroups,
};

int vp_setxid(enum vp_xid op, long a0, long a1, long a2, pid_t *bad_tid, int *bad_err)
{
	long nr = xid_nr[op];
	*bad_tid = 0;
	*bad_err = 0;
	xid_install();
	lock();
	pid_t self = (pid_t)syscall(SYS_gettid);
	xid.nr = nr;
	xid.arg[0] = a0;
	xid.arg[1] = a1;
	xid.arg[2] = a2;
	struct xid_task *t = NULL;
	size_t n = 0, cap = 0, sent = 0;
	for (;;) {
		/* Unpublish while the array may move; a handler that finds it
		 * NULL does nothing and is signalled again below. */
		atomic_store_explicit(&xid.tasks, NULL, memory_order_release);
		long added = scan(&t, &n, &cap);
		if (added <= 0)
			break;
		atomic_store_explicit(&xid.ntasks, n, memory_order_release);
		atomic_store_explicit(&xid.tasks, t, memory_order_release);
		for (size_t i = sent; i < n; i++) {
			pid_t tid = atomic_load_explicit(&t[i].tid, memory_order_relaxed);
			if (tid == self) {
				t[i].err = -1;   /* below, last */
				atomic_store_explicit(&t[i].done, 1, memory_order_relaxed);
			} else if (syscall(SYS_tgkill, t[i].tgid, tid, SIGSETXID) < 0) {
				t[i].err = -1;   /* gone: nothing to compare */
				atomic_store_explicit(&t[i].done, 1, memory_order_relaxed);
			}
		}
		sent = n;
		/* Wait for each; one that exits before its handler ran never
		 * answers, so look every millisecond whether it is still there. */
		for (size_t i = 0; i < n; i++) {
			while (!atomic_load_explicit(&t[i].done, memory_order_acquire)) {
				uint32_t seen = atomic_load_explicit(&xid.answers, memory_order_acquire);
				if (atomic_load_explicit(&t[i].done, memory_order_acquire))
					break;
				struct timespec ms = { 0, 1000000 };
				futex_sys(&xid.answers, FUTEX_WAIT_PRIVATE, seen, &ms, 0);
				pid_t tid = atomic_load_explicit(&t[i].tid, memory_order_relaxed);
				if (!atomic_load_explicit(&t[i].done, memory_order_acquire) &&
				    syscall(SYS_tgkill, t[i].tgid, tid, 0) < 0 && errno == ESRCH &&
				    !atomic_load_explicit(&t[i].done, memory_order_acquire)) {
					t[i].err = -1;
					atomic_store_explicit(&t[i].done, 1, memory_order_release);
				}
			}
		}
	}
	/* The caller last, as glibc does: with its credentials changed first,
	 * it might no longer be allowed to signal the others (the kernel
	 * checks only between processes: the process VP backend's). */
	long r = syscall(nr, a0, a1, a2);
	int err = r < 0 ? errno : 0;
	if (vp_backend_ops()->creds_changed != NULL)
		vp_backend_ops()->creds_changed();
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
