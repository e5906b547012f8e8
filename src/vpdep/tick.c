/* Preemption ticks: one POSIX timer per VP on the VP's own thread CPU-time
 * clock, delivering a real-time signal to that kernel thread only
 * (SIGEV_THREAD_ID), and the process-wide handler for that signal.
 *
 * Why a thread CPU-time clock: it advances only while the VP's kernel
 * thread runs, so a VP asleep in the kernel (idle, or blocked in a system
 * call) gets no tick and an idle process costs no CPU at all; a VP that
 * runs gets one signal per slice, whether anyone waits or not (vpindep
 * decides in the handler, at about a microsecond per tick).  Linux checks
 * CPU-time timers at the scheduler tick, so a tick lands up to one jiffy
 * (4 ms at HZ=250) after its due time.
 *
 * The handler runs on the interrupted thread's own stack (no SA_ONSTACK:
 * a thread may be switched away inside the handler and stay parked in its
 * frame, and the per-VP alternate stack would be overwritten by the next
 * signal); SA_NODEFER keeps the signal unblocked in the handler, because a
 * thread resumed from inside it would otherwise run with the signal blocked
 * and never be preempted again; SA_RESTART restarts the system calls a tick
 * interrupts, where the kernel allows it. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "vpdep.h"

static void (*tick_fn)(void *uc);

int vp_tick_signal(void)
{
	/* The kernel's last real-time signal but one (64 is cancellation's):
	 * libppl's __libc_current_sigrtmax hides both from programs.  Not
	 * SIGRTMAX, which is that function. */
	return __SIGRTMAX - 1;
}

/* Never inlined or analysed: the handler may return on another kernel
 * thread than it started on, and errno's address must be taken afresh. */
__attribute__((noipa)) static int *errno_slot(void)
{
	return &errno;
}

static void on_tick(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	int saved = *errno_slot();
	tick_fn(uc);
	*errno_slot() = saved;
}

int vp_tick_install(void (*fn)(void *uc), uint64_t blocks)
{
	tick_fn = fn;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_tick;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
	/* The first 64 bits of a sigset_t are the kernel's set. */
	sigemptyset(&sa.sa_mask);
	memcpy(&sa.sa_mask, &blocks, sizeof blocks);
	return vp_sigaction(vp_tick_signal(), &sa, NULL) == 0 ? 0 : errno;
}

static struct itimerspec spec(int64_t first_ns, int64_t interval_ns)
{
	struct itimerspec its;
	its.it_value = ns_to_timespec(first_ns);
	its.it_interval = ns_to_timespec(interval_ns);
	return its;
}

int vp_tick_start(struct vp *vp, int64_t interval_ns)
{
	struct sigevent sev;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = vp_tick_signal();
	sev._sigev_un._tid = (pid_t)vp_syscall(SYS_gettid);
	/* The kernel's timer calls, not the C library's: those are libppl's
	 * own (cputimer.c), which take this clock for the user thread's. */
	int id;
	if (vp_syscall(SYS_timer_create, CLOCK_THREAD_CPUTIME_ID, &sev, &id) != 0)
		return errno;
	struct itimerspec its = spec(interval_ns, interval_ns);
	if (vp_syscall(SYS_timer_settime, id, 0, &its, NULL) != 0) {
		int err = errno;
		vp_syscall(SYS_timer_delete, id);
		return err;
	}
	vp->tick = (uintptr_t)id;
	vp->tick_interval = interval_ns;
	atomic_store_explicit(&vp->tick_on, true, memory_order_release);
	return 0;
}

void vp_tick_soon(struct vp *vp, int64_t first_ns)
{
	/* timer_settime is async-signal-safe: this runs in the handler. */
	struct itimerspec its = spec(first_ns, vp->tick_interval);
	(void)vp_syscall(SYS_timer_settime, (int)vp->tick, 0, &its, NULL);
}

void vp_tick_stop(struct vp *vp)
{
	if (!atomic_exchange_explicit(&vp->tick_on, false, memory_order_acq_rel))
		return;
	vp_syscall(SYS_timer_delete, (int)vp->tick);
}

uintptr_t vp_signal_sp(const void *uc)
{
	const ucontext_t *u = uc;
#if defined(__x86_64__)
	return (uintptr_t)u->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
	return (uintptr_t)u->uc_mcontext.sp;
#else
#error "add the interrupted stack pointer of this architecture's ucontext"
#endif
}

#if defined(__x86_64__)
static const unsigned char syscall_insn[2] = { 0x0f, 0x05 };   /* syscall */
#define RESULT_REG(u) ((long)(u)->uc_mcontext.gregs[REG_RAX])
#elif defined(__aarch64__)
static const unsigned char syscall_insn[4] = { 0x01, 0x00, 0x00, 0xd4 };   /* svc #0 */
#define RESULT_REG(u) ((long)(u)->uc_mcontext.regs[0])
#endif

static bool syscall_insn_at(uintptr_t pc)
{
	unsigned char at[sizeof syscall_insn];
	return vp_copy_in(at, (const void *)pc, sizeof at) == 0 &&
	       memcmp(at, syscall_insn, sizeof at) == 0;
}

bool vp_signal_in_syscall(const void *uc)
{
	/* The kernel leaves the PC on the system call instruction for a
	 * restart (SA_RESTART: every handler libppl installs), or just
	 * after it with -EINTR in the result register. */
	uintptr_t pc = vp_signal_pc(uc);
	return syscall_insn_at(pc) ||
	       (RESULT_REG((const ucontext_t *)uc) == -EINTR && syscall_insn_at(pc - sizeof syscall_insn));
}

bool vp_signal_after_syscall(const void *uc)
{
	return syscall_insn_at(vp_signal_pc(uc) - sizeof syscall_insn);
}

uintptr_t vp_signal_pc(const void *uc)
{
	const ucontext_t *u = uc;
#if defined(__x86_64__)
	return (uintptr_t)u->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
	return (uintptr_t)u->uc_mcontext.pc;
#else
#error "add the interrupted program counter of this architecture's ucontext"
#endif
}
