/* C library calls that programs spin on, reading the CPU or the time until
 * something changes: sched_getcpu, getcpu, time, gettimeofday (and
 * clock_gettime, cpuclock.c).  Each is the C library's own, then a
 * preemption point.
 *
 * Why: a tick is deferred when it lands in the C library or the vDSO
 * (preempt.c), and a thread whose loop is nearly all such calls is nearly
 * always there.  The debt was paid only by a later tick that happened to
 * land in the program's own few instructions: once a jiffy of the VP's CPU
 * time (the timer is a CPU-time one), so glibc's
 * tst-thread-affinity-pthread2 spinners calling sched_getcpu() kept their
 * VP 0.2 to 2.3 s per slice under load (1,119 deferred ticks for 88
 * preemptions in one run) and the threads queued behind them waited that
 * long.  Through libppl, a tick inside the call is paid on its way out. */
#include "base.h"
#include "preempt.h"
#include "vpindep.h"

static void *_Atomic next_sched_getcpu, *_Atomic next_getcpu, *_Atomic next_time,
	*_Atomic next_gettimeofday;

/* Looked up at start-up, not at a thread's first call: dlsym there would
 * clear that thread's dlerror() (tls/state checks it across
 * sched_getcpu). */
void spincalls_init(void)
{
	(void)vp_libc_fn(&next_sched_getcpu, "sched_getcpu", NULL);
	(void)vp_libc_fn(&next_getcpu, "getcpu", NULL);
	(void)vp_libc_fn(&next_time, "time", NULL);
	(void)vp_libc_fn(&next_gettimeofday, "gettimeofday", NULL);
}

int ppl_sched_getcpu(void)
{
	int (*f)(void) = vp_libc_fn(&next_sched_getcpu, "sched_getcpu", NULL);
	int r = f();
	preempt_point();
	return r;
}

int ppl_getcpu(unsigned *cpu, unsigned *node)
{
	int (*f)(unsigned *, unsigned *) = vp_libc_fn(&next_getcpu, "getcpu", NULL);
	int r = f(cpu, node);
	preempt_point();
	return r;
}

time_t ppl_time(time_t *t)
{
	time_t (*f)(time_t *) = vp_libc_fn(&next_time, "time", NULL);
	time_t r = f(t);
	preempt_point();
	return r;
}

int ppl_gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
	int (*f)(struct timeval *, void *) = vp_libc_fn(&next_gettimeofday, "gettimeofday", NULL);
	int r = f(tv, tz);
	preempt_point();
	return r;
}
