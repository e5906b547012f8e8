/* The VP-dependent module's whole contract (PPL's "VP-dependent" layer).
 *
 * A virtual processor (VP) is a kernel-level execution vehicle that runs
 * user-level threads.  vpindep embeds `struct vp` in its own per-VP state and
 * never looks at a backend's handle.  Everything machine- or kernel-specific
 * that vpindep needs is declared here: VPs, spin locks, futexes, clocks and
 * context switching. */
#ifndef PPL_VPDEP_H
#define PPL_VPDEP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/times.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#include "context.h"
#include "spinlock.h"
#include "syscall_raw.h"

#define ppl_likely(x) __builtin_expect(!!(x), 1)
#define ppl_unlikely(x) __builtin_expect(!!(x), 0)

/* ---- virtual processors ------------------------------------------------- */

/* vpindep embeds struct vp (its size must be known) but reads and writes
 * only `id`; every other field is vpdep's, reached through the functions
 * below (vp_kthread_id, vp_in_crit, vp_wake_count, vp_kclass, vp_kmask,
 * vp_note_sigmask, vp_tick_running, vp_libc_handle, vp_altstack_current).  test/unit's
 * check_vpindep_includes.sh fails on any other field named in src/vpindep. */
struct vp {
	int id;                  /* vpindep's: 0 .. nvps-1; VP 0 is the main kernel thread */
	_Atomic uint32_t wakeword; /* futex word: vp_resume bumps it, vp_suspend waits on it */
	uintptr_t handle;        /* backend's kernel-thread handle (pthread_t, tid, pid) */
	void *altstack;          /* sigaltstack for the stack-overflow handler */
	size_t altstack_size;
	const void *alt_cur;     /* the kernel thread's alternate stack: NULL for its
				  * own (altstack), else a user thread's ss_sp */
	void (*main)(struct vp *); /* what the kernel thread runs (vp_create) */
	_Atomic int tid;         /* kernel thread id, set by the thread itself on entry
				  * (0 until then); read by vp_kernel_state, vp_signal */
	uintptr_t tick;          /* preemption timer (the kernel's id), valid while tick_on */
	int64_t tick_interval;   /* its period in ns of the VP's CPU time */
	_Atomic bool tick_on;    /* vp_tick_start succeeded, vp_tick_stop not yet called */
	/* Signals (sigdefer.c): spin locks the kernel thread holds, the
	 * blocked set it should have, and the application's signals put off
	 * until it holds none. */
	int crit;
	uint64_t kmask;
	_Atomic uint64_t deferred;
	/* ... and those put off until the thread running here leaves
	 * libppl's code (vp_signal_hold): taken, their siginfo kept in
	 * held_si; a second instance of a queued signal, blocked and queued
	 * again on the kernel thread (held_blocked). */
	_Atomic uint64_t held, held_blocked;
	_Atomic uint64_t held_busy;   /* a slot being written or taken */
	siginfo_t held_si[64];
	/* The kernel scheduling class the kernel thread has (VP_CLASS), set
	 * by vp_set_class under class_lock; read without it. */
	_Atomic int kclass;
	spin_t class_lock;
};

/* A kernel scheduling policy and priority in one int, for vp_set_class. */
#define VP_CLASS(policy, prio) ((policy) << 8 | (prio))
#define VP_CLASS_POLICY(c) ((c) >> 8)
#define VP_CLASS_PRIO(c) ((c) & 0xff)

/* A VP backend: kernel threads made by the C library ("kthread") or by raw
 * clone ("clone"), or processes sharing the address space ("process").
 * Only vpdep's own files see the table (docs/vpdep.md: adding a backend). */
struct vp_backend {
	const char *name;
	int (*create)(struct vp *vp);   /* start a kernel thread running vp->main(vp) */
	void (*terminate)(void);        /* end the calling VP's kernel thread */
	void (*adopt)(struct vp *vp);   /* set vp->handle to the calling kernel thread */
	/* start a detached kernel thread running fn(arg) that is not a VP */
	int (*helper)(void (*fn)(void *), void *arg);
	/* How the process's kernel threads are addressed (kthread: one thread
	 * group, tgkill(getpid(), tid); a backend whose VPs are processes
	 * differs here and nowhere else).  Each returns 0 or errno. */
	int (*kill)(pid_t tid, int sig);                    /* one kernel thread */
	int (*sigqueue)(pid_t tid, int sig, siginfo_t *si); /* the same, with *si */
	/* to the process (any kernel thread that takes sig), with *si if the
	 * kernel accepts it (si NULL: a plain kill) */
	int (*kill_process)(int sig, siginfo_t *si);
	bool (*ours)(pid_t pid);   /* si_pid names one of the process's VPs */
	/* the /proc file `leaf` (stat, comm) of kernel thread tid into buf */
	int (*task_path)(pid_t tid, const char *leaf, char *buf, size_t len);
	/* fn(tgid, tid, arg) for every kernel thread of the process, the
	 * VPs and those libppl did not make (the C library's own helpers, a
	 * raw clone's), and with the process backend every VP process's;
	 * tgid is its thread group, for tgkill (0: the caller's own).  0, or
	 * errno if they cannot be listed.  vp_setxid's broadcast. */
	int (*each_task)(void (*fn)(pid_t tgid, pid_t tid, void *arg), void *arg);
	/* optional: in fork's child, on the only kernel thread left, which
	 * runs vp (vp_fork_child) */
	void (*fork_child)(struct vp *vp);
	/* optional: the program is back to VP 0 alone, its other VPs ended
	 * (vp_retired): the backend's own helper threads end too, and
	 * start again with the next create. */
	void (*retired)(void);
	/* The program's process id and its parent's, as getpid and getppid
	 * give them to the program on any VP. */
	pid_t (*pid)(void);
	pid_t (*ppid)(void);
	/* fn(pid, arg) for each thread group (process id) the program's
	 * kernel threads are in, the initial process first; how many. */
	int (*each_process)(void (*fn)(pid_t pid, void *arg), void *arg);
	/* fn(arg) on a kernel thread of the thread group kernel thread tid
	 * is in (what the kernel allows a group's own threads only); fn's
	 * result. */
	int (*in_group)(pid_t tid, int (*fn)(void *), void *arg);
	/* A copy of a signal the program takes elsewhere, to drop without
	 * running the handler (may be NULL: none). */
	bool (*stray)(int sig, const siginfo_t *si);
	/* After a credential change on the calling kernel thread (may be
	 * NULL): the kernel resets what it ties to the old credentials.
	 * tgid is the calling kernel thread's thread group. */
	void (*creds_changed)(pid_t tgid);
	/* optional: the program's kernel threads but the backend's own
	 * helpers, or -1 (NULL: the calling thread group's count) */
	int (*kthreads)(void);
	/* fork and wait must run on VP 0's kernel thread, the initial one:
	 * only its thread group's children are the program's. */
	bool initial_only;
};

/* Select the backend by name (NULL = build default).  Returns 0 or EINVAL. */
int vp_backend_select(const char *name);
const char *vp_backend_name(void);

/* Start a new VP running main(vp) on its own kernel thread.  0 or errno. */
int vp_create(struct vp *vp, void (*main)(struct vp *));
/* Make the calling kernel thread the VP `vp` (used for VP 0, the main thread). */
void vp_adopt(struct vp *vp);
/* End the calling VP's kernel thread; does not return. */
_Noreturn void vp_terminate(void);
/* vp_terminate, storing `value` into *done (seq_cst) once the VP's state
 * is no longer touched: its owner may then reuse or free the struct vp. */
_Noreturn void vp_terminate_notify(_Atomic int *done, int value);
/* Park the calling VP until vp_resume(vp) or until timeout_ns passes
 * (timeout_ns < 0: no timeout).  May return spuriously. `seen` is the value
 * of vp->wakeword read before the caller's last check for work: if it has
 * changed, the call returns at once (no lost wake-up). */
void vp_suspend(struct vp *vp, uint32_t seen, int64_t timeout_ns);
/* Wake `vp` if it is suspended, or make its next vp_suspend return at once. */
void vp_resume(struct vp *vp);
/* The VP the calling kernel thread is, or NULL on a kernel thread that
 * libppl did not create (a "foreign" thread).  Never cached across a context
 * switch: a user thread may resume on another VP. */
#if defined(__x86_64__)
/* Inline: the slot (vp.c's vp_current_slot, initial-exec TLS) is read with
 * one %fs-relative load in an asm the compiler may neither merge with
 * another read nor move across a call (the "m" input: memory a call may
 * change), so no read is reused after a switch that moved the thread to
 * another kernel thread, whatever the TLS mode.  A plain __thread read
 * could be: the compiler takes the thread pointer to be constant in a
 * function.  ~3 instructions instead of a call (docs/tls.md). */
extern __thread struct vp *vp_current_slot
	__attribute__((tls_model("initial-exec"), visibility("hidden")));
extern char vp_current_fence __attribute__((visibility("hidden")));
static inline struct vp *vp_current(void)
{
	struct vp *vp;
	__asm__ volatile("movq vp_current_slot@gottpoff(%%rip), %0\n\t"
			 "movq %%fs:(%0), %0"
			 : "=r"(vp)
			 : "m"(vp_current_fence));
	return vp;
}
/* Per-thread TLS: make vp_current() return `vp` in the TLS block whose
 * thread pointer is tp (a user thread about to be switched in on vp): the
 * slot's offset from the thread pointer is the same in every block. */
static inline void vp_set_current_in(void *tp, struct vp *vp)
{
	ptrdiff_t off;
	__asm__("movq vp_current_slot@gottpoff(%%rip), %0" : "=r"(off));
	*(struct vp **)((char *)tp + off) = vp;
}
#else
struct vp *vp_current(void);
void vp_set_current_in(void *tp, struct vp *vp);
#endif

/* vfork: the child runs on the calling thread's memory and TLS until it
 * execs or exits, with kernel state of its own.  vp_vfork_hide makes the
 * calling kernel thread no VP (vp_current() NULL) and marks it a vfork
 * parent, returning the VP; the child inherits both, so libppl's wrappers
 * act on its own kernel state there.  The parent, back, calls
 * vp_vfork_show with that VP.  vp_in_vfork_child: between the two, in the
 * child (the parent is suspended then, and runs nothing of libppl's). */
struct vp *vp_vfork_hide(void);
void vp_vfork_show(struct vp *vp);
bool vp_in_vfork_child(void);

/* In the child of fork, on the only kernel thread left, which runs `vp`:
 * its kernel thread id is the child's, and its preemption timer is gone
 * (POSIX timers are not inherited). */
void vp_fork_child(struct vp *vp);
/* On VP 0 once every other VP has been told to end for good (retire.c):
 * the backend's own helper kernel threads end as well, so that the
 * process has its initial kernel thread alone, as an NPTL program with one
 * thread; the next vp_create starts them again. */
void vp_retired(void);
/* Send signal `sig` to the kernel thread of `vp` (tgkill).  0 or errno;
 * ESRCH if the VP has not started yet. */
int vp_signal(struct vp *vp, int sig);
/* Send `sig` to the calling kernel thread: delivered before this returns
 * unless the kernel thread blocks it. */
int vp_signal_self(int sig);
/* A "poke": `sig` queued (rt_tgsigqueueinfo, SI_QUEUE) to the kernel thread
 * of `vp`, or to the calling one if vp is NULL, carrying `target` and a
 * mark that tells it from any other signal (vp_poke_target).  For a signal
 * meant for one of the user threads a VP runs: the kernel keeps one
 * instance of a standard signal pending per kernel thread, so two such
 * signals for two threads of one VP could merge into one; the caller keeps
 * the real pending state elsewhere and the poke only says "look".  0 or
 * errno (ESRCH if the VP has not started yet). */
int vp_poke(struct vp *vp, int sig, void *target);
/* The target of a poke from this process, or NULL if si is not a poke. */
void *vp_poke_target(const siginfo_t *si);
/* Give vp's kernel thread the kernel's policy and priority `kclass`
 * (VP_CLASS) unless it has it, and record it in vp->kclass.  From any
 * kernel thread: the VP itself, as the user thread it runs changes, or a
 * waker that raises it for a real-time thread it queues there.  The class
 * is recorded even if the kernel refuses (the change is tried again only
 * for another class).  0 or errno. */
int vp_set_class(struct vp *vp, int kclass);
/* The calling kernel thread's class (VP_CLASS), from the kernel;
 * SCHED_OTHER if it cannot say. */
int vp_class_self(void);
/* Install `mask` (signals 1..64, bit sig-1) as the calling kernel thread's
 * blocked set, and record it in its VP (vp->kmask).  No C library involved:
 * its internal signals stay as they are. */
void vp_set_sigmask(uint64_t mask);
/* The calling kernel thread's blocked set. */
uint64_t vp_get_sigmask(void);
/* Add `add` to the calling kernel thread's blocked set (recorded as
 * vp_set_sigmask does); returns the set before: one system call. */
uint64_t vp_block_sigmask(uint64_t add);
/* The kernel's sigaltstack on the calling kernel thread (-1 and errno). */
int vp_sigaltstack(const stack_t *ss, stack_t *old);
/* Give the calling VP's kernel thread the alternate stack ss (a user
 * thread's, its ss_sp not NULL) or, with ss NULL, the VP's own (the
 * overflow handler's), unless it has it already (vp->alt_cur).  0, or -1
 * and errno (the kernel's: EINVAL, ENOMEM, EPERM while on the current one). */
int vp_altstack_use(struct vp *vp, const stack_t *ss);
/* The signals pending for the calling kernel thread: its own and the process's. */
uint64_t vp_get_sigpending(void);
/* The signals pending on the program, wherever a VP backend keeps them:
 * vp_get_sigpending's, and with the process backend those pending on its
 * initial process, held by its forwarder or forwarded to a VP process and
 * not yet taken (from /proc: a system call per process). */
uint64_t vp_program_sigpending(void);
/* Take `sig`, pending and blocked, off the calling kernel thread (its own
 * queue first, then the process's) without waiting; its siginfo into *si
 * (si may be NULL).  True if there was one. */
bool vp_take_signal(int sig, siginfo_t *si);
/* Start a detached kernel thread that runs fn(arg) and is not a VP
 * (vp_current() is NULL there): libppl's own helpers, such as the monitor
 * of blocking system calls.  0 or errno. */
int vp_helper_create(void (*fn)(void *), void *arg);
/* The scheduling state the kernel reports for vp's kernel thread: 'R'
 * (running or runnable), 'S' or 'D' (sleeping in the kernel), another
 * letter of proc(5), or 0 if unknown.  A hint: it may change at once. */
int vp_kernel_state(struct vp *vp);
/* Kernel threads of the program, or -1 if unknown: the calling process's
 * (with the process backend every VP process's too, less the backend's own
 * helpers): what the deadlock check compares with those libppl made. */
int vp_process_kthreads(void);
/* Give a kernel thread the name `name` (at most 15 bytes): tid 0 is the
 * calling one.  No cancellation point.  0 or errno. */
int vp_kthread_set_name(int tid, const char *name);
/* The process's name as the kernel has it (/proc/self/comm, without the
 * newline) into buf.  No cancellation point.  0 or errno. */
int vp_process_name(char *buf, size_t len);

/* ---- kernel threads and the process by id (task.c) -------------------------
 * vpindep makes no system call of its own: what it asks of a kernel thread
 * or of the process goes through these.  `task` is a kernel thread id (a
 * VP's vp_kthread_id, a foreign thread's vp_gettid), a process id, or 0 for
 * the calling kernel thread.  The kernel's conventions: -1 and errno. */
int vp_task_setscheduler(pid_t task, int policy, const struct sched_param *p);
int vp_task_setparam(pid_t task, const struct sched_param *p);
int vp_task_getscheduler(pid_t task);
int vp_task_getparam(pid_t task, struct sched_param *p);
/* The size in bytes of the mask the kernel wrote (not 0 as glibc's), or -1. */
long vp_task_getaffinity(pid_t task, size_t size, void *set);
int vp_task_setaffinity(pid_t task, size_t size, const void *set);
/* setpriority and getpriority (`which` PRIO_PROCESS with a kernel thread
 * id, PRIO_PGRP, PRIO_USER): the nice value, or -1 with errno (clear errno
 * first to tell -1 from an error, as with the C library's). */
int vp_task_setpriority(int which, id_t who, int prio);
int vp_task_getpriority(int which, id_t who);
/* `sig` to the kernel thread tid of this process (tgkill): 0 or -1/errno. */
int vp_kthread_kill(pid_t tid, int sig);
/* `sig` to the whole process (kill): 0 or -1/errno. */
int vp_process_kill(int sig);
/* The calling kernel thread waits for one of the signals of `set` (bit
 * sig-1), at most *timeout if not NULL (sigtimedwait): the signal, or
 * -1/errno. */
int vp_kthread_sigtimedwait(uint64_t set, siginfo_t *si, const struct timespec *timeout);
/* `sig` with *si to the kernel thread tid of this process
 * (rt_tgsigqueueinfo; the kernel takes si_code < 0 only): 0 or -1/errno. */
int vp_kthread_sigqueue(pid_t tid, int sig, siginfo_t *si);
/* `sig` with *si to the process (rt_sigqueueinfo to itself, any si_code):
 * 0 or -1/errno. */
int vp_process_sigqueue(int sig, siginfo_t *si);
/* This process's id: the owner token of process-shared objects, fork
 * stamps, si_pid of the signals libppl makes; what getpid gives the
 * program on every VP (with the process backend, the initial process's
 * id in each VP process). */
pid_t vp_process_id(void);
/* The initial kernel thread's id (the main thread's tid, the owner token
 * in the robust-mutex words its kernel thread registered). */
pid_t vp_initial_kthread_id(void);
/* What getppid gives the program: the initial process's parent. */
pid_t vp_parent_process_id(void);
/* si_pid names one of the program's own kernel threads' processes (the
 * process, or with the process backend any of its VP processes). */
bool vp_process_own(pid_t pid);
/* A signal one of the program's processes sent (si_code <= 0) names the
 * program as its sender: a VP process's pid becomes vp_process_id(). */
void vp_siginfo_own(siginfo_t *si);
/* State the kernel keeps per process that the program's every kernel
 * thread must share, whatever the VP backend makes them of (task.c).  The
 * interval timers (getitimer if nv is NULL, else setitimer): on the
 * initial process.  Resource limits (prlimit; pid 0 or the program's:
 * the program): on every process of the program.  -1 and errno. */
int vp_process_itimer(int which, const struct itimerval *nv, struct itimerval *ov);
int vp_process_prlimit(pid_t pid, int resource, const struct rlimit *nl, struct rlimit *ol);
/* The program's CPU time in ns when it is not the calling process's
 * (CLOCK_PROCESS_CPUTIME_ID counts one process: the sum over the process
 * VP backend's processes, those alive); -1 when the kernel's clock is the
 * program's (one process). */
int64_t vp_process_cputime_ns(void);
/* getrusage's RUSAGE_SELF and RUSAGE_CHILDREN, and times, of the program
 * whatever its VP backend: with the process backend the CPU time of
 * every VP process, those that ended too, is SELF's (the kernel counts
 * an ended one as a child of the initial process); the other RUSAGE_SELF
 * counters are the calling process's.  The kernel's conventions. */
int vp_process_rusage(int who, struct rusage *r);
clock_t vp_process_times(struct tms *t);
/* fn(arg) in the initial process, on one of its kernel threads (with the
 * process backend, from a VP process: on its manager): kernel state a
 * process owns that every VP must reach, POSIX timers on the kernel's
 * clocks (their ids, their signals, the C library's SIGEV_THREAD helper).
 * fn's result, and errno as fn left it. */
int vp_process_call(int (*fn)(void *), void *arg);
/* End the calling kernel thread's process at once (SIGKILL): the
 * program's initial kernel thread is gone and this one must not go on. */
_Noreturn void vp_kthread_group_end(void);
/* True on the process's initial kernel thread. */
bool vp_is_initial_kthread(void);
/* Called by libppl's catcher of process-directed signals (sigroute.c) as
 * it starts: it takes them in the initial process itself, so the process
 * VP backend's forwarder must not compete for them. */
void vp_signal_catcher_started(void);
/* True if fork and the wait calls must run on VP 0 (the initial kernel
 * thread) to make and reap the program's children: with the process VP
 * backend a VP process's children are its own, not the program's. */
bool vp_children_on_initial(void);
/* The calling kernel thread sleeps (clock_nanosleep's arguments): 0 or errno. */
int vp_kthread_sleep(clockid_t clk, int flags, const struct timespec *req, struct timespec *rem);
/* The kernel's CPU-time clock of kernel thread tid (0: the caller's), as
 * clock_gettime and timer_create take it (CPUCLOCK_SCHED, (~tid << 3) | 6),
 * and back: the tid such a clock id names (0 for the caller's), or -1 if
 * c is no kernel thread's CPU clock of that form. */
static inline clockid_t vp_kthread_cpuclock(pid_t tid)
{
	return (clockid_t)((~(unsigned)tid << 3) | 6);
}
static inline pid_t vp_cpuclock_kthread(clockid_t c)
{
	if (c >= 0 || (c & 7) != 6)
		return -1;
	return (pid_t)~((unsigned)c >> 3 | 0xe0000000u);
}
/* Whether c is the program's CPU-time clock: CLOCK_PROCESS_CPUTIME_ID, or
 * the kernel's CPU clock of process 0 (the caller's) or of vp_process_id()
 * (clock_getcpuclockid's, CPUCLOCK_SCHED, (~pid << 3) | 2), which with the
 * process VP backend the kernel would count for one of its processes. */
static inline bool vp_cpuclock_is_program(clockid_t c)
{
	if (c == CLOCK_PROCESS_CPUTIME_ID)
		return true;
	if (c >= 0 || (c & 7) != 2)
		return false;
	pid_t pid = (pid_t)~((unsigned)c >> 3 | 0xe0000000u);
	return pid == 0 || pid == vp_process_id();
}
/* The CPU time (ns) kernel thread tid has run, from /proc (its schedstat:
 * the kernel's CPU clock up to a tick behind), for a kernel thread whose
 * clock the caller cannot read (another thread group's: the process
 * backend's VP processes); -1 if unknown. */
int64_t vp_kthread_runtime_ns(pid_t tid);
/* The page holding addr is shared with other processes (1), private (0),
 * or the kernel does not say (-1): /proc/self/pagemap (procstat.c). */
int vp_page_shared(const void *addr);
/* The calling kernel thread gives its CPU to another (sched_yield). */
void vp_kthread_yield(void);
/* Unregister the calling kernel thread's rseq area of `size` bytes (the
 * C library's registration, with its signature for this CPU): 0 or errno. */
int vp_rseq_unregister(void *area, uint32_t size);
/* vp's kernel thread id (0 before it started: vp_create), and whether vp
 * is inside libppl's spin locks now (sigdefer.c; read on vp's own kernel
 * thread, in a signal handler). */
static inline pid_t vp_kthread_id(struct vp *vp)
{
	return atomic_load_explicit(&vp->tid, memory_order_acquire);
}
static inline bool vp_in_crit(const struct vp *vp)
{
	return vp->crit != 0;
}
/* The count vp_resume bumps: read (acquire) before the last look for work,
 * it is vp_suspend's `seen`. */
static inline uint32_t vp_wake_count(struct vp *vp)
{
	return atomic_load_explicit(&vp->wakeword, memory_order_acquire);
}
/* The kernel class vp_set_class last gave vp's kernel thread (VP_CLASS). */
static inline int vp_kclass(struct vp *vp)
{
	return atomic_load_explicit(&vp->kclass, memory_order_relaxed);
}
/* The blocked set vp's kernel thread has, as recorded by vp_set_sigmask
 * (read on that kernel thread); vp_note_sigmask records one the kernel
 * installed by itself (a handler's entry, its sigreturn). */
static inline uint64_t vp_kmask(const struct vp *vp)
{
	return vp->kmask;
}
/* The generation of the kernel-thread state that user threads want from
 * their VP (class, CPUs, alternate stack, blocked set): bumped after every
 * change of a VP's (here) or of a thread's wants (vpindep), so that a
 * thread that found its VP's state right at generation g needs no look at
 * it while the generation is still g (sig.h's sig_resumed). */
extern _Atomic unsigned long vp_kstate_gen __attribute__((visibility("hidden")));
static inline void vp_kstate_changed(void)
{
	atomic_fetch_add_explicit(&vp_kstate_gen, 1, memory_order_release);
}
static inline unsigned long vp_kstate_now(void)
{
	return atomic_load_explicit(&vp_kstate_gen, memory_order_acquire);
}
/* The alternate stack vp's kernel thread has (vp_altstack_use): NULL for
 * the VP's own, else a user thread's ss_sp; vp_altstack_forget makes the
 * next vp_altstack_use install anew, whatever it finds. */
static inline const void *vp_altstack_current(const struct vp *vp)
{
	return vp->alt_cur;
}
static inline void vp_altstack_forget(struct vp *vp)
{
	vp->alt_cur = (void *)-1;
	vp_kstate_changed();
}
static inline void vp_note_sigmask(struct vp *vp, uint64_t mask)
{
	vp->kmask = mask;
	vp_kstate_changed();
}
/* vp's preemption tick runs (vp_tick_start succeeded, not stopped). */
static inline bool vp_tick_running(struct vp *vp)
{
	return atomic_load(&vp->tick_on);
}
/* vp's kernel thread as the C library names it (its pthread_t: what
 * vp_kthread_handle returns on that thread), or 0 if the backend's
 * kernel threads are not the C library's or vp has not been created. */
uintptr_t vp_libc_handle(struct vp *vp);

/* A kernel thread's own stack, as the C library knows it now (for the
 * initial thread: from RLIMIT_STACK and /proc/self/maps at each call).
 * handle: vp_kthread_handle() of the thread, or 0 for the caller's.  0 or errno. */
int vp_kthread_stack(uintptr_t handle, void **lo, size_t *size);
/* The calling kernel thread, as the C library names it (its pthread_t). */
uintptr_t vp_kthread_handle(void);
/* True while libppl makes one of its kernel threads through a sanitizer's
 * pthread_create wrapper: the wrapper's call of libppl's pthread_create
 * must then go to the C library's, vp_real_pthread_create (vp_kthread.c). */
extern __thread bool vp_creating_kthread_flag
	__attribute__((tls_model("initial-exec"), visibility("hidden")));
static inline bool vp_creating_kthread(void)
{
	return vp_creating_kthread_flag;   /* one load on pthread_create's path */
}
int vp_real_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg);
/* The credential system calls vp_setxid makes. */
enum vp_xid {
	VP_SETUID, VP_SETGID, VP_SETREUID, VP_SETREGID,
	VP_SETRESUID, VP_SETRESGID, VP_SETGROUPS,
};
/* Make the credential system call op(a0, a1, a2) (setuid, setresgid,
 * setgroups, ...) on the calling kernel thread and on every other kernel
 * thread of the process (setxid.c).  Returns 0 or the caller's errno; a
 * kernel thread whose result differs from the caller's (which glibc treats
 * as fatal) is reported in *bad_tid and its errno in *bad_err (0 if none). */
int vp_setxid(enum vp_xid op, long a0, long a1, long a2, pid_t *bad_tid, int *bad_err);
/* In fork's child: forget a broadcast the parent's other threads had under way. */
void vp_setxid_fork_child(void);
/* End a kernel thread libppl did not create, through the C library. */
_Noreturn void vp_kthread_exit(void *result);

/* ---- the application's signal handlers (sigdefer.c) -------------------------
 * A handler that interrupts libppl while it holds a spin lock must not run
 * there: it may call sem_post or pthread_kill, which take the same lock on
 * the same kernel thread.  spin_lock counts the locks a VP holds (vp->crit);
 * a handler that finds the count above zero is put off: the signal is
 * queued again to the same kernel thread and blocked there until the last
 * lock is released, when it is unblocked and the kernel delivers it, with
 * its siginfo, at that point. */

/* From a handler of `sig`: true if the signal was put off (the handler must
 * return at once), false if the handler may run.  Not for faults (SIGSEGV
 * and co.), whose instruction would only fault again: the caller's
 * handlers of those are never put off (sigaction.c does not wrap them). */
bool vp_signal_defer(int sig, siginfo_t *si, void *uc);
/* Unblock the signals put off, once the last lock is gone (vp_crit_leave),
 * but those the code running there blocks on its own (the keeper says
 * which), which go back to the process or the runtime's routing.  The
 * mask a put-off signal added is no mask of the code's: read as one, the
 * unlock sent every put-off signal back and left it blocked on the kernel
 * thread, where the thread then waited in the kernel deaf to it. */
void vp_signal_flush(struct vp *vp);
/* The same on the way out of a handler frame (uc), into code that holds no
 * lock: the signals put off are taken out of the mask its sigreturn gives
 * back (what a keeper's VP_SIGNALS_LATER left for then). */
void vp_signal_flush_uc(struct vp *vp, void *uc);
/* The signals that code running with mask in_force on this kernel thread
 * blocks on its own, put_off being those put off there (in in_force too);
 * VP_SIGNALS_LATER if that code is libppl's part of a handler, whose own
 * mask holds them until its sigreturn.  Without a keeper, in_force. */
#define VP_SIGNALS_LATER UINT64_MAX
void vp_signal_set_keeper(uint64_t (*keep)(uint64_t in_force, uint64_t put_off));
/* The same for a handler that interrupted libppl's code with no lock held
 * (the caller decides when: sigaction.c): the signal is taken and kept,
 * with its siginfo, in the calling VP until vp_signal_release.  Taken, not
 * left pending: a second instance sent meanwhile would find it pending on
 * the kernel thread as well as on the process, and the kernel, which
 * delivers libppl's handlers with SA_NODEFER, stacked the two frames at
 * once (a third with another signal: 10 KiB, a PTHREAD_STACK_MIN thread's
 * stack overflowed in tp_signest_min).  Another instance of a signal held
 * already is blocked and queued again on the kernel thread (held_blocked),
 * as under a lock. */
void vp_signal_hold(int sig, const siginfo_t *si, void *uc);
static inline bool vp_signals_held(const struct vp *vp)
{
	return (atomic_load_explicit(&vp->held, memory_order_relaxed) |
		atomic_load_explicit(&vp->held_blocked, memory_order_relaxed)) != 0;
}
/* On vp's kernel thread, where the held signals may run: send each to
 * this kernel thread again with its siginfo.  Inside a handler whose frame
 * uc returns to such code, they wait (blocked) for its sigreturn, and
 * blocked ones are cleared from uc's mask; with uc NULL they run at once,
 * one by one, and a handler that moves the thread (vp_current() is no
 * longer vp) ends the round, the rest waiting for vp's next.  Those in
 * `blocked` (the running thread's mask) go back to the process or the
 * runtime's routing instead. */
void vp_signal_release(struct vp *vp, uint64_t blocked, void *uc);
/* From another kernel thread: take vp's held signals (not the blocked
 * second instances) and send them to the process or the runtime's routing
 * (a poke to the thread it was for), as a release would for a thread that
 * blocks them. */
void vp_signal_reclaim(struct vp *vp);
/* Who takes a signal put off here that the kernel thread blocks by the
 * last unlock (the thread running there blocks it, or libppl's part of a
 * handler holds it off): route(sig, si) with the kernel's siginfo, true if
 * it took it (the runtime routes it to a user thread, siginfo intact);
 * else, or with none set, it goes back to the process. */
void vp_signal_set_router(bool (*route)(int sig, const siginfo_t *si));

/* spinlock.h's count of the locks the calling kernel thread holds: its
 * VP's, else (a kernel thread that is no VP: the main thread before it
 * becomes VP 0, libppl's helpers, foreign threads) its own, in vp.c.  The
 * signal fences keep the count around the lock word's accesses as a
 * handler on this kernel thread sees them (no instruction). */
void vp_crit_enter_unbound(void);
void vp_crit_leave_unbound(void);

static inline void vp_crit_enter(void)
{
	struct vp *vp = vp_current();
	if (ppl_likely(vp != NULL))
		vp->crit++;
	else
		vp_crit_enter_unbound();
	atomic_signal_fence(memory_order_seq_cst);
}

static inline void vp_crit_leave(void)
{
	atomic_signal_fence(memory_order_seq_cst);
	struct vp *vp = vp_current();
	if (ppl_unlikely(vp == NULL))
		vp_crit_leave_unbound();
	else if (--vp->crit == 0 &&
		 ppl_unlikely(atomic_load_explicit(&vp->deferred, memory_order_relaxed) != 0))
		vp_signal_flush(vp);
}
/* The C library's sigaction, bypassing libppl's own (libppl's handlers). */
int vp_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/* ---- preemption ticks (tick.c) ---------------------------------------------
 * A periodic signal to one VP's kernel thread, every interval_ns of that
 * thread's CPU time.  The handler runs on the interrupted stack with the
 * signal still unblocked (it may switch contexts and be resumed later, on
 * another VP); errno is preserved around fn. */

/* The signal the ticks use. */
int vp_tick_signal(void);
/* Install fn as the process's handler for the tick signal, with the
 * signals of `blocks` (bit sig-1) blocked from its first instruction: the
 * application's, so that none lands on the tick's frame before fn has
 * looked.  0 or errno. */
int vp_tick_install(void (*fn)(void *uc), uint64_t blocks);
/* Start ticking the calling kernel thread, which must be vp's.  0 or errno. */
int vp_tick_start(struct vp *vp, int64_t interval_ns);
/* From the handler: the next tick after first_ns of CPU time, then periodic again. */
void vp_tick_soon(struct vp *vp, int64_t first_ns);
void vp_tick_stop(struct vp *vp);
/* The program counter the signal interrupted, from the handler's ucontext. */
uintptr_t vp_signal_pc(const void *uc);
/* ... its stack pointer. */
uintptr_t vp_signal_sp(const void *uc);
/* Whether the signal interrupted a system call (which the handler's
 * return restarts or fails with EINTR), not an instruction of the code. */
bool vp_signal_in_syscall(const void *uc);
/* ... or came as one returned (whatever its result: raise's tgkill, a
 * write's SIGPIPE). */
bool vp_signal_after_syscall(const void *uc);

/* ---- futexes (foreign kernel threads, VP sleep, process-shared objects) ---- */

/* Wait while *addr == val.  abstime (on clock clk) may be NULL.
 * Returns 0, EAGAIN (value changed), EINTR or ETIMEDOUT. */
int futex_wait(_Atomic uint32_t *addr, uint32_t val, const struct timespec *abstime,
	       clockid_t clk);
void futex_wake(_Atomic uint32_t *addr, int n);
/* Process-shared words (PTHREAD_PROCESS_SHARED objects, which another
 * process may wait on or wake).  futex_wait_shared waits while
 * *addr == val, until the absolute CLOCK_MONOTONIC time abstime (NULL:
 * none).  futex_wait_either also ends when the private word *intr leaves
 * intr_val or is woken, so another thread can interrupt the wait; it
 * returns ENOSYS on kernels before 5.16 (no futex_waitv).  Both return 0
 * (woken), EAGAIN (a word differed), EINTR or ETIMEDOUT. */
int futex_wait_shared(_Atomic uint32_t *addr, uint32_t val, const struct timespec *abstime);
int futex_wait_either(_Atomic uint32_t *addr, uint32_t val, _Atomic uint32_t *intr,
		      uint32_t intr_val, const struct timespec *abstime);
void futex_wake_shared(_Atomic uint32_t *addr, int n);
/* A word that is process-private (shared false) or may be waited on from
 * other processes (sem_t's value word): wait while *addr == val until the
 * absolute abstime on clk (CLOCK_REALTIME or CLOCK_MONOTONIC; NULL: none);
 * 0 or errno (EAGAIN, EINTR, ETIMEDOUT, ...).  Wake n (< 0: all), errno kept. */
int futex_wait_word(_Atomic uint32_t *addr, uint32_t val, bool shared,
		    const struct timespec *abstime, clockid_t clk);
void futex_wake_word(_Atomic uint32_t *addr, int n, bool shared);
/* Register the calling kernel thread's robust-mutex list with the kernel
 * (set_robust_list): at the thread's death the kernel marks each listed
 * lock word that holds its tid FUTEX_OWNER_DIED and wakes a waiter.
 * 0 or errno. */
int futex_robust_register(void *head, size_t len);
/* The calling kernel thread's tid. */
int vp_gettid(void);

/* ---- user-thread stack memory (stackmem.c) ---------------------------------
 * A backend whose VPs are processes must map stacks shared: vpindep's
 * stack.c asks here for the memory and keeps the caches itself. */

/* A fresh read-write stack mapping of `bytes` (NORESERVE), or NULL with
 * errno (ENOMEM: try a smaller one). */
void *vp_stack_map(size_t bytes);
void vp_stack_unmap(void *lo, size_t bytes);
/* Unmap part of a stack arena, leaving a hole whose page tables the
 * kernel frees once nothing else maps their range: false if it would not
 * (ENOMEM: the split would pass vm.max_map_count), the range then intact. */
bool vp_stack_punch(void *lo, size_t bytes);
/* Map a hole made by vp_stack_punch again, at exactly `lo`: false if the
 * range was taken by another mapping meanwhile, or no memory. */
bool vp_stack_refill(void *lo, size_t bytes);
/* Private zeroed memory of `bytes` for libppl's own buffers (not a stack),
 * or NULL with errno. */
void *vp_mem_map(size_t bytes);
/* RLIMIT_NICE (soft): the lowest nice value an unprivileged thread may
 * take is 20 - this; -1 if unlimited or unknown. */
long vp_limit_nice(void);
/* Make [lo, lo+len) a guard (any access faults): 0 or errno. */
int vp_stack_guard(void *lo, size_t len);
/* Remove a guard so that its page tables can go back to the kernel; false
 * if guards cannot be removed that way (they are mprotect'ed). */
bool vp_stack_guard_remove(void *lo, size_t len);
/* Give the pages of [lo, lo+len) back (they read as zeros afterwards). */
void vp_stack_release(void *lo, size_t len);
/* RLIMIT_STACK and RLIMIT_AS (soft) in bytes, 0 if unlimited or unknown. */
size_t vp_limit_stack(void);
size_t vp_limit_address_space(void);

/* ---- memory the application passed by pointer (uaccess.c) -----------------
 * Copies that fail with EFAULT, as the kernel's would, where the
 * application's pointer is bad (NULL, unmapped, unreadable), instead of
 * crashing libppl: 0 or EFAULT.  No system call while libppl's SIGSEGV
 * handler is the process's and calls vp_uaccess_fixup. */
int vp_copy_in(void *dst, const void *user, size_t n);
int vp_copy_out(void *user, const void *src, size_t n);
/* From libppl's SIGSEGV handler: true if the fault was a copy's (its
 * context now returns EFAULT from it), false if it is not ours. */
bool vp_uaccess_fixup(void *uc);
/* Whether that handler is installed: vp_sigaction(SIGSEGV) turns it off. */
void vp_uaccess_arm(bool on);

/* ---- libppl's own output and the C library's functions -------------------
 * Nothing in libppl calls a function it exports (write, clock_gettime,
 * dlopen, kill, ...) by its plain name: that call would bind to libppl's
 * own definition (a cancellation point, or vpindep code under vpdep) or to
 * the program's.  test/abi/check_self_binding.sh fails the build's tests if
 * libppl.so has such a relocation. */

/* Write all n bytes of buf to fd with raw system calls (libppl's messages):
 * never a cancellation point; retried after EINTR and short counts; errno
 * kept.  0 or errno. */
int vp_write(int fd, const void *buf, size_t n);
/* One gathered write, so that the pieces of a message stay together. */
int vp_writev(int fd, const struct iovec *iov, int cnt);
/* libppl's own output files (PPL_TRACE), with raw system calls: open for
 * writing, created 0644 if missing, emptied if `truncate` (fd, or -1 and
 * errno); take an exclusive lock without waiting (false if another
 * process holds it); empty it (0 or errno); its size (-1 if unknown);
 * close it (errno kept). */
int vp_file_open(const char *name, bool truncate);
bool vp_file_lock(int fd);
int vp_file_truncate(int fd);
long long vp_file_size(int fd);
void vp_file_close(int fd);
/* The C library's `name` (at `version` if not NULL and the C library has
 * it), the next definition after libppl's: resolved on first use and
 * cached in *slot.  Missing, it is fatal (one line, abort). */
void *vp_libc_fn_resolve(void *_Atomic *slot, const char *name, const char *version);
static inline void *vp_libc_fn(void *_Atomic *slot, const char *name, const char *version)
{
	/* Inline: the cached pointer, on every park (clock_coarse_ns) and C
	 * library call libppl makes. */
	void *f = atomic_load_explicit(slot, memory_order_acquire);
	return ppl_likely(f != NULL) ? f : vp_libc_fn_resolve(slot, name, version);
}
/* The same lookup, uncached; NULL if missing. */
void *vp_libc_lookup(const char *name, const char *version);
/* Whether any loaded object defines name (a sanitizer's run time: __tsan_init). */
bool vp_symbol_present(const char *name);

/* ---- clocks --------------------------------------------------------------- */

/* The C library's clock_gettime (its vDSO path), not libppl's export. */
int vp_clock_gettime(clockid_t clk, struct timespec *ts);
int64_t clock_now_ns(clockid_t clk);
/* CLOCK_MONOTONIC_COARSE in ns from the C library's vDSO call: a time stamp
 * cheap enough for every park (0 if the clock fails). */
int64_t clock_coarse_ns(void);
int64_t timespec_to_ns(const struct timespec *ts);
struct timespec ns_to_timespec(int64_t ns);

#endif
