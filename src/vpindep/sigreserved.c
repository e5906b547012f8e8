/* libppl's own two signals, and the real-time range programs see.
 *
 * libppl needs a signal for cancellation (cancel.c) and one for the
 * preemption tick (vpdep's tick.c): the kernel's last two, 64 and 63.
 * glibc hides its own two (SIGCANCEL 32, SIGSETXID 33) below SIGRTMIN,
 * which programs read through __libc_current_sigrtmin; libppl does the
 * same at the top, through __libc_current_sigrtmax, so SIGRTMAX is 62 and
 * a program that takes SIGRTMAX, SIGRTMAX-1 or SIGRTMIN+n gets a signal of
 * its own.  (Taking 32 and 33 over from glibc instead, to keep 34..64
 * whole, would mean installing handlers glibc's sigaction refuses and
 * sharing them with glibc's SIGEV_THREAD timers and setxid.)
 *
 * As glibc does for 32 and 33: sigaction and the calls built on it refuse
 * them (sigaction.c), pthread_kill and pthread_sigqueue refuse them, and
 * the masks never block them (signal.c).  kill, sigqueue and tgkill refuse
 * them too when this process is the only target, and raise always (glibc
 * lets its own through there, and a stray SIGCANCEL kills the process
 * while pthread_cancel was never called); a stray one sent from elsewhere
 * is ignored by libppl's handlers. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "runtime.h"
#include "sig.h"
#include "thread.h"
#include "ult.h"
#include "vproc.h"

bool sig_reserved(int sig)
{
	return sig == PPL_SIGCANCEL || sig == vp_tick_signal();
}

/* ---- the range: __libc_allocate_rtsig takes from its ends --------------------------- */

static void *_Atomic next_sigrtmin;
static _Atomic int rt_lo, rt_hi;   /* 0 until the first call */

static void range_init(void)
{
	if (atomic_load_explicit(&rt_hi, memory_order_acquire) != 0)
		return;
	int (*f)(void) = (int (*)(void))vp_libc_fn(&next_sigrtmin, "__libc_current_sigrtmin", NULL);
	int lo = f(), zero = 0;
	atomic_compare_exchange_strong(&rt_lo, &zero, lo);
	zero = 0;
	/* Below libppl's two: the lower of them is the tick's. */
	atomic_compare_exchange_strong(&rt_hi, &zero, vp_tick_signal() - 1);
}

int ppl___libc_current_sigrtmin(void)
{
	range_init();
	return atomic_load_explicit(&rt_lo, memory_order_relaxed);
}

int ppl___libc_current_sigrtmax(void)
{
	range_init();
	return atomic_load_explicit(&rt_hi, memory_order_relaxed);
}

/* glibc's: a signal taken for good off the range, -1 when it is empty.
 * `high` asks for a high priority, which is a low number (glibc takes it
 * off the bottom; checked natively). */
int ppl___libc_allocate_rtsig(int high)
{
	range_init();
	for (;;) {
		int lo = atomic_load(&rt_lo), hi = atomic_load(&rt_hi);
		if (lo > hi)
			return -1;
		if (high ? atomic_compare_exchange_weak(&rt_lo, &lo, lo + 1)
			 : atomic_compare_exchange_weak(&rt_hi, &hi, hi - 1))
			return high ? lo : hi;
	}
}

/* ---- sending ------------------------------------------------------------------------ */

static int refuse(void)
{
	errno = EINVAL;
	return -1;
}

static void *_Atomic next_kill;
static void *_Atomic next_raise;
static void *_Atomic next_sigqueue;
static void *_Atomic next_tgkill;

/* kill and sigqueue given what gettid() returned to a user thread: its
 * process, as the kernel takes a thread id there; ESRCH if it is gone. */
static int process_of(pid_t *pid)
{
	if (*pid <= 0 || !tid_is_virtual(*pid))
		return 0;
	if (tid_thread(*pid) == NULL) {
		errno = ESRCH;
		return -1;
	}
	*pid = vp_process_id();
	return 0;
}

/* kill or sigqueue of this process from a user thread: routed by libppl
 * (sigroute.c) when it takes it, so that the handler runs in a thread. */
static bool routed(pid_t pid, int sig, int code, union sigval value)
{
	if (pid != vp_process_id() || sig < 1 || sig > 64)
		return false;
	siginfo_t si;
	memset(&si, 0, sizeof si);
	si.si_signo = sig;
	si.si_code = code;
	si.si_pid = pid;
	si.si_uid = getuid();
	si.si_value = value;
	return sig_send_process(sig, &si);
}

int ppl_kill(pid_t pid, int sig)
{
	if (process_of(&pid) != 0)
		return -1;
	if (sig_reserved(sig) && pid == vp_process_id())
		return refuse();
	if (routed(pid, sig, SI_USER, (union sigval){ 0 }))
		return 0;
	return ((int (*)(pid_t, int))vp_libc_fn(&next_kill, "kill", NULL))(pid, sig);
}

/* POSIX: in a threaded program raise is pthread_kill(pthread_self()).  The
 * C library's raise sends to the calling kernel thread, where a signal the
 * user thread blocks would stay pending after the thread moved on, and go
 * to whichever thread runs there next (glibc's
 * tst-pthread-raise-blocked-self, after a sleep). */
int ppl_raise(int sig)
{
	if (sig_reserved(sig))
		return refuse();
	struct vproc *v = (struct vproc *)vp_current();
	struct ult *self = v != NULL ? v->current : NULL;
	if (self != NULL && !self->foreign) {
		int err = ppl_pthread_kill((pthread_t)self, sig);
		if (err) {
			errno = err;
			return -1;
		}
		return 0;
	}
	return ((int (*)(int))vp_libc_fn(&next_raise, "raise", NULL))(sig);
}

int ppl_sigqueue(pid_t pid, int sig, const union sigval value)
{
	if (process_of(&pid) != 0)
		return -1;
	if (sig_reserved(sig) && pid == vp_process_id())
		return refuse();
	if (routed(pid, sig, SI_QUEUE, value))
		return 0;
	return ((int (*)(pid_t, int, const union sigval))vp_libc_fn(&next_sigqueue, "sigqueue", NULL))(
		pid, sig, value);
}

int ppl_tgkill(pid_t tgid, pid_t tid, int sig)
{
	if (sig_reserved(sig) && tgid == vp_process_id())
		return refuse();
	/* A user thread named by its gettid() value, or the initial thread by
	 * the process id once it is a user thread (it may run on any VP's
	 * kernel thread): pthread_kill's delivery, to that thread. */
	if (tgid == vp_process_id() && tid > 0 &&
	    (tid_is_virtual(tid) || (tid == tgid && !ppl_rt.main_ult.foreign))) {
		struct ult *t = tid_thread(tid);
		int err = t ? ppl_pthread_kill((pthread_t)t, sig) : ESRCH;
		if (err) {
			errno = err;
			return -1;
		}
		return 0;
	}
	return ((int (*)(pid_t, pid_t, int))vp_libc_fn(&next_tgkill, "tgkill", NULL))(tgid, tid, sig);
}
