/* Kernel threads and the process, named by the kernel's ids, for vpindep:
 * their scheduling class and affinity, signals to one kernel thread, the
 * process's identity, a kernel thread's sleep and yield.  vpindep makes no
 * system call of its own (test/unit/check_vpindep_syscalls.sh): a VP
 * backend whose VPs are not threads of one process changes these alone.
 * Each is one raw system call with the kernel's conventions. */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vp_backend.h"
#include "vpdep.h"

int vp_task_setscheduler(pid_t task, int policy, const struct sched_param *p)
{
	return (int)syscall(SYS_sched_setscheduler, task, policy, p);
}

int vp_task_setparam(pid_t task, const struct sched_param *p)
{
	return (int)syscall(SYS_sched_setparam, task, p);
}

int vp_task_getscheduler(pid_t task)
{
	return (int)syscall(SYS_sched_getscheduler, task);
}

int vp_task_getparam(pid_t task, struct sched_param *p)
{
	return (int)syscall(SYS_sched_getparam, task, p);
}

long vp_task_getaffinity(pid_t task, size_t size, void *set)
{
	return syscall(SYS_sched_getaffinity, task, size, set);
}

int vp_task_setaffinity(pid_t task, size_t size, const void *set)
{
	return (int)syscall(SYS_sched_setaffinity, task, size, set);
}

static int minus_errno(int err)
{
	if (err == 0)
		return 0;
	errno = err;
	return -1;
}

int vp_task_setpriority(int which, id_t who, int prio)
{
	return (int)syscall(SYS_setpriority, which, who, prio);
}

int vp_task_getpriority(int which, id_t who)
{
	/* The kernel answers 20 - nice (1 .. 40), so that no value is an error. */
	long r = syscall(SYS_getpriority, which, who);
	return r < 0 ? -1 : 20 - (int)r;
}

int vp_kthread_kill(pid_t tid, int sig)
{
	return minus_errno(vp_backend_ops()->kill(tid, sig));
}

int vp_kthread_sigqueue(pid_t tid, int sig, siginfo_t *si)
{
	return minus_errno(vp_backend_ops()->sigqueue(tid, sig, si));
}

int vp_process_sigqueue(int sig, siginfo_t *si)
{
	return minus_errno(vp_backend_ops()->kill_process(sig, si));
}

pid_t vp_process_id(void)
{
	return vp_backend_ops()->pid();
}

pid_t vp_parent_process_id(void)
{
	return vp_backend_ops()->ppid();
}

bool vp_process_own(pid_t pid)
{
	return vp_backend_ops()->ours(pid);
}

void vp_siginfo_own(siginfo_t *si)
{
	if (si == NULL)
		return;
#ifdef PPL_HAVE_PROCESS_BACKEND
	vp_process_siginfo(si);   /* a forwarded signal's own code */
#endif
	if (si->si_code > 0 || si->si_code == SI_TIMER)
		return;
	pid_t me = vp_process_id();
	if (si->si_pid != me && vp_process_own(si->si_pid))
		si->si_pid = me;
}

void vp_signal_catcher_started(void)
{
#ifdef PPL_HAVE_PROCESS_BACKEND
	vp_process_catcher_started();   /* its forwarder stands down */
#endif
}

bool vp_children_on_initial(void)
{
	return vp_backend_ops()->initial_only;
}

bool vp_is_initial_kthread(void)
{
	return vp_gettid() == vp_initial_kthread_id();
}

pid_t vp_initial_kthread_id(void)
{
	return vp_process_id();   /* the initial process's leader: its tid is the program's pid */
}

int vp_kthread_sleep(clockid_t clk, int flags, const struct timespec *req, struct timespec *rem)
{
	return syscall(SYS_clock_nanosleep, clk, flags, req, rem) == 0 ? 0 : errno;
}

void vp_kthread_yield(void)
{
	syscall(SYS_sched_yield);
}

/* glibc's RSEQ_SIG (sysdeps/unix/sysv/linux/<cpu>/bits/rseq.h): the kernel
 * unregisters an area only with the signature it was registered with. */
#if defined(__x86_64__)
#define RSEQ_SIG 0x53053053u
#elif defined(__aarch64__) && !defined(__AARCH64EB__)
#define RSEQ_SIG 0xd428bc00u   /* BRK #0x45E0 */
#elif defined(__aarch64__)
#define RSEQ_SIG 0x00bc28d4u
#else
#error "add the C library's RSEQ_SIG for this architecture"
#endif

int vp_rseq_unregister(void *area, uint32_t size)
{
	return syscall(SYS_rseq, area, size, 1 /* RSEQ_FLAG_UNREGISTER */, RSEQ_SIG) == 0 ? 0 : errno;
}

int vp_process_kill(int sig)
{
	return minus_errno(vp_backend_ops()->kill_process(sig, NULL));
}

int vp_kthread_sigtimedwait(uint64_t set, siginfo_t *si, const struct timespec *timeout)
{
	int r = (int)syscall(SYS_rt_sigtimedwait, &set, si, timeout, sizeof set);
	if (r > 0)
		vp_siginfo_own(si);
	return r;
}

/* ---- per-process state: on the right process (docs/vpdep.md) --------------------------- */

struct itimer_call {
	int which;
	const struct itimerval *nv;
	struct itimerval *ov;
	int err;
};

static int itimer_here(void *arg)
{
	struct itimer_call *c = arg;
	long r = c->nv != NULL ? syscall(SYS_setitimer, c->which, c->nv, c->ov)
			       : syscall(SYS_getitimer, c->which, c->ov);
	c->err = r < 0 ? errno : 0;
	return 0;
}

int vp_process_itimer(int which, const struct itimerval *nv, struct itimerval *ov)
{
	struct itimer_call c = { which, nv, ov, 0 };
	vp_backend_ops()->in_group(vp_process_id(), itimer_here, &c);
	return minus_errno(c.err);
}

struct limit_all {
	pid_t self;
	int resource;
	const struct rlimit *nl;
};

static void limit_one(pid_t pid, void *arg)
{
	struct limit_all *a = arg;
	if (pid != a->self)
		syscall(SYS_prlimit64, pid, a->resource, a->nl, NULL);
}

int vp_process_prlimit(pid_t pid, int resource, const struct rlimit *nl, struct rlimit *ol)
{
	const struct vp_backend *b = vp_backend_ops();
	if (pid != 0 && !b->ours(pid))
		return (int)syscall(SYS_prlimit64, pid, resource, nl, ol);
	if (syscall(SYS_prlimit64, 0, resource, nl, ol) != 0)
		return -1;
	if (nl == NULL)
		return 0;
	/* The program's other processes (the process backend's VPs): the
	 * same limit, which the caller's own call just showed is allowed. */
	int saved = errno;
	struct limit_all a = { (pid_t)syscall(SYS_getpid), resource, nl };
	b->each_process(limit_one, &a);
	errno = saved;
	return 0;
}

static void cputime_add(pid_t pid, void *arg)
{
	/* The kernel's MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED). */
	clockid_t c = (clockid_t)((~(unsigned)pid) << 3) | 2;
	struct timespec ts;
	if (syscall(SYS_clock_gettime, c, &ts) == 0)
		*(int64_t *)arg += timespec_to_ns(&ts);
}

int64_t vp_process_cputime_ns(void)
{
	const struct vp_backend *b = vp_backend_ops();
	if (!b->initial_only)
		return -1;   /* one thread group: the kernel's clock is the program's */
	int64_t sum = 0;
	b->each_process(cputime_add, &sum);
	return sum;
}
