/* Virtual processors, independent of how their kernel threads are made:
 * backend selection, the calling thread's VP, the signal stack, and the
 * suspend/resume handshake.  vp_<backend>.c creates and ends the threads.
 *
 * Suspend/resume protocol (no lost wake-up): the waker first publishes its
 * work, then vp_resume increments vp->wakeword (release) and wakes the
 * futex.  The sleeper loads wakeword (acquire) into `seen` before it looks
 * for work, and vp_suspend sleeps only while wakeword still equals `seen`;
 * the kernel compares the word under its futex-bucket lock.  If the sleeper
 * missed the work, it read wakeword before the increment, so either the
 * kernel sees the new value and returns at once, or the wake finds the
 * sleeper queued. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "config.h"
#include "futex.h"
#include "glibcabi_kthread.h"

#include "vp_backend.h"
#include "vpdep.h"

static const struct vp_backend *const backends[] = {
	&vp_kthread_backend,
	&vp_clone_backend,
#ifdef PPL_HAVE_PROCESS_BACKEND
	&vp_process_backend,
#endif
};

/* Set once at start-up (vp_backend_select) and read by every VP after. */
static const struct vp_backend *_Atomic selected;

/* Initial-exec: libppl is loaded at start-up (linked or LD_PRELOADed), so
 * its TLS is static and the access is one %fs-relative load.
 *
 * With per-thread TLS every user thread has a block of its own, so this
 * slot exists in each of them; whoever switches a thread in writes the VP
 * into the thread's block first (vp_set_current_in).  Its offset from the
 * thread pointer is the same in every block (static TLS). */
__thread struct vp *vp_current_slot __attribute__((tls_model("initial-exec"))) __attribute__((visibility("hidden")));
#define current vp_current_slot
/* vpdep.h's vp_current: what its asm reads as memory, so that no call is
 * crossed by it; never written. */
char vp_current_fence __attribute__((visibility("hidden")));

_Atomic unsigned long vp_kstate_gen PPL_FORK_STATE;   /* vpdep.h */

_Atomic bool spin_orphans PPL_FORK_STATE;   /* spinlock.h: a forked child's dead holders */

static const struct vp_backend *find(const char *name)
{
	for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
		if (strcmp(backends[i]->name, name) == 0)
			return backends[i];
	return NULL;
}

int vp_backend_select(const char *name)
{
	const struct vp_backend *b = find(name != NULL ? name : PPL_DEFAULT_VP_BACKEND);
	if (b == NULL)
		return EINVAL;
	atomic_store_explicit(&selected, b, memory_order_release);
	return 0;
}

/* The selected backend; the build default if nobody chose one. */
static const struct vp_backend *backend(void)
{
	const struct vp_backend *b = atomic_load_explicit(&selected, memory_order_acquire);
	if (ppl_likely(b != NULL))
		return b;
	b = find(PPL_DEFAULT_VP_BACKEND);
	/* meson's combo option makes the default one of the table's names. */
	if (b == NULL)
		abort();
	const struct vp_backend *none = NULL;
	/* Lose gracefully to a concurrent vp_backend_select. */
	if (!atomic_compare_exchange_strong_explicit(&selected, &none, b, memory_order_acq_rel,
						     memory_order_acquire))
		b = none;
	return b;
}

const struct vp_backend *vp_backend_ops(void)
{
	return backend();
}

const char *vp_backend_name(void)
{
	return backend()->name;
}

uintptr_t vp_libc_handle(struct vp *vp)
{
	/* kthread: the pthread_t, stored before the thread runs. */
	return backend() == &vp_kthread_backend ? vp->handle : 0;
}

#if !defined(__x86_64__)
/* noipa as well as noinline: if gcc proved this function pure it could
 * reuse one call's result (and, in PIC code, the TLS address it computed)
 * after a context switch that moved the caller to another kernel thread.
 * (x86_64: inline, vpdep.h.) */
__attribute__((noinline, noipa)) struct vp *vp_current(void)
{
	return current;
}
#endif

/* Set between vp_vfork_hide and vp_vfork_show: only the vfork child runs
 * on this TLS then (its parent is suspended in the system call). */
static __thread bool vfork_pending __attribute__((tls_model("initial-exec")));

struct vp *vp_vfork_hide(void)
{
	struct vp *vp = current;
	current = NULL;
	vfork_pending = true;
	return vp;
}

void vp_vfork_show(struct vp *vp)
{
	vfork_pending = false;
	current = vp;
}

bool vp_in_vfork_child(void)
{
	return vfork_pending;
}

/* spinlock.h: here, where `current` is one TLS load away, because every
 * spin lock calls them.  A kernel thread that is no VP counts in its own
 * TLS: the main thread before it becomes VP 0 (vp_adopt carries its count
 * over), libppl's helpers and foreign threads.  Helpers block the
 * application's signals; a foreign thread's handler runs where the signal
 * finds it. */
static __thread int unbound_crit __attribute__((tls_model("initial-exec")));

void vp_crit_enter_unbound(void)
{
	unbound_crit++;
}

void vp_crit_leave_unbound(void)
{
	unbound_crit--;
}

#if !defined(__x86_64__)
void vp_set_current_in(void *tp, struct vp *vp)
{
	static ptrdiff_t off;
	static _Atomic bool known;
	if (ppl_unlikely(!atomic_load_explicit(&known, memory_order_acquire))) {
		/* Racing first callers compute the same value. */
		off = (char *)&current - (char *)ctx_tls_self();
		atomic_store_explicit(&known, true, memory_order_release);
	}
	*(struct vp **)((char *)tp + off) = vp;
}
#endif

/* Big enough for the overflow handler's own frames on top of the kernel's
 * signal frame, whose size depends on the CPU's vector state (AVX-512). */
static size_t altstack_size(void)
{
	/* With _GNU_SOURCE, glibc's MINSIGSTKSZ is itself a sysconf call. */
	size_t min = (size_t)getauxval(AT_MINSIGSTKSZ);
	if (min < (size_t)MINSIGSTKSZ)
		min = (size_t)MINSIGSTKSZ;
	size_t size = min * 4 > 65536 ? min * 4 : 65536;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	return (size + page - 1) & ~(page - 1);
}

static int altstack_alloc(struct vp *vp)
{
	size_t size = altstack_size();
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
		       -1, 0);
	if (p == MAP_FAILED)
		return errno;
	vp->altstack = p;
	vp->altstack_size = size;
	return 0;
}

static void altstack_free(struct vp *vp)
{
	if (vp->altstack == NULL)
		return;
	munmap(vp->altstack, vp->altstack_size);
	vp->altstack = NULL;
	vp->altstack_size = 0;
}

int vp_class_self(void)
{
	int saved = errno;
	long policy = vp_syscall(SYS_sched_getscheduler, 0);
	struct sched_param p = { 0 };
	if (policy < 0 || vp_syscall(SYS_sched_getparam, 0, &p) != 0)
		policy = SCHED_OTHER, p.sched_priority = 0;
	errno = saved;
	return VP_CLASS((int)policy & ~SCHED_RESET_ON_FORK, p.sched_priority);
}

void vp_enter(struct vp *vp)
{
	current = vp;
	atomic_store_explicit(&vp->tid, (int)vp_syscall(SYS_gettid), memory_order_release);
	/* A kernel thread inherits its creator's class: a VP made by one that
	 * runs a real-time thread starts real-time. */
	atomic_store_explicit(&vp->kclass, vp_class_self(), memory_order_relaxed);
	if (vp->altstack != NULL) {
		stack_t ss = { .ss_sp = vp->altstack, .ss_size = vp->altstack_size };
		/* Cannot fail: the stack is large enough and we are not on it. */
		vp_sigaltstack(&ss, NULL);
	}
	vp->alt_cur = NULL;
	vp_kstate_changed();
}

int vp_sigaltstack(const stack_t *ss, stack_t *old)
{
	return (int)vp_syscall(SYS_sigaltstack, ss, old);
}

int vp_altstack_use(struct vp *vp, const stack_t *ss)
{
	const void *want = ss != NULL ? ss->ss_sp : NULL;
	if (vp->alt_cur == want)
		return 0;
	stack_t own = { .ss_sp = vp->altstack, .ss_size = vp->altstack_size };
	if (ss == NULL) {
		if (vp->altstack == NULL)
			own.ss_flags = SS_DISABLE;
		ss = &own;
	}
	if (vp_sigaltstack(ss, NULL) != 0)
		return -1;
	vp->alt_cur = want;
	vp_kstate_changed();
	return 0;
}

void vp_leave(struct vp *vp)
{
	vp_tick_stop(vp);   /* a CPU-time timer outlives its thread otherwise */
	stack_t off = { .ss_flags = SS_DISABLE };
	/* EPERM means we are running on the alternate stack: then it must
	 * stay mapped, and leaking it is the only safe choice. */
	if (vp->altstack != NULL && vp_sigaltstack(&off, NULL) == 0)
		altstack_free(vp);
	current = NULL;
}

int vp_create(struct vp *vp, void (*main)(struct vp *))
{
	/* wakeword is left alone: a vp_resume issued before the thread
	 * exists must still make its first vp_suspend return. */
	vp->main = main;
	/* Allocated here, not on the new thread, so that failure is reported. */
	int err = altstack_alloc(vp);
	if (err)
		return err;
	err = backend()->create(vp);
	if (err)
		goto fail_create;
	return 0;

fail_create:
	altstack_free(vp);
	return err;
}

void vp_adopt(struct vp *vp)
{
	backend()->adopt(vp);
	/* Without an alternate stack a stack overflow is a plain SIGSEGV
	 * death instead of a diagnosed one; not worth failing start-up for. */
	if (altstack_alloc(vp) != 0) {
		vp->altstack = NULL;
		vp->altstack_size = 0;
	}
	vp->crit = unbound_crit;   /* the locks it holds now, as a VP */
	unbound_crit = 0;
	vp_enter(vp);
}

int vp_helper_create(void (*fn)(void *), void *arg)
{
	return backend()->helper(fn, arg);
}

_Noreturn void vp_terminate(void)
{
	struct vp *vp = vp_current();
	if (vp != NULL)
		vp_leave(vp);
	backend()->terminate();
	abort(); /* a backend's terminate returned */
}

_Noreturn void vp_terminate_notify(_Atomic int *done, int value)
{
	struct vp *vp = vp_current();
	if (vp != NULL)
		vp_leave(vp);
	atomic_store_explicit(done, value, memory_order_seq_cst);
	backend()->terminate();
	abort();
}

void vp_suspend(struct vp *vp, uint32_t seen, int64_t timeout_ns)
{
	struct timespec ts;
	const struct timespec *tsp = NULL;
	if (timeout_ns >= 0) {
		ts = ns_to_timespec(timeout_ns);
		tsp = &ts;
	}
	/* Plain FUTEX_WAIT: its timeout is relative, as ours is.  EAGAIN
	 * (already resumed), EINTR and ETIMEDOUT all mean "go and look". */
	(void)futex_sys(&vp->wakeword, FUTEX_WAIT_PRIVATE, seen, tsp, 0);
}

void vp_resume(struct vp *vp)
{
	atomic_fetch_add_explicit(&vp->wakeword, 1, memory_order_release);
	futex_sys(&vp->wakeword, FUTEX_WAKE_PRIVATE, 1, NULL, 0);
}

/* ---- signals ----------------------------------------------------------------
 * Raw system calls: the C library's pthread_sigmask and pthread_kill are the
 * ones libppl interposes, and its sigprocmask would do as well, but the
 * kernel's calls say exactly what happens to one kernel thread. */

void vp_fork_child(struct vp *vp)
{
	atomic_store_explicit(&vp->tid, (int)vp_syscall(SYS_gettid), memory_order_release);
	atomic_store_explicit(&vp->tick_on, false, memory_order_relaxed);
	/* A child starts with nothing pending: signals held for the
	 * parent's threads (sigdefer.c) are not its own. */
	atomic_store_explicit(&vp->held, 0, memory_order_relaxed);
	atomic_store_explicit(&vp->held_blocked, 0, memory_order_relaxed);
	atomic_store_explicit(&vp->held_busy, 0, memory_order_relaxed);
	if (backend()->fork_child != NULL)
		backend()->fork_child(vp);
}

void vp_retired(void)
{
	if (backend()->retired != NULL)
		backend()->retired();
}

int vp_signal(struct vp *vp, int sig)
{
	int tid = atomic_load_explicit(&vp->tid, memory_order_acquire);
	if (tid == 0)
		return ESRCH;
	return backend()->kill(tid, sig);
}

int vp_signal_self(int sig)
{
	/* The caller's own thread group, whatever the backend's are (a
	 * vfork child's is its own: the backend's kill would name the
	 * program's). */
	return vp_syscall(SYS_tgkill, vp_syscall(SYS_getpid), vp_syscall(SYS_gettid), sig) == 0
		       ? 0
		       : errno;
}

/* In si_errno, which nothing else sets for SI_QUEUE from this process. */
#define POKE_MARK 0x70706c21   /* "ppl!" */

int vp_poke(struct vp *vp, int sig, void *target)
{
	pid_t tid = vp ? atomic_load_explicit(&vp->tid, memory_order_acquire)
		       : (pid_t)vp_syscall(SYS_gettid);
	if (tid == 0)
		return ESRCH;
	siginfo_t si;
	memset(&si, 0, sizeof si);
	si.si_signo = sig;
	si.si_errno = POKE_MARK;
	si.si_code = SI_QUEUE;
	si.si_pid = vp_process_id();
	si.si_uid = getuid();
	si.si_value.sival_ptr = target;
	int saved = errno;
	int err = backend()->sigqueue(tid, sig, &si);
	errno = saved;
	return err;
}

void *vp_poke_target(const siginfo_t *si)
{
	if (si == NULL || si->si_code != SI_QUEUE || si->si_errno != POKE_MARK)
		return NULL;
	return backend()->ours(si->si_pid) ? si->si_value.sival_ptr : NULL;
}

int vp_set_class(struct vp *vp, int kclass)
{
	pid_t tid = vp == current ? 0 : atomic_load_explicit(&vp->tid, memory_order_acquire);
	if (vp != current && tid == 0)
		return ESRCH;
	/* Under the lock, so that the kernel ends with the class recorded
	 * when the VP and a waker change it at once. */
	spin_lock(&vp->class_lock);
	int err = 0;
	if (atomic_load_explicit(&vp->kclass, memory_order_relaxed) != kclass) {
		struct sched_param p = { .sched_priority = VP_CLASS_PRIO(kclass) };
		int saved = errno;
		if (vp_syscall(SYS_sched_setscheduler, tid, VP_CLASS_POLICY(kclass), &p) != 0)
			err = errno;
		errno = saved;
		atomic_store_explicit(&vp->kclass, kclass, memory_order_relaxed);
		vp_kstate_changed();
	}
	spin_unlock(&vp->class_lock);
	return err;
}

/* spinlock.h: a lock stayed busy for a long while, in a forked child
 * running one thread: a lock in private memory has a dead holder, take it
 * (pagemap unreadable: private, as fork left the child its own copy). */
bool spin_orphan_take(spin_t *l)
{
	if (vp_page_shared(l) == 1)
		return false;
	atomic_store_explicit(l, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_acquire);
	return true;
}

/* spinlock.h: a lock stayed busy for a long while.  Its holder may be a
 * kernel thread preempted on this CPU, maybe by this very one: let it run.
 * A real-time spinner must sleep for that (sched_yield gives way only to
 * its own priority and above); any other yields. */
void spin_wait_long(void)
{
	int saved = errno;
	long policy = vp_syscall(SYS_sched_getscheduler, 0) & ~SCHED_RESET_ON_FORK;
	if (policy == SCHED_FIFO || policy == SCHED_RR) {
		struct timespec ts = { 0, 20000 };
		vp_syscall(SYS_nanosleep, &ts, NULL);
	} else {
		vp_syscall(SYS_sched_yield);
	}
	errno = saved;
}

void vp_set_sigmask(uint64_t mask)
{
	/* The kernel's sigset is 64 bits on every Linux architecture libppl supports. */
	vp_syscall(SYS_rt_sigprocmask, SIG_SETMASK, &mask, NULL, sizeof mask);
	/* After the call: a handler that runs in between (one the new mask
	 * unblocks, at its return) records its own mask in kmask while it
	 * runs and the interrupted one when it returns (sigaction.c). */
	struct vp *vp = current;
	if (vp != NULL)
		vp_note_sigmask(vp, mask);
}

uint64_t vp_block_sigmask(uint64_t add)
{
	uint64_t was = 0;
	vp_syscall(SYS_rt_sigprocmask, SIG_BLOCK, &add, &was, sizeof add);
	struct vp *vp = current;
	if (vp != NULL)
		vp_note_sigmask(vp, was | add);
	return was;
}

uint64_t vp_get_sigmask(void)
{
	uint64_t mask = 0;
	vp_syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &mask, sizeof mask);
	return mask;
}

uint64_t vp_get_sigpending(void)
{
	uint64_t pend = 0;
	vp_syscall(SYS_rt_sigpending, &pend, sizeof pend);
	return pend;
}

bool vp_take_signal(int sig, siginfo_t *si)
{
	uint64_t one = 1ULL << (sig - 1);
	const struct timespec zero = {0, 0};
	if (vp_syscall(SYS_rt_sigtimedwait, &one, si, &zero, sizeof one) != sig)
		return false;
	vp_siginfo_own(si);
	return true;
}

void *vp_backend_tls_block(const char *backend, int *err)
{
	if (glibcabi_kthread_block == NULL) {
		*err = ENOSYS;   /* vpdep alone (its unit tests) */
		return NULL;
	}
	const char *why = NULL;
	void *tp = glibcabi_kthread_block(&why);
	if (tp == NULL) {
		static _Atomic bool said;
		if (!atomic_exchange(&said, true)) {
			char buf[200];
			int n = snprintf(buf, sizeof buf, "libppl: PPL_VP_BACKEND=%s: %s\n", backend, why);
			if (n > 0)
				vp_write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
		}
		*err = EAGAIN;
	}
	return tp;
}
