/* Kernel threads and the process, named by the kernel's ids, for vpindep:
 * their scheduling class and affinity, signals to one kernel thread, the
 * process's identity, a kernel thread's sleep and yield.  vpindep makes no
 * system call of its own (test/unit/check_vpindep_syscalls.sh): a VP
 * backend whose VPs are not threads of one process changes these alone.
 * Each is one raw system call with the kernel's conventions. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/times.h>
#include <unistd.h>

#include "vp_backend.h"
#include "vpdep.h"

int vp_task_setscheduler(pid_t task, int policy, const struct sched_param *p)
{
	return (int)vp_syscall(SYS_sched_setscheduler, task, policy, p);
}

int vp_task_setparam(pid_t task, const struct sched_param *p)
{
	return (int)vp_syscall(SYS_sched_setparam, task, p);
}

int vp_task_getscheduler(pid_t task)
{
	return (int)vp_syscall(SYS_sched_getscheduler, task);
}

int vp_task_getparam(pid_t task, struct sched_param *p)
{
	return (int)vp_syscall(SYS_sched_getparam, task, p);
}

long vp_task_getaffinity(pid_t task, size_t size, void *set)
{
	return vp_syscall(SYS_sched_getaffinity, task, size, set);
}

int vp_task_setaffinity(pid_t task, size_t size, const void *set)
{
	return (int)vp_syscall(SYS_sched_setaffinity, task, size, set);
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
	return (int)vp_syscall(SYS_setpriority, which, who, prio);
}

int vp_task_getpriority(int which, id_t who)
{
	/* The kernel answers 20 - nice (1 .. 40), so that no value is an error. */
	long r = vp_syscall(SYS_getpriority, which, who);
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
	vp_process_catcher_started();   /* its forwarder leaves it the caught ones */
#endif
}

uint64_t vp_program_sigpending(void)
{
#ifdef PPL_HAVE_PROCESS_BACKEND
	if (vp_backend_ops() == &vp_process_backend)
		return vp_process_pending();
#endif
	return vp_get_sigpending();
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
	return vp_syscall(SYS_clock_nanosleep, clk, flags, req, rem) == 0 ? 0 : errno;
}

void vp_kthread_yield(void)
{
	vp_syscall(SYS_sched_yield);
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
	return vp_syscall(SYS_rseq, area, size, 1 /* RSEQ_FLAG_UNREGISTER */, RSEQ_SIG) == 0 ? 0 : errno;
}

_Noreturn void vp_kthread_group_end(void)
{
	vp_syscall(SYS_kill, vp_syscall(SYS_getpid), SIGKILL);
	for (;;)
		vp_syscall(SYS_exit_group, 128 + SIGKILL);
}

int vp_process_kill(int sig)
{
	return minus_errno(vp_backend_ops()->kill_process(sig, NULL));
}

int vp_kthread_sigtimedwait(uint64_t set, siginfo_t *si, const struct timespec *timeout)
{
	int r = (int)vp_syscall(SYS_rt_sigtimedwait, &set, si, timeout, sizeof set);
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
	long r = c->nv != NULL ? vp_syscall(SYS_setitimer, c->which, c->nv, c->ov)
			       : vp_syscall(SYS_getitimer, c->which, c->ov);
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
		vp_syscall(SYS_prlimit64, pid, a->resource, a->nl, NULL);
}

int vp_process_prlimit(pid_t pid, int resource, const struct rlimit *nl, struct rlimit *ol)
{
	const struct vp_backend *b = vp_backend_ops();
	if (pid != 0 && !b->ours(pid))
		return (int)vp_syscall(SYS_prlimit64, pid, resource, nl, ol);
	if (vp_syscall(SYS_prlimit64, 0, resource, nl, ol) != 0)
		return -1;
	if (nl == NULL)
		return 0;
	/* The program's other processes (the process backend's VPs): the
	 * same limit, which the caller's own call just showed is allowed. */
	int saved = errno;
	struct limit_all a = { (pid_t)vp_syscall(SYS_getpid), resource, nl };
	b->each_process(limit_one, &a);
	errno = saved;
	return 0;
}

/* The kernel's MAKE_PROCESS_CPUCLOCK(pid, which): CPUCLOCK_PROF (user and
 * system time), CPUCLOCK_VIRT (user) or CPUCLOCK_SCHED (run time), of any
 * process (clock_gettime reads another thread group's). */
static int64_t process_clock_ns(pid_t pid, unsigned which)
{
	clockid_t c = (clockid_t)((~(unsigned)pid) << 3 | which);
	struct timespec ts;
	return vp_syscall(SYS_clock_gettime, c, &ts) == 0 ? timespec_to_ns(&ts) : 0;
}

static void cputime_add(pid_t pid, void *arg)
{
	*(int64_t *)arg += process_clock_ns(pid, 2);
}

static void retired_ns(int64_t *user, int64_t *sys)
{
	*user = *sys = 0;
#ifdef PPL_HAVE_PROCESS_BACKEND
	if (vp_backend_ops() == &vp_process_backend)
		vp_process_retired_ns(user, sys);
#endif
}

int64_t vp_process_cputime_ns(void)
{
	const struct vp_backend *b = vp_backend_ops();
	if (!b->initial_only)
		return -1;   /* one thread group: the kernel's clock is the program's */
	int64_t sum = 0, user, sys;
	b->each_process(cputime_add, &sum);
	retired_ns(&user, &sys);
	return sum + user + sys;
}

struct call {
	int (*fn)(void *);
	void *arg;
	int r, err;
};

static int call_here(void *arg)
{
	struct call *c = arg;
	errno = 0;
	c->r = c->fn(c->arg);
	c->err = errno;
	return 0;
}

int vp_process_call(int (*fn)(void *), void *arg)
{
	struct call c = { fn, arg, 0, 0 };
	vp_backend_ops()->in_group(vp_process_id(), call_here, &c);
	errno = c.err;
	return c.r;
}

/* ---- the program's resource usage ---------------------------------------------------- */

struct usage_sum {
	pid_t self;
	int64_t user, sys;
};

static void usage_add(pid_t pid, void *arg)
{
	struct usage_sum *u = arg;
	if (pid == u->self)
		return;   /* the caller's own rusage has it */
	int64_t user = process_clock_ns(pid, 1);
	u->user += user;
	u->sys += process_clock_ns(pid, 0) - user;
}

static struct timeval ns_tv(int64_t ns)
{
	if (ns < 0)
		ns = 0;
	return (struct timeval){ ns / 1000000000, ns % 1000000000 / 1000 };
}

static int64_t tv_ns(const struct timeval *tv)
{
	return (int64_t)tv->tv_sec * 1000000000 + (int64_t)tv->tv_usec * 1000;
}

struct rusage_call {
	int who;
	struct rusage *r;
};

static int rusage_here(void *arg)
{
	struct rusage_call *c = arg;
	return (int)vp_syscall(SYS_getrusage, c->who, c->r);
}

int vp_process_rusage(int who, struct rusage *r)
{
	const struct vp_backend *b = vp_backend_ops();
	if (!b->initial_only || (who != RUSAGE_SELF && who != RUSAGE_CHILDREN))
		return (int)vp_syscall(SYS_getrusage, who, r);
	int64_t user, sys;
	if (who == RUSAGE_CHILDREN) {
		/* The initial process's children (every fork runs there), less
		 * the VP processes the reaper waited for. */
		struct rusage_call c = { who, r };
		if (vp_process_call(rusage_here, &c) != 0)
			return -1;
		retired_ns(&user, &sys);
		r->ru_utime = ns_tv(tv_ns(&r->ru_utime) - user);
		r->ru_stime = ns_tv(tv_ns(&r->ru_stime) - sys);
		return 0;
	}
	/* The calling process's counters (the memory is every VP's), with the
	 * CPU time of every process of the program, those that ended too. */
	if (vp_syscall(SYS_getrusage, RUSAGE_SELF, r) != 0)
		return -1;
	struct usage_sum u = { (pid_t)vp_syscall(SYS_getpid), 0, 0 };
	b->each_process(usage_add, &u);
	retired_ns(&user, &sys);
	r->ru_utime = ns_tv(tv_ns(&r->ru_utime) + u.user + user);
	r->ru_stime = ns_tv(tv_ns(&r->ru_stime) + u.sys + sys);
	return 0;
}

clock_t vp_process_times(struct tms *t)
{
	long r = vp_syscall(SYS_times, t);
	if (r == -1 || t == NULL || !vp_backend_ops()->initial_only)
		return (clock_t)r;
	struct rusage self, children;
	if (vp_process_rusage(RUSAGE_SELF, &self) != 0 ||
	    vp_process_rusage(RUSAGE_CHILDREN, &children) != 0)
		return (clock_t)r;
	/* The kernel's clock ticks (USER_HZ), as times counts them. */
	long hz = sysconf(_SC_CLK_TCK);
	t->tms_utime = (clock_t)(tv_ns(&self.ru_utime) / (1000000000 / hz));
	t->tms_stime = (clock_t)(tv_ns(&self.ru_stime) / (1000000000 / hz));
	t->tms_cutime = (clock_t)(tv_ns(&children.ru_utime) / (1000000000 / hz));
	t->tms_cstime = (clock_t)(tv_ns(&children.ru_stime) / (1000000000 / hz));
	return (clock_t)r;
}
