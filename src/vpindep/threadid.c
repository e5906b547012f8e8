/* Kernel-style thread ids for user threads: gettid, and the calls that
 * name a thread by such an id (sched_*, setpriority, tgkill, kill, CPU
 * clocks built from a tid) through tid_thread.
 *
 * A user thread scheduled M:N has no kernel thread of its own: the VP's
 * changes as it migrates and is shared with the VP's other threads.  So
 * gettid() gives it an id of its own that no kernel thread can have:
 * VTID_BASE (the kernel's largest pid_max, PID_MAX_LIMIT on 64-bit) plus
 * its sequence number.  It is stable for the thread's life and unique
 * among live threads; libppl's entry points map it back to the thread,
 * and a raw system call or /proc/self/task/ID given one fails (ESRCH,
 * ENOENT) instead of acting on an unrelated thread.  A thread that has a
 * kernel thread to itself from its start (bound, foreign) gets that
 * thread's id, and the initial thread the process id, as on NPTL
 * (docs/scheduling.md); one bound later, by narrowing its CPU set, keeps
 * the id it had. */
#include <limits.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime.h"
#include "schedparam.h"
#include "scheduler.h"
#include "tcbpool.h"
#include "thread.h"
#include "ult.h"
#include "ppl.h"

#define VTID_BASE 4194304
#define VTID_SPAN (INT_MAX - VTID_BASE)

static pid_t vtid_of(const struct ult *t)
{
	return (pid_t)(VTID_BASE + (long)(t->id % VTID_SPAN));
}

/* The kernel thread id t goes by, or 0: a thread bound by its CPU set
 * after it first ran keeps the id it had, which it may have given out. */
static int kernel_id(struct ult *t)
{
	return t->bound_late ? 0 : own_kthread(t);
}

pid_t thread_tid(struct ult *t)
{
	if (t->is_main)
		return vp_process_id();
	int k = kernel_id(t);
	return k ? k : vtid_of(t);
}

pid_t ppl_gettid(void)
{
	if (ppl_unlikely(vp_in_vfork_child()))
		return vp_gettid();   /* the child's own (vfork.c) */
	return thread_tid(ult_self());
}

/* The program's ids on every VP, whatever the VP backend makes them of. */
pid_t ppl_getpid(void)
{
	return vp_process_id();
}

pid_t ppl_getppid(void)
{
	return vp_parent_process_id();
}

bool tid_is_virtual(pid_t id)
{
	return id >= VTID_BASE;
}

/* A thread that exists, in this process (not a parent's, after fork). */
static bool live(struct ult *t)
{
	int st = atomic_load_explicit(&t->state, memory_order_acquire);
	return t->fork_gen == ppl_rt.fork_gen && st != ULT_FREE && st != ULT_ZOMBIE &&
	       st != ULT_EXITING;
}

struct ult *tid_thread(pid_t id)
{
	struct ult *self = ult_self();
	if (id == 0)
		return self;
	if (id == vp_process_id())
		return &ppl_rt.main_ult;
	/* The caller's own kernel thread: what the raw gettid system call
	 * returns (CPython's threading.get_native_id, glibc's tests). */
	if (id == vp_gettid())
		return self;
	if (id < 0)
		return NULL;
	bool virt = tid_is_virtual(id);
	for (struct ult *t = tcb_pool_first(); t; t = tcb_pool_next(t)) {
		if (!live(t))
			continue;
		if (virt ? kernel_id(t) == 0 && !t->is_main && vtid_of(t) == id
			 : kernel_id(t) == id)
			return t;
	}
	return NULL;
}

/* ppl.h: th's sequence number while its TCB is th's, 0 once it has been
 * released (joined, or ended detached).  TCBs are pooled, never unmapped,
 * so a stale pthread_t reads safely; a reused TCB has another number. */
PPL_API unsigned long ppl_thread_serial(pthread_t th)
{
	struct ult *t = (struct ult *)th;
	return ult_stale(t) ? 0 : t->id;
}

/* For the raw set_tid_address (src/preload/syscall.c): the caller's
 * gettid() when that is not the id of the kernel thread it runs on (a user
 * thread scheduled M:N, or the initial thread on another VP's kernel
 * thread), so that the call answers it without touching the VP's kernel
 * thread; 0 when the kernel thread is the caller's own. */
pid_t ppl_tid_unless_kernel(void)
{
	pid_t me = ppl_gettid();
	return !tid_is_virtual(me) && me == vp_gettid() ? 0 : me;
}

/* For the raw tkill: an id that names one of the process's user threads
 * rather than a kernel thread (what ppl_tgkill delivers itself). */
bool ppl_tid_is_user_thread(pid_t id)
{
	return id > 0 && (tid_is_virtual(id) || (id == vp_process_id() && !ppl_rt.main_ult.foreign));
}
