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
#include <signal.h>
#include <time.h>

#include "context.h"
#include "spinlock.h"

#define ppl_likely(x) __builtin_expect(!!(x), 1)
#define ppl_unlikely(x) __builtin_expect(!!(x), 0)

/* ---- virtual processors ------------------------------------------------- */

struct vp {
	int id;                  /* 0 .. nvps-1; VP 0 is the process's main kernel thread */
	_Atomic uint32_t wakeword; /* futex word: vp_resume bumps it, vp_suspend waits on it */
	uintptr_t handle;        /* backend's kernel-thread handle (pthread_t, tid, pid) */
	void *altstack;          /* sigaltstack for the stack-overflow handler */
	size_t altstack_size;
	void (*main)(struct vp *); /* what the kernel thread runs (vp_create) */
	_Atomic int tid;         /* kernel thread id, set by the thread itself on entry
				  * (0 until then); read by vp_kernel_state, vp_signal */
	uintptr_t tick;          /* preemption timer (timer_t), valid while tick_on */
	int64_t tick_interval;   /* its period in ns of the VP's CPU time */
	_Atomic bool tick_on;    /* vp_tick_start succeeded, vp_tick_stop not yet called */
	/* Signals (sigdefer.c): spin locks the kernel thread holds, the
	 * blocked set it should have, and the application's signals put off
	 * until it holds none. */
	int crit;
	uint64_t kmask;
	_Atomic uint64_t deferred;
	/* The kernel scheduling class the kernel thread has (VP_CLASS), set
	 * by vp_set_class under class_lock; read without it. */
	_Atomic int kclass;
	spin_t class_lock;
};

/* A kernel scheduling policy and priority in one int, for vp_set_class. */
#define VP_CLASS(policy, prio) ((policy) << 8 | (prio))
#define VP_CLASS_POLICY(c) ((c) >> 8)
#define VP_CLASS_PRIO(c) ((c) & 0xff)

/* A VP backend: kernel threads ("kthread") now; raw clone and processes later.
 * Only vpdep's own files see the table (docs/vpdep.md: adding a backend). */
struct vp_backend {
	const char *name;
	int (*create)(struct vp *vp);   /* start a kernel thread running vp->main(vp) */
	void (*terminate)(void);        /* end the calling VP's kernel thread */
	void (*adopt)(struct vp *vp);   /* set vp->handle to the calling kernel thread */
	/* start a detached kernel thread running fn(arg) that is not a VP */
	int (*helper)(void (*fn)(void *), void *arg);
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
struct vp *vp_current(void);
/* Per-thread TLS: make vp_current() return `vp` in the TLS block whose
 * thread pointer is tp (a user thread about to be switched in on vp). */
void vp_set_current_in(void *tp, struct vp *vp);

/* In the child of fork, on the only kernel thread left, which runs `vp`:
 * its kernel thread id is the child's, and its preemption timer is gone
 * (POSIX timers are not inherited). */
void vp_fork_child(struct vp *vp);
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
/* The signals pending for the calling kernel thread: its own and the process's. */
uint64_t vp_get_sigpending(void);
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
/* Kernel threads in the calling process, or -1 if unknown. */
int vp_process_kthreads(void);

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
/* Make the credential system call nr(a0, a1, a2) (setuid, setresgid,
 * setgroups, ...) on the calling kernel thread and on every other kernel
 * thread of the process (setxid.c).  Returns 0 or the caller's errno; a
 * kernel thread whose result differs from the caller's (which glibc treats
 * as fatal) is reported in *bad_tid and its errno in *bad_err (0 if none). */
int vp_setxid(long nr, long a0, long a1, long a2, pid_t *bad_tid, int *bad_err);
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
/* Unblock the signals put off, once the last lock is gone (vp_crit_leave). */
void vp_signal_flush(struct vp *vp);
/* The C library's sigaction, bypassing libppl's own (libppl's handlers). */
int vp_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/* ---- preemption ticks (tick.c) ---------------------------------------------
 * A periodic signal to one VP's kernel thread, every interval_ns of that
 * thread's CPU time.  The handler runs on the interrupted stack with the
 * signal still unblocked (it may switch contexts and be resumed later, on
 * another VP); errno is preserved around fn. */

/* The signal the ticks use. */
int vp_tick_signal(void);
/* Install fn as the process's handler for the tick signal.  0 or errno. */
int vp_tick_install(void (*fn)(void *uc));
/* Start ticking the calling kernel thread, which must be vp's.  0 or errno. */
int vp_tick_start(struct vp *vp, int64_t interval_ns);
/* From the handler: the next tick after first_ns of CPU time, then periodic again. */
void vp_tick_soon(struct vp *vp, int64_t first_ns);
void vp_tick_stop(struct vp *vp);
/* The program counter the signal interrupted, from the handler's ucontext. */
uintptr_t vp_signal_pc(const void *uc);

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
/* Register the calling kernel thread's robust-mutex list with the kernel
 * (set_robust_list): at the thread's death the kernel marks each listed
 * lock word that holds its tid FUTEX_OWNER_DIED and wakes a waiter.
 * 0 or errno. */
int futex_robust_register(void *head, size_t len);
/* The calling kernel thread's tid. */
int vp_gettid(void);

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

/* ---- clocks --------------------------------------------------------------- */

int64_t clock_now_ns(clockid_t clk);
/* CLOCK_MONOTONIC_COARSE in ns from the C library's vDSO call: a time stamp
 * cheap enough for every park (0 if the clock fails). */
int64_t clock_coarse_ns(void);
int64_t timespec_to_ns(const struct timespec *ts);
struct timespec ns_to_timespec(int64_t ns);

#endif
