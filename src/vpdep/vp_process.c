/* The "process" VP backend: every VP but the initial one is a process of
 * its own that shares the address space, the file table, the file-system
 * context, the signal handlers and the System V undo list with the
 * initial process: clone without CLONE_THREAD (PPL's original VP kind,
 * LinuxThreads' design).  The program must not be able to tell.
 *
 * - Identity: getpid and getppid are libppl's (vp_process_id,
 *   vp_parent_process_id): the initial process's ids on every VP.
 * - Who makes the VP processes: the manager, a helper kernel thread of the
 *   initial process (made with the C library's pthread_create), on
 *   request.  It is their parent (the kernel's real_parent), so
 *   PR_SET_PDEATHSIG(SIGKILL), which fires when the parent *thread* ends,
 *   ends every VP process when the initial process ends, even by SIGKILL,
 *   as long as no credential change cleared it or made it not permitted:
 *   each VP process's watcher thread (below) ends it in any case.  Helpers (the monitor, the signal catcher) are threads of the
 *   initial process too, made there by the manager.
 * - The end of the program: a VP process that ends without vp_terminate
 *   (exit, _exit, abort, a fatal signal: it was exit_group of that process
 *   alone) is seen by the reaper, a second helper of the initial process
 *   blocked in waitid(__WCLONE) (VP processes have no exit signal, so the
 *   program's own wait calls never see them).  It kills the other VP
 *   processes and ends the initial process the same way: _exit with the
 *   status, or the same signal with its default action.
 * - Signals: kill/tgkill on a VP's pid (its tid is its pid); a
 *   process-directed signal reaches the initial process only, so it is
 *   taken by VP 0 (docs/vpdep.md: limitations).
 *
 * The new process starts on a stack of libppl's (vp_stack_map) with a TLS
 * block in the C library's layout (glibcabi_kthread_block), through
 * vp_clone_raw (arch/<cpu>/clone_raw.S). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clone_raw.h"
#include "futex.h"
#include "glibcabi_kthread.h"
#include "syscall_raw.h"
#include "vp_backend.h"
#include "vpdep.h"

#define SIGSETXID 33                  /* the C library's, libppl's broadcast (setxid.c) */
#define PROC_MAX 4096                 /* VP processes alive at once */
#define PROC_STACK (256u << 10)       /* as the kthread backend's */
#define WATCH_STACK (32u << 10)       /* the watcher's: SIGSETXID's frame and handler */

/* One VP process.  A slot is free while pid is 0; the manager fills it,
 * the reaper empties it.  pid is read lock-free (ours(), in handlers). */
struct proc {
	_Atomic pid_t pid;
	struct vp *vp;
	void *stack;
	size_t stack_size;
	uint64_t mask;          /* the creator's signal mask: the VP starts with it */
	_Atomic bool ending;    /* vp_terminate: its end is not the program's */
	_Atomic bool started;   /* the child checked its parent (start race) */
	_Atomic pid_t watcher;  /* its watcher's thread id (0: none yet) */
	_Atomic bool unwatch;   /* the VP ends here: the watcher ends too */
};

static struct proc procs[PROC_MAX];
static _Atomic int procs_hi;          /* slots [0, procs_hi) were ever used */
static _Atomic uint32_t nchildren;    /* futex word: VP processes not yet reaped */

/* The CPU time of the VP processes that ended (user, system; ns), from
 * the reaper's waitid: the program's own, which the kernel counts as the
 * initial process's children's (vp_process_rusage). */
static _Atomic int64_t retired_ns[2];

void vp_process_retired_ns(int64_t *user, int64_t *sys)
{
	*user = atomic_load_explicit(&retired_ns[0], memory_order_acquire);
	*sys = atomic_load_explicit(&retired_ns[1], memory_order_acquire);
}

static int64_t tv_ns(const struct timeval *tv)
{
	return (int64_t)tv->tv_sec * 1000000000 + (int64_t)tv->tv_usec * 1000;
}

/* The initial process's id (0 before adopt or the first create). */
static _Atomic pid_t program_pid;
/* Its name when the manager started, which VP processes take (they are
 * made by the manager, whose name is its own). */
static char program_comm[16];

static pid_t raw_getpid(void)
{
	return (pid_t)vp_syscall(SYS_getpid);
}

static pid_t program(void)
{
	pid_t p = atomic_load_explicit(&program_pid, memory_order_acquire);
	return p ? p : raw_getpid();
}

static struct proc *find_pid(pid_t pid)
{
	int hi = atomic_load_explicit(&procs_hi, memory_order_acquire);
	for (int i = 0; i < hi; i++)
		if (atomic_load_explicit(&procs[i].pid, memory_order_acquire) == pid)
			return &procs[i];
	return NULL;
}

/* In the initial process (its thread group), not in a VP process. */
static bool in_initial(void)
{
	return raw_getpid() == program();
}

/* ---- the manager: makes VP processes and helpers in the initial process ------------ */

enum { REQ_NONE, REQ_VP, REQ_HELPER, REQ_CALL, REQ_STOP };

static struct {
	_Atomic uint32_t lock;   /* one request at a time (futex word) */
	_Atomic uint32_t seq;    /* futex word the manager waits on */
	_Atomic uint32_t done;   /* futex word the requester waits on */
	int kind;
	struct proc *p;
	void (*fn)(void *);
	void *arg;
	int (*call)(void *);
	int result;
} req;

static _Atomic int managers;   /* 0 none, 1 starting, 2 running */

/* Retirement (process_retired): the reaper and the forwarder end when
 * they see it; how many of the three helpers still run (futex word). */
static _Atomic bool helpers_stop;
static _Atomic uint32_t helpers_alive;

static void helper_gone(void)
{
	atomic_fetch_sub_explicit(&helpers_alive, 1, memory_order_acq_rel);
	futex_sys(&helpers_alive, FUTEX_WAKE_PRIVATE, 1, NULL, 0);
}

static _Noreturn void proc_main(void *arg);

static void lock_req(void)
{
	uint32_t z = 0;
	while (!atomic_compare_exchange_weak_explicit(&req.lock, &z, 1, memory_order_acquire,
						      memory_order_relaxed)) {
		if (z != 0)
			futex_sys(&req.lock, FUTEX_WAIT_PRIVATE, 1, NULL, 0);
		z = 0;
	}
}

static void unlock_req(void)
{
	atomic_store_explicit(&req.lock, 0, memory_order_release);
	futex_sys(&req.lock, FUTEX_WAKE_PRIVATE, 1, NULL, 0);
}

/* On the manager: the clone itself.  0 or errno. */
static int spawn(struct proc *p)
{
	/* No exit signal: a "clone child", which the program's wait, waitpid
	 * and waitid never report (only __WCLONE/__WALL waits do). */
	unsigned long flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_SYSVSEM |
			      CLONE_SETTLS | CLONE_PARENT_SETTID;
	atomic_fetch_add_explicit(&nchildren, 1, memory_order_acq_rel);
	/* The kernel stores the pid before the child runs: the reaper
	 * finds it even if the child ends at once. */
	long r = vp_clone_raw(flags, (char *)p->stack + p->stack_size, (pid_t *)&p->pid,
			      (void *)p->vp->handle, NULL, proc_main, p);
	if (r < 0) {
		atomic_fetch_sub_explicit(&nchildren, 1, memory_order_acq_rel);
		return (int)-r;
	}
	futex_sys(&nchildren, FUTEX_WAKE_PRIVATE, 1, NULL, 0);   /* the reaper */
	return 0;
}

static void manager_main(void *unused)
{
	(void)unused;
	vp_kthread_set_name(0, "ppl-vpmanager");
	uint32_t seen = 0;
	for (;;) {
		uint32_t s = atomic_load_explicit(&req.seq, memory_order_acquire);
		if (s == seen) {
			futex_sys(&req.seq, FUTEX_WAIT_PRIVATE, s, NULL, 0);
			continue;
		}
		seen = s;
		if (req.kind == REQ_VP)
			req.result = spawn(req.p);
		else if (req.kind == REQ_HELPER)
			req.result = vp_kthread_backend.helper(req.fn, req.arg);
		else if (req.kind == REQ_CALL)
			req.result = req.call(req.arg);
		bool stop = req.kind == REQ_STOP;
		req.kind = REQ_NONE;
		atomic_store_explicit(&req.done, 1, memory_order_release);
		futex_sys(&req.done, FUTEX_WAKE_PRIVATE, 1, NULL, 0);
		if (stop) {
			helper_gone();
			return;
		}
	}
}

static int ask_call(int kind, struct proc *p, void (*fn)(void *), void *arg, int (*call)(void *))
{
	lock_req();
	req.kind = kind;
	req.call = call;
	req.p = p;
	req.fn = fn;
	req.arg = arg;
	atomic_store_explicit(&req.done, 0, memory_order_relaxed);
	atomic_fetch_add_explicit(&req.seq, 1, memory_order_release);
	futex_sys(&req.seq, FUTEX_WAKE_PRIVATE, 1, NULL, 0);
	while (!atomic_load_explicit(&req.done, memory_order_acquire))
		futex_sys(&req.done, FUTEX_WAIT_PRIVATE, 0, NULL, 0);
	int r = req.result;
	unlock_req();
	return r;
}

static int ask(int kind, struct proc *p, void (*fn)(void *), void *arg)
{
	return ask_call(kind, p, fn, arg, NULL);
}

/* ---- the reaper: the end of a VP process ------------------------------------------- */

static _Noreturn void end_program(const siginfo_t *si)
{
	pid_t self = (pid_t)vp_syscall(SYS_gettid);
	int hi = atomic_load_explicit(&procs_hi, memory_order_acquire);
	for (int i = 0; i < hi; i++) {
		pid_t pid = atomic_load_explicit(&procs[i].pid, memory_order_acquire);
		if (pid > 0 && pid != si->si_pid)
			vp_syscall(SYS_kill, pid, SIGKILL);
	}
	if (si->si_code == CLD_EXITED)
		vp_syscall(SYS_exit_group, si->si_status);
	/* Killed: the same signal, with its default action, to this process. */
	int sig = si->si_status;
	struct vp_ksigaction dfl = { .handler = NULL /* SIG_DFL */ };
	vp_syscall(SYS_rt_sigaction, sig, &dfl, NULL, sizeof dfl.mask);
	uint64_t one = 1ULL << (sig - 1);
	vp_syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &one, NULL, sizeof one);
	vp_syscall(SYS_tgkill, raw_getpid(), self, sig);
	vp_syscall(SYS_kill, raw_getpid(), SIGKILL);   /* a signal whose default is not to end */
	vp_syscall(SYS_exit_group, 128 + sig);
	__builtin_unreachable();
}

static void reaper_main(void *unused)
{
	(void)unused;
	vp_kthread_set_name(0, "ppl-vpreaper");
	for (;;) {
		uint32_t n = atomic_load_explicit(&nchildren, memory_order_acquire);
		if (n == 0 && atomic_load_explicit(&helpers_stop, memory_order_acquire)) {
			helper_gone();
			return;
		}
		if (n == 0) {
			futex_sys(&nchildren, FUTEX_WAIT_PRIVATE, 0, NULL, 0);
			continue;
		}
		siginfo_t si;
		struct rusage ru;
		memset(&si, 0, sizeof si);
		memset(&ru, 0, sizeof ru);
		/* Only clone children (no exit signal): VP processes, never the
		 * program's own children. */
		if (vp_syscall(SYS_waitid, P_ALL, 0, &si, WEXITED | __WCLONE, &ru) != 0) {
			if (errno == ECHILD) {   /* counted, not yet cloned: look again */
				struct timespec ms = { 0, 1000000 };
				vp_syscall(SYS_nanosleep, &ms, NULL);
			}
			continue;
		}
		struct proc *p = find_pid(si.si_pid);
		if (p == NULL)
			continue;   /* a clone child of the program's own */
		atomic_fetch_add_explicit(&retired_ns[0], tv_ns(&ru.ru_utime), memory_order_acq_rel);
		atomic_fetch_add_explicit(&retired_ns[1], tv_ns(&ru.ru_stime), memory_order_acq_rel);
		atomic_fetch_sub_explicit(&nchildren, 1, memory_order_acq_rel);
		if (!atomic_load_explicit(&p->ending, memory_order_acquire))
			end_program(&si);
		vp_stack_unmap(p->stack, p->stack_size);
		atomic_store_explicit(&p->watcher, 0, memory_order_release);
		atomic_store_explicit(&p->pid, 0, memory_order_release);
	}
}

/* ---- the forwarder: process-directed signals the initial process cannot take ---------
 * kill(getpid()), alarm, a shell's kill reach the initial process only.
 * The kernel gives such a signal to VP 0 (the initial thread) if it does
 * not block it, else to a thread that waits for it: the forwarder, which
 * waits for all of them.  It sends the signal on to a VP process that does
 * not block it (or waits for it in sigwait: the kernel's SigBlk then
 * leaves it out), as the kernel would pick another thread of one thread
 * group; if none does now, it keeps it and offers it again every 2 ms, as
 * the kernel keeps it pending on the thread group.  The kernel takes a siginfo to another process
 * only with a negative si_code: the copy is SI_QUEUE with the original
 * code in si_errno, which vp_siginfo_own puts back where the program
 * reads the siginfo. */
#define FWD_MARK 0x66770000   /* "fw" */

/* The text of a small file of /proc, NUL-terminated; its length, or -1. */
static long read_text(const char *path, char *buf, size_t size)
{
	int fd = (int)vp_syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	long n = vp_syscall(SYS_read, fd, buf, size - 1);
	vp_syscall(SYS_close, fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return n;
}

/* The union of the masks on the lines `fields` (each NUL-terminated, an
 * empty one last) of /proc/PID/status (thread pid of pid's); `unknown` if
 * it cannot be read or has none of them. */
static uint64_t status_mask(pid_t pid, const char *fields, uint64_t unknown)
{
	char path[48], buf[4096];
	snprintf(path, sizeof path, "/proc/%d/task/%d/status", (int)pid, (int)pid);
	if (read_text(path, buf, sizeof buf) < 0)
		return unknown;
	uint64_t m = 0;
	bool found = false;
	for (const char *f = fields; *f; f += strlen(f) + 1) {
		char *p = strstr(buf, f);
		if (p != NULL) {
			m |= strtoull(p + strlen(f), NULL, 16);
			found = true;
		}
	}
	return found ? m : unknown;
}

/* Whether process pid's kernel thread blocks sig now (yes if unknown). */
static bool blocks(pid_t pid, int sig)
{
	return (status_mask(pid, "SigBlk:\0", ~0ULL) >> (sig - 1)) & 1;
}

/* Queue the forwarded copy f to VP 0's kernel thread or a VP process that
 * does not block it now; false if none takes it. */
static bool forward(int sig, siginfo_t *f)
{
	pid_t p = program();
	if (!blocks(p, sig) && vp_syscall(SYS_rt_tgsigqueueinfo, p, p, sig, f) == 0)
		return true;
	int hi = atomic_load_explicit(&procs_hi, memory_order_acquire);
	for (int i = 0; i < hi; i++) {
		pid_t pid = atomic_load_explicit(&procs[i].pid, memory_order_acquire);
		if (pid <= 0 || atomic_load_explicit(&procs[i].ending, memory_order_acquire) ||
		    blocks(pid, sig))
			continue;
		if (vp_syscall(SYS_rt_tgsigqueueinfo, pid, pid, sig, f) == 0)
			return true;
	}
	return false;
}

void vp_process_siginfo(siginfo_t *si)
{
	if (si->si_code != SI_QUEUE || ((unsigned)si->si_errno & 0xffff0000u) != FWD_MARK)
		return;
	si->si_code = (int)((unsigned)si->si_errno & 0xffff) - 0x8000;
	si->si_errno = 0;
}

/* A signal no kernel thread takes now stays here, as it would stay
 * pending on a thread group, and is offered again every HOLD_NS: one per
 * signal number (a real-time signal's queue merges here). */
#define HOLD_NS 2000000

/* libppl's own catcher of process-directed signals (PPL_PROCESS_SIGNALS=
 * thread, sigroute.c) takes those with a handler in the initial process
 * and routes them through memory every VP shares: the forwarder leaves
 * them to it (the two competing lost signals) and takes only those with
 * no handler (SigCgt in /proc), which the catcher never waits for and a
 * VP process's sigwait could not take from the initial process (the
 * overrun case of tp_cputimer: a timer's SIGUSR2 blocked everywhere and
 * taken by sigtimedwait).  One it took that has a handler meanwhile goes
 * back to the process, for the catcher.  The catcher wakes the forwarder
 * with a marked SIGURG. */
#define STOP_MARK 0x73746f70   /* "stop" */
static _Atomic bool catcher_runs;
static _Atomic pid_t forwarder_tid;

static void forwarder_wake(void);

void vp_process_catcher_started(void)
{
	atomic_store_explicit(&catcher_runs, true, memory_order_release);
	forwarder_wake();
}

/* A marked SIGURG: the forwarder looks at its flags again. */
static void forwarder_wake(void)
{
	pid_t t = atomic_load_explicit(&forwarder_tid, memory_order_acquire);
	if (t == 0)
		return;
	siginfo_t si;
	memset(&si, 0, sizeof si);
	si.si_signo = SIGURG;
	si.si_code = SI_QUEUE;
	si.si_errno = STOP_MARK;
	si.si_pid = program();
	vp_syscall(SYS_rt_tgsigqueueinfo, program(), t, SIGURG, &si);
}


/* The signals with a handler (the initial process's SigCgt). */
static uint64_t caught(void)
{
	return status_mask(program(), "SigCgt:\0", 0);
}

static _Atomic uint64_t forwarder_held;

/* Pending on the initial process (or forwarded to VP 0), held by the
 * forwarder, or forwarded to a VP process's thread and not yet taken. */
uint64_t vp_process_pending(void)
{
	uint64_t m = atomic_load_explicit(&forwarder_held, memory_order_acquire) |
		     status_mask(program(), "SigPnd:\0ShdPnd:\0", 0);
	int hi = atomic_load_explicit(&procs_hi, memory_order_acquire);
	for (int i = 0; i < hi; i++) {
		pid_t pid = atomic_load_explicit(&procs[i].pid, memory_order_acquire);
		if (pid > 0)
			m |= status_mask(pid, "SigPnd:\0ShdPnd:\0", 0);
	}
	return m | vp_get_sigpending();
}

/* Give forwarded copy f of sig back to the process (the catcher's). */
static void unforward(int sig, const siginfo_t *f)
{
	siginfo_t si = *f;
	vp_process_siginfo(&si);
	vp_syscall(SYS_rt_sigqueueinfo, program(), sig, &si);
}

static void forwarder_main(void *unused)
{
	(void)unused;
	vp_kthread_set_name(0, "ppl-vpsignals");
	atomic_store_explicit(&forwarder_tid, (pid_t)vp_syscall(SYS_gettid), memory_order_release);
	uint64_t all = ~0ULL, held = 0;
	static siginfo_t kept[65];
	const int never[] = { SIGKILL, SIGSTOP, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS,
			      32, 33, 63, 64 };   /* C library's and libppl's own */
	for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
		all &= ~(1ULL << (never[i] - 1));
	while (!atomic_load(&helpers_stop)) {
		/* The catcher's: those with a handler, now. */
		uint64_t theirs = atomic_load_explicit(&catcher_runs, memory_order_acquire) ? caught()
											  : 0;
		for (uint64_t h = held & theirs; h != 0; h &= h - 1) {
			int s = __builtin_ctzll(h) + 1;
			unforward(s, &kept[s]);
			held &= ~(1ULL << (s - 1));
		}
		atomic_store_explicit(&forwarder_held, held, memory_order_release);
		uint64_t set = all & ~theirs;
		siginfo_t si;
		struct timespec hold = { 0, HOLD_NS };
		int sig = (int)vp_syscall(SYS_rt_sigtimedwait, &set, &si, held ? &hold : NULL, sizeof set);
		if (sig == SIGURG && si.si_code == SI_QUEUE && si.si_errno == STOP_MARK)
			sig = 0;
		if (sig > 0 && atomic_load_explicit(&catcher_runs, memory_order_acquire) &&
		    (caught() & (1ULL << (sig - 1)))) {
			/* A handler since the wait began: the catcher's. */
			vp_syscall(SYS_rt_sigqueueinfo, program(), sig, &si);
			sig = 0;
		}
		if (sig > 0) {
			siginfo_t *f = &kept[sig];
			*f = si;
			f->si_errno = FWD_MARK | ((si.si_code + 0x8000) & 0xffff);
			f->si_code = SI_QUEUE;
			/* Held (for vp_process_pending) until the copy is
			 * pending on its taker. */
			held |= 1ULL << (sig - 1);
			atomic_store_explicit(&forwarder_held, held, memory_order_release);
		}
		for (uint64_t h = held; h != 0; h &= h - 1) {
			int s = __builtin_ctzll(h) + 1;
			if (forward(s, &kept[s])) {
				/* At once: its taker may take it and ask
				 * sigpending right after. */
				held &= ~(1ULL << (s - 1));
				atomic_store_explicit(&forwarder_held, held, memory_order_release);
			}
		}
		atomic_store_explicit(&forwarder_held, held, memory_order_release);
	}
	atomic_store_explicit(&forwarder_held, 0, memory_order_release);
	/* What it still holds goes back to the process, for the catcher. */
	for (; held != 0; held &= held - 1) {
		int s = __builtin_ctzll(held) + 1;
		vp_syscall(SYS_rt_sigqueueinfo, program(), s, &kept[s]);
	}
	atomic_store_explicit(&forwarder_tid, 0, memory_order_release);
	helper_gone();
}

/* The manager and the reaper, once per process (again in a fork child).
 * From the initial process only. */
static int start_managers(void)
{
	int z = 0;
	if (atomic_load_explicit(&managers, memory_order_acquire) == 2)
		return 0;
	if (!atomic_compare_exchange_strong(&managers, &z, 1)) {
		while (atomic_load_explicit(&managers, memory_order_acquire) == 1)
			vp_syscall(SYS_sched_yield);
		return atomic_load(&managers) == 2 ? 0 : EAGAIN;
	}
	atomic_store_explicit(&program_pid, raw_getpid(), memory_order_release);
	if (vp_process_name(program_comm, sizeof program_comm) != 0)
		program_comm[0] = 0;
	atomic_store_explicit(&helpers_stop, false, memory_order_release);
	atomic_store_explicit(&helpers_alive, 3, memory_order_release);
	int err = vp_kthread_backend.helper(manager_main, NULL);
	if (err == 0)
		err = vp_kthread_backend.helper(reaper_main, NULL);
	if (err == 0)
		err = vp_kthread_backend.helper(forwarder_main, NULL);
	/* A manager without a reaper would leave a VP's exit unseen. */
	atomic_store_explicit(&managers, err ? 0 : 2, memory_order_release);
	return err;
}

/* ---- the VP process ------------------------------------------------------------------ */

/* The watcher: a second kernel thread of every VP process, which ends its
 * process when the initial process ends.  PR_SET_PDEATHSIG alone is not
 * enough: the kernel clears it at every change of the process's euid,
 * egid, fsuid or fsgid (a raw setresuid or setfsuid by the program: per
 * kernel thread, never broadcast), and sends it only if the dying parent
 * thread may signal the child (kill's permission check), which
 * credentials made to differ (the partial failure glibc aborts on)
 * forbid.  The watcher polls a pidfd of the initial process, which the
 * kernel makes readable once that process has ended, however it ended,
 * with no permission check, and a thread of the VP process's own group may
 * always end it.  (The manager's CLONE_CHILD_CLEARTID futex would wake one
 * watcher only, which PDEATHSIG may kill before it wakes the next.)  Its
 * file table is its own (no CLONE_FILES, the copy closed at once), so that
 * the pidfd is not the program's.  It shares the VP's TLS block: raw
 * system calls only (no errno, no C library) and no thread-local data.
 * Every signal is blocked but SIGSETXID, and that one only inside ppoll:
 * the watcher takes the program's credential changes like any task
 * (setxid.c's handler makes raw calls too), and the VP, when it ends,
 * stops it with a SIGSETXID after setting p->unwatch (watcher_stop): the
 * VP process then ends with its last thread, as without a watcher (a
 * thread the C library made there, glibc's aio helper, may outlive the
 * VP).  setxid.c's handler is installed before the first VP process
 * starts: SIGSETXID's default action ends the thread group, which had
 * killed those threads as their VP retired (tp_aio_retire). */
static _Noreturn void watcher_main(void *arg)
{
	struct proc *p = arg;
	long fd = -1;
	if (vp_syscall_raw(SYS_close_range, 0, ~0U, 0, 0, 0, 0) == 0)
		fd = vp_syscall_raw(SYS_pidfd_open, program(), 0, 0, 0, 0, 0);
	/* The watcher may first run long after its VP: the initial process
	 * may have ended by then (no such process; or the VP process has
	 * another parent, which also rules out a pidfd of a recycled pid). */
	bool ended = fd == -ESRCH ||
		     (fd >= 0 && vp_syscall_raw(SYS_getppid, 0, 0, 0, 0, 0, 0) != program());
	uint64_t only_setxid = ~(1ULL << (SIGSETXID - 1));
	struct pollfd pf = { .fd = (int)fd, .events = POLLIN };
	while (!ended && fd >= 0 && !atomic_load_explicit(&p->unwatch, memory_order_acquire))
		/* else EINTR: a credential change, or the end */
		ended = vp_syscall_raw(SYS_ppoll, (long)&pf, 1, 0, (long)&only_setxid, 8, 0) == 1;
	if (ended) {
		long self = vp_syscall_raw(SYS_getpid, 0, 0, 0, 0, 0, 0);
		for (;;) {   /* the initial process has ended */
			vp_syscall_raw(SYS_kill, self, SIGKILL, 0, 0, 0, 0);
			vp_syscall_raw(SYS_exit_group, 128 + SIGKILL, 0, 0, 0, 0, 0);
		}
	}
	for (;;)   /* no pidfd (before Linux 5.3): PR_SET_PDEATHSIG alone */
		vp_syscall_raw(SYS_exit, 0, 0, 0, 0, 0, 0);
}

/* Start p's watcher on the VP process; its stack is the low part of p's
 * stack mapping (process_create).  Every signal blocked across the clone:
 * the watcher starts with that mask. */
static void watcher_start(struct proc *p)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint64_t all = ~0ULL, old;
	vp_syscall_raw(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)&old, 8, 0, 0);
	/* Its id before it runs: the credential broadcast addresses it. */
	unsigned long flags = CLONE_VM | CLONE_FS | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
			      CLONE_PARENT_SETTID;
	vp_clone_raw(flags, (char *)p->stack + page + WATCH_STACK, (pid_t *)&p->watcher, NULL, NULL,
		     watcher_main, p);
	vp_syscall_raw(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8, 0, 0);
}

/* On the VP's kernel thread, as it ends: its watcher ends too. */
static void watcher_stop(struct proc *p)
{
	atomic_store_explicit(&p->unwatch, true, memory_order_release);
	pid_t w = atomic_load_explicit(&p->watcher, memory_order_acquire);
	if (w > 0)
		vp_syscall_raw(SYS_tgkill, raw_getpid(), w, SIGSETXID, 0, 0, 0);
}

static _Noreturn void proc_main(void *arg)
{
	struct proc *p = arg;
	struct vp *vp = p->vp;
	/* The descriptor's thread id (the C library's locks record it as
	 * their owner), then its per-thread state, before any C library call. */
	*glibcabi_kthread_tid((void *)vp->handle) = (pid_t)vp_syscall(SYS_gettid);
	glibcabi_kthread_start(false);
	/* Die with the manager, i.e. with the initial process; if it is
	 * already gone, the signal will never come: end now. */
	vp_syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if ((pid_t)vp_syscall(SYS_getppid) != program())
		vp_syscall(SYS_exit_group, 0);
	watcher_start(p);
	if (program_comm[0])
		vp_syscall(SYS_prctl, PR_SET_NAME, program_comm, 0, 0, 0);   /* what ps shows */
	vp_enter(vp);
	vp_syscall(SYS_rt_sigprocmask, SIG_SETMASK, &p->mask, NULL, sizeof p->mask);
	vp->main(vp);
	vp_leave(vp);
	atomic_store_explicit(&p->ending, true, memory_order_release);
	watcher_stop(p);
	for (;;)
		vp_syscall(SYS_exit, 0);
}

static struct proc *slot_new(void)
{
	for (int i = 0; i < PROC_MAX; i++) {
		pid_t z = 0;
		/* -1 reserves the slot until the manager stores the pid. */
		if (atomic_compare_exchange_strong(&procs[i].pid, &z, -1)) {
			int hi = atomic_load(&procs_hi);
			while (hi < i + 1 && !atomic_compare_exchange_weak(&procs_hi, &hi, i + 1))
				;
			return &procs[i];
		}
	}
	return NULL;
}

static int process_create(struct vp *vp)
{
	if (in_initial()) {
		int err = start_managers();
		if (err)
			return err;
	} else if (atomic_load_explicit(&managers, memory_order_acquire) != 2) {
		return EAGAIN;
	}
	if (glibcabi_kthread_block == NULL)
		return ENOSYS;   /* vpdep alone (its unit tests) */
	/* Threaded for the C library before the block is made: the manager
	 * threads run already. */
	glibcabi_process_threaded();
	int err;
	void *tp = vp_backend_tls_block("process", &err);
	if (tp == NULL)
		return err;
	struct proc *p = slot_new();
	if (p == NULL)
		return EAGAIN;
	/* [guard][the watcher's stack][guard][the VP's stack] */
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t vp_lo = 2 * page + WATCH_STACK;
	p->stack_size = vp_lo + PROC_STACK;
	p->stack = vp_stack_map(p->stack_size);
	if (p->stack == NULL) {
		atomic_store(&p->pid, 0);
		return EAGAIN;
	}
	vp_stack_guard(p->stack, page);
	vp_stack_guard((char *)p->stack + vp_lo - page, page);
	glibcabi_kthread_block_stack(tp, (char *)p->stack + vp_lo, PROC_STACK);
	p->vp = vp;
	p->mask = vp_get_sigmask();
	atomic_store(&p->watcher, 0);
	atomic_store(&p->unwatch, false);
	atomic_store(&p->ending, false);
	/* The handle is the thread pointer, as the kthread backend's
	 * pthread_t is: stored before the process runs. */
	vp->handle = (uintptr_t)tp;
	/* Its watcher is stopped with SIGSETXID (watcher_stop), whose
	 * default action would end the VP process and every thread in it. */
	vp_setxid_install();
	err = ask(REQ_VP, p, NULL, NULL);
	if (err) {
		vp_stack_unmap(p->stack, p->stack_size);
		atomic_store(&p->pid, 0);
	}
	return err;
}

static _Noreturn void process_terminate(void)
{
	struct proc *p = find_pid(raw_getpid());
	if (p != NULL) {
		atomic_store_explicit(&p->ending, true, memory_order_release);
		watcher_stop(p);
	}
	/* The stack stays mapped until the reaper has seen the process end. */
	for (;;)
		vp_syscall(SYS_exit, 0);
}

static void process_adopt(struct vp *vp)
{
	vp_kthread_backend.adopt(vp);   /* the initial thread: a C library thread */
	start_managers();
}

/* Back to VP 0 alone (retire.c): once the reaper has seen every VP
 * process end, the manager, the reaper and the forwarder end too, so that
 * /proc/self/task lists the initial thread alone, as an NPTL program's
 * with one thread (glibc's support_wait_for_thread_exit waits for that);
 * the next create starts them again.  What the forwarder holds goes back
 * to the process, where the kernel keeps it pending. */
static void process_retired(void)
{
	if (atomic_load_explicit(&managers, memory_order_acquire) != 2 || !in_initial())
		return;
	/* Bounded: a VP process whose kernel thread is blocked in a system
	 * call (a read lent to a spare of its own) ends only when the call
	 * returns, maybe by a thread that can run only once this VP goes on.
	 * Then the helpers stay, as they do while any VP process lives. */
	struct timespec ms = { 0, 1000000 };
	for (int i = 0; atomic_load_explicit(&nchildren, memory_order_acquire) != 0; i++) {
		if (i == 100)
			return;
		vp_syscall(SYS_nanosleep, &ms, NULL);
	}
	atomic_store(&helpers_stop, true);
	ask(REQ_STOP, NULL, NULL, NULL);
	/* The reaper's futex and the forwarder's wait see no change of
	 * their own: woken until they have ended. */
	for (uint32_t n; (n = atomic_load(&helpers_alive)) != 0;) {
		futex_sys(&nchildren, FUTEX_WAKE_PRIVATE, 1, NULL, 0);
		forwarder_wake();
		futex_sys(&helpers_alive, FUTEX_WAIT_PRIVATE, n, &ms, 0);
	}
	atomic_store_explicit(&managers, 0, memory_order_release);
}

static int process_helper(void (*fn)(void *), void *arg)
{
	if (in_initial())
		return vp_kthread_backend.helper(fn, arg);
	if (atomic_load_explicit(&managers, memory_order_acquire) != 2)
		return EAGAIN;
	return ask(REQ_HELPER, NULL, fn, arg);
}

/* ---- addressing kernel threads: a VP process's tid is its pid --------------------- */

/* The thread group of kernel thread tid: a VP process's (its VP or its
 * watcher), else the initial process's (VP 0, helpers, the program's
 * foreign threads). */
static pid_t group_of(pid_t tid)
{
	if (find_pid(tid))
		return tid;
	int hi = atomic_load_explicit(&procs_hi, memory_order_acquire);
	for (int i = 0; i < hi; i++)
		if (atomic_load_explicit(&procs[i].watcher, memory_order_acquire) == tid)
			return atomic_load_explicit(&procs[i].pid, memory_order_acquire);
	return program();
}

static int process_kill(pid_t tid, int sig)
{
	return vp_syscall(SYS_tgkill, group_of(tid), tid, sig) == 0 ? 0 : errno;
}

static int process_sigqueue(pid_t tid, int sig, siginfo_t *si)
{
	return vp_syscall(SYS_rt_tgsigqueueinfo, group_of(tid), tid, sig, si) == 0 ? 0 : errno;
}

static int process_kill_process(int sig, siginfo_t *si)
{
	pid_t pid = program();
	if (si != NULL && vp_syscall(SYS_rt_sigqueueinfo, pid, sig, si) == 0)
		return 0;
	return vp_syscall(SYS_kill, pid, sig) == 0 ? 0 : errno;
}

static bool process_ours(pid_t pid)
{
	return pid == program() || (pid > 0 && find_pid(pid) != NULL);
}

static int process_task_path(pid_t tid, const char *leaf, char *buf, size_t len)
{
	int n = snprintf(buf, len, "/proc/%d/task/%d/%s", group_of(tid), tid, leaf);
	return n > 0 && (size_t)n < len ? 0 : ENAMETOOLONG;
}

static pid_t process_pid(void)
{
	pid_t p = atomic_load_explicit(&program_pid, memory_order_acquire);
	pid_t r = raw_getpid();
	if (p == 0 || r == p)
		return r;
	/* A VP process: the program's id.  Anything else (a vfork child)
	 * is itself. */
	return find_pid(r) ? p : r;
}

static pid_t process_ppid(void)
{
	pid_t r = raw_getpid();
	pid_t p = atomic_load_explicit(&program_pid, memory_order_acquire);
	if (p == 0 || r == p || find_pid(r) == NULL)
		return (pid_t)vp_syscall(SYS_getppid);
	/* The initial process's parent, which may change: field 4 of its stat. */
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", p);
	if (read_text(path, buf, sizeof buf) < 0)
		return 1;
	char *e = strrchr(buf, ')');   /* the name may hold anything */
	int ppid = 1;
	if (e == NULL || sscanf(e + 1, " %*c %d", &ppid) != 1)
		return 1;
	return ppid;
}

static void process_fork_child(struct vp *vp)
{
	(void)vp;
	/* The child has one kernel thread, the forking one; none of the
	 * parent's VP processes, nor its manager and reaper. */
	for (int i = 0; i < PROC_MAX; i++) {
		atomic_store_explicit(&procs[i].pid, 0, memory_order_relaxed);
		atomic_store_explicit(&procs[i].watcher, 0, memory_order_relaxed);
	}
	atomic_store_explicit(&procs_hi, 0, memory_order_relaxed);
	atomic_store_explicit(&nchildren, 0, memory_order_relaxed);
	atomic_store_explicit(&retired_ns[0], 0, memory_order_relaxed);
	atomic_store_explicit(&retired_ns[1], 0, memory_order_relaxed);
	/* A request another VP process was making at the fork (a setxid
	 * broadcast's or an affinity call's REQ_CALL, say) is not the child's:
	 * with req.seq left as it was, the child's new manager, which starts
	 * from seq 0, ran it, on a thread that is not there. */
	atomic_store_explicit(&req.lock, 0, memory_order_relaxed);
	atomic_store_explicit(&req.seq, 0, memory_order_relaxed);
	atomic_store_explicit(&req.done, 0, memory_order_relaxed);
	req.kind = REQ_NONE;
	atomic_store_explicit(&managers, 0, memory_order_relaxed);
	atomic_store_explicit(&catcher_runs, false, memory_order_relaxed);
	atomic_store_explicit(&forwarder_tid, 0, memory_order_relaxed);
	atomic_store_explicit(&forwarder_held, 0, memory_order_relaxed);
	atomic_store_explicit(&program_pid, raw_getpid(), memory_order_release);
}

/* A signal from outside the program that reached a VP process other than
 * the initial one: the terminal's job-control signals (SI_KERNEL) or a
 * kill of the process group (SI_USER), which every process of the group
 * got, the initial one too, where the program takes it once.  Other
 * SI_KERNEL signals (a fault, a timer's SIGALRM) are the VP's own. */
static bool process_stray(int sig, const siginfo_t *si)
{
	if (in_initial())
		return false;
	if (si->si_code == SI_KERNEL)
		return sig == SIGINT || sig == SIGQUIT || sig == SIGTSTP || sig == SIGHUP ||
		       sig == SIGWINCH || sig == SIGCONT || sig == SIGTTIN || sig == SIGTTOU;
	return si->si_code == SI_USER && !process_ours(si->si_pid);
}

/* The kernel clears PR_SET_PDEATHSIG at every credential change. */
static void process_creds_changed(pid_t tgid)
{
	if (tgid != program())
		vp_syscall_raw(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0, 0);
}

/* The initial process's kernel threads through the manager, which is one
 * of them; a VP process's own directly; another VP process's cannot be
 * reached (the caller gets the kernel's refusal). */
static int process_in_group(pid_t tid, int (*fn)(void *), void *arg)
{
	if (group_of(tid) != program() || in_initial() ||
	    atomic_load_explicit(&managers, memory_order_acquire) != 2)
		return fn(arg);
	return ask_call(REQ_CALL, NULL, NULL, arg, fn);
}

static int process_each(void (*fn)(pid_t pid, void *arg), void *arg)
{
	int n = 1;
	fn(program(), arg);
	int hi = atomic_load_explicit(&procs_hi, memory_order_acquire);
	for (int i = 0; i < hi; i++) {
		pid_t pid = atomic_load_explicit(&procs[i].pid, memory_order_acquire);
		if (pid > 0) {
			fn(pid, arg);
			n++;
		}
	}
	return n;
}

/* The kernel threads of every process of the program: the initial
 * process's (VP 0, helpers, the C library's own) and each VP process's
 * (its VP, its watcher, and any the C library made there, such as glibc's
 * aio helper), each with its own thread group for tgkill. */
struct each_task {
	void (*fn)(pid_t tgid, pid_t tid, void *arg);
	void *arg;
	int err;   /* the initial process's tasks could not be listed */
};

static void tasks_of(pid_t pid, void *arg)
{
	struct each_task *e = arg;
	int err = vp_task_dir_each(pid, e->fn, e->arg);
	if (err != 0 && pid == program())
		e->err = err;   /* a VP process's: one that just ended */
}

static int process_each_task(void (*fn)(pid_t tgid, pid_t tid, void *arg), void *arg)
{
	struct each_task e = { fn, arg, 0 };
	process_each(tasks_of, &e);
	return e.err;
}

/* The program's kernel threads but the backend's own (the manager, the
 * reaper, the forwarder, every VP process's watcher), as one thread
 * group's count is on the other backends: VP 0 and the helpers libppl
 * made in the initial process, each VP, and any the C library or the
 * program made in either.  -1 if the initial process cannot be read. */
struct kcount {
	int n;
	bool err;
};

static void kthreads_of(pid_t pid, void *arg)
{
	struct kcount *c = arg;
	int k = vp_tgroup_kthreads(pid);
	if (k < 0 && pid == program())
		c->err = true;
	c->n += k > 0 ? k : 0;   /* a VP process that just ended: none */
}

static int process_kthreads(void)
{
	struct kcount c = { 0, false };
	process_each(kthreads_of, &c);
	if (c.err)
		return -1;
	c.n -= (int)atomic_load_explicit(&helpers_alive, memory_order_acquire);
	int hi = atomic_load_explicit(&procs_hi, memory_order_acquire);
	for (int i = 0; i < hi; i++)
		if (atomic_load_explicit(&procs[i].pid, memory_order_acquire) > 0 &&
		    atomic_load_explicit(&procs[i].watcher, memory_order_acquire) > 0)
			c.n--;
	return c.n;
}

const struct vp_backend vp_process_backend = {
	.name = "process",
	.create = process_create,
	.terminate = process_terminate,
	.adopt = process_adopt,
	.helper = process_helper,
	.kill = process_kill,
	.sigqueue = process_sigqueue,
	.kill_process = process_kill_process,
	.ours = process_ours,
	.task_path = process_task_path,
	.pid = process_pid,
	.ppid = process_ppid,
	.each_task = process_each_task,
	.fork_child = process_fork_child,
	.retired = process_retired,
	.each_process = process_each,
	.in_group = process_in_group,
	.stray = process_stray,
	.creds_changed = process_creds_changed,
	.kthreads = process_kthreads,
	.initial_only = true,
};
