/* Scheduling parameters of user threads: policy and priority
 * (pthread_setschedparam & co., and the C library's sched_setscheduler
 * family for the calling thread), and CPU affinity.
 *
 * Invariants
 *  - A thread's priority (struct ult's prio) is its sched_priority under
 *    SCHED_FIFO and SCHED_RR, 0 under the other policies; the scheduler
 *    orders run queues and wait queues by it (runq.h, waitq.c).  A
 *    thread whose priority another thread changes is queued again where
 *    it is, run queue or wait queue, at the back of its new priority (as
 *    the kernel requeues NPTL's threads and futex waiters); the caller's
 *    own change gives way at once to a ready thread that now outranks it.
 *  - The kernel sees VPs, not user threads, so a VP's kernel thread takes
 *    the policy and priority of the user thread it runs (ult_kclass):
 *    the kernel then ranks a real-time thread of libppl against other
 *    processes as it ranks NPTL's, which preempts them.  Installed when a
 *    thread resumes on a VP whose kernel thread has another class (one
 *    system call; threads of one class switch with none), and raised by
 *    whoever queues a real-time thread on a VP whose kernel thread ranks
 *    lower (sched_push): that kernel thread must get a CPU that a lower
 *    real-time one may hold.  A thread with a kernel thread to itself
 *    (before the first pthread_create, a SCOPE_SYSTEM thread, a thread
 *    libppl did not create) gets it there directly.  Spin locks sleep now
 *    and then when they stay busy (spin_wait_long), so a real-time VP does
 *    not spin for good on a lock held by a VP it keeps off the CPU.
 *  - Affinity is affinity.c's.  Permission checks follow the kernel's:
 *    EPERM for real-time policies without root. */
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mutex_prio.h"
#include "preempt.h"
#include "runtime.h"
#include "schedparam.h"
#include "scheduler.h"
#include "thread.h"
#include "ult.h"
#include "vproc.h"

int sched_check(int policy, const struct sched_param *p)
{
	if (policy != SCHED_OTHER && policy != SCHED_FIFO && policy != SCHED_RR &&
	    policy != SCHED_BATCH && policy != SCHED_IDLE)
		return EINVAL;
	int lo = sched_get_priority_min(policy), hi = sched_get_priority_max(policy);
	if (p->sched_priority < lo || p->sched_priority > hi)
		return EINVAL;
	if ((policy == SCHED_FIFO || policy == SCHED_RR) && geteuid() != 0)
		return EPERM;
	return 0;
}

/* The kernel thread t has to itself, or 0 (an unbound user thread once
 * the VPs run: it shares its VP's). */
int own_kthread(struct ult *t)
{
	if (t->bound && t->home)
		return vp_kthread_id(&t->home->vp);
	if (t->foreign)
		return t->ktid;
	return 0;
}

static int set_params(struct ult *t, int policy, const struct sched_param *p)
{
	int err = sched_check(policy, p);
	if (err)
		return err;
	int tid = own_kthread(t);
	if (tid && vp_task_setscheduler(tid, policy, p) != 0)
		return errno;
	ult_set_sched(t, policy, p);
	prio_base_changed(t);   /* it keeps what PI/PP mutexes give it */
	if (t == ult_self())
		sched_prio_changed();
	else
		sched_requeue(t);
	preempt_point();   /* t may now outrank the caller */
	return 0;
}

/* A thread that has exited, joined or not, has no kernel thread to set
 * for glibc (its tid is 0): ESRCH. */
static bool gone(struct ult *t)
{
	return ult_stale(t) || atomic_load_explicit(&t->state, memory_order_acquire) == ULT_ZOMBIE;
}

int ppl_pthread_setschedparam(pthread_t th, int policy, const struct sched_param *p)
{
	struct ult *t = (struct ult *)th;
	if (gone(t))
		return ESRCH;
	return set_params(t, policy, p);
}

int ppl_pthread_getschedparam(pthread_t th, int *policy, struct sched_param *p)
{
	struct ult *t = (struct ult *)th;
	if (ult_stale(t))
		return ESRCH;
	*policy = t->sched_policy;
	*p = t->sched_param;
	return 0;
}

int ppl_pthread_setschedprio(pthread_t th, int prio)
{
	struct ult *t = (struct ult *)th;
	if (gone(t))
		return ESRCH;
	struct sched_param p = { .sched_priority = prio };
	return set_params(t, t->sched_policy, &p);
}

/* ---- the C library's calls on a process id ---------------------------------------
 * pid 0 is the calling thread and the process id the initial one, as on
 * NPTL, and what gettid() returned to a thread is that thread (threadid.c);
 * any other id is a kernel thread or process: the kernel's. */

static struct ult *thread_of(pid_t pid)
{
	return tid_thread(pid);
}

static int fail(int err)
{
	errno = err;
	return -1;
}

int ppl_sched_setscheduler(pid_t pid, int policy, const struct sched_param *p)
{
	struct ult *t = thread_of(pid);
	if (t == NULL)
		return (int)vp_task_setscheduler(pid, policy, p);
	struct sched_param sp;
	if (p == NULL || pid < 0)
		return fail(EINVAL);
	if (vp_copy_in(&sp, p, sizeof sp) != 0)
		return fail(EFAULT);
	/* SCHED_RESET_ON_FORK has no meaning for a user thread: the kernel's. */
	int err = set_params(t, policy & ~SCHED_RESET_ON_FORK, &sp);
	return err ? fail(err) : 0;
}

int ppl_sched_setparam(pid_t pid, const struct sched_param *p)
{
	struct ult *t = thread_of(pid);
	if (t == NULL)
		return (int)vp_task_setparam(pid, p);
	struct sched_param sp;
	if (p == NULL)
		return fail(EINVAL);
	if (vp_copy_in(&sp, p, sizeof sp) != 0)
		return fail(EFAULT);
	int err = set_params(t, t->sched_policy, &sp);
	return err ? fail(err) : 0;
}

int ppl_sched_getscheduler(pid_t pid)
{
	struct ult *t = thread_of(pid);
	if (t == NULL)
		return (int)vp_task_getscheduler(pid);
	return t->sched_policy;
}

int ppl_sched_getparam(pid_t pid, struct sched_param *p)
{
	struct ult *t = thread_of(pid);
	if (t == NULL)
		return (int)vp_task_getparam(pid, p);
	if (p == NULL)
		return fail(EINVAL);
	struct sched_param sp = t->sched_param;
	sp.sched_priority = prio_param_view(t);   /* the kernel's view */
	return vp_copy_out(p, &sp, sizeof *p) ? fail(EFAULT) : 0;
}

/* The initial thread starts with what its kernel thread has (a program
 * started under chrt, say); its CPUs are the process's (affinity.c). */
void sched_params_init(struct ult *m)
{
	affinity_init();
	int c = vp_class_self();
	ult_set_sched(m, VP_CLASS_POLICY(c), &(struct sched_param){ .sched_priority = VP_CLASS_PRIO(c) });
}

/* ---- the kernel's view: a VP's class ----------------------------------------------- */

/* What the kernel ranks a class by, among the classes libppl gives VPs. */
static int class_rank(int kclass)
{
	int policy = VP_CLASS_POLICY(kclass);
	return policy == SCHED_FIFO || policy == SCHED_RR ? VP_CLASS_PRIO(kclass) : 0;
}

void sched_class_raise(struct vproc *v, const struct ult *t)
{
	if (class_rank(vp_kclass(&v->vp)) < t->prio)
		vp_set_class(&v->vp, ult_kclass(t));
}

/* ---- affinity (affinity.c) ------------------------------------------------------------ */

/* sched_setaffinity and sched_getaffinity: on a thread of the process, as
 * pthread_setaffinity_np and pthread_getaffinity_np on it (glibc's
 * wrappers differ only in reporting errors through errno). */
int ppl_sched_setaffinity(pid_t pid, size_t n, const cpu_set_t *set)
{
	struct ult *t = thread_of(pid);
	if (t == NULL)
		return vp_task_setaffinity(pid, n, set);
	int err = ppl_pthread_setaffinity_np((pthread_t)t, n, set);
	return err ? fail(err) : 0;
}

int ppl_sched_getaffinity(pid_t pid, size_t n, cpu_set_t *set)
{
	struct ult *t = thread_of(pid);
	if (t == NULL) {
		long r = vp_task_getaffinity(pid, n < INT_MAX ? n : INT_MAX, set);
		if (r < 0)
			return -1;
		memset((char *)set + r, 0, n - (size_t)r);
		return 0;
	}
	int err = ppl_pthread_getaffinity_np((pthread_t)t, n, set);
	return err ? fail(err) : 0;
}
