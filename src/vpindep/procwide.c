/* Kernel state the kernel keeps per process, which every kernel thread of
 * the program must share whatever the VP backend makes them of: the
 * interval timers (alarm, setitimer) and the resource limits.  With the
 * process VP backend a VP process has its own of each; vpdep keeps them
 * the program's (vp_process_itimer, vp_process_prlimit).  The kernel's
 * conventions, as the C library's. */
#include <signal.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/times.h>
#include <time.h>

#include "cpuclock.h"
#include "pthread_impl.h"

unsigned int ppl_alarm(unsigned int s)
{
	struct itimerval nv = { .it_value = { .tv_sec = s } }, ov;
	if (vp_process_itimer(ITIMER_REAL, &nv, &ov) != 0)
		return 0;
	/* As glibc rounds what was left. */
	unsigned int left = (unsigned int)ov.it_value.tv_sec;
	if (ov.it_value.tv_usec >= 500000 || (left == 0 && ov.it_value.tv_usec > 0))
		left++;
	return left;
}

int ppl_setitimer(__itimer_which_t w, const struct itimerval *restrict nv,
		  struct itimerval *restrict ov)
{
	struct itimerval zero = { { 0, 0 }, { 0, 0 } };
	return vp_process_itimer((int)w, nv != NULL ? nv : &zero, ov);   /* NULL: the kernel's 0 */
}

int ppl_getitimer(__itimer_which_t w, struct itimerval *v)
{
	return vp_process_itimer((int)w, NULL, v);
}

int ppl_setrlimit(__rlimit_resource_t r, const struct rlimit *l)
{
	return vp_process_prlimit(0, (int)r, l, NULL);
}

int ppl_setrlimit64(__rlimit_resource_t r, const struct rlimit64 *l)
{
	return vp_process_prlimit(0, (int)r, (const struct rlimit *)l, NULL);
}

int ppl_prlimit(pid_t p, enum __rlimit_resource r, const struct rlimit *nl, struct rlimit *ol)
{
	return vp_process_prlimit(p, (int)r, nl, ol);
}

int ppl_prlimit64(pid_t p, enum __rlimit_resource r, const struct rlimit64 *nl,
		  struct rlimit64 *ol)
{
	return vp_process_prlimit(p, (int)r, (const struct rlimit *)nl, (struct rlimit *)ol);
}

/* ualarm: glibc's calls its internal setitimer, which libppl cannot see. */
useconds_t ppl_ualarm(useconds_t value, useconds_t interval)
{
	struct itimerval nv = { .it_interval = { 0, interval }, .it_value = { 0, value } }, ov;
	if (vp_process_itimer(ITIMER_REAL, &nv, &ov) != 0)
		return (useconds_t)-1;
	return (useconds_t)(ov.it_value.tv_sec * 1000000 + ov.it_value.tv_usec);
}

/* getrusage's RUSAGE_SELF and RUSAGE_CHILDREN, and times: the program's
 * (cpuclock.c's getrusage keeps RUSAGE_THREAD). */
int procwide_rusage(int who, struct rusage *r)
{
	return vp_process_rusage(who, r);
}

clock_t ppl_times(struct tms *t)
{
	return vp_process_times(t);
}

/* POSIX timers on the kernel's clocks are the process's that made them:
 * made and used in the initial process (vp_process_call), whichever VP
 * asks, so that every VP reaches them, their signal is the program's and
 * they outlive the VP (cputimer.c has the user threads' CPU clocks).  A
 * SIGEV_THREAD_ID timer stays with its caller, whose thread it names. */
struct ktimer_call {
	void *fn;
	clockid_t clk;
	struct sigevent *ev;
	timer_t id, *idp;
	int flags;
	const struct itimerspec *nv;
	struct itimerspec *ov;
};

static int create_here(void *arg)
{
	struct ktimer_call *c = arg;
	return ((int (*)(clockid_t, struct sigevent *, timer_t *))c->fn)(c->clk, c->ev, c->idp);
}

int ktimer_create(void *real, clockid_t clk, struct sigevent *ev, timer_t *id)
{
	struct ktimer_call c = { .fn = real, .clk = clk, .ev = ev, .idp = id };
	struct sigevent e;
	if (ev != NULL && vp_copy_in(&e, ev, sizeof e) == 0 && e.sigev_notify == SIGEV_THREAD_ID)
		return create_here(&c);
	return vp_process_call(create_here, &c);
}

static int settime_here(void *arg)
{
	struct ktimer_call *c = arg;
	typedef int fn(timer_t, int, const struct itimerspec *, struct itimerspec *);
	return ((fn *)c->fn)(c->id, c->flags, c->nv, c->ov);
}

int ktimer_settime(void *real, timer_t id, int flags, const struct itimerspec *nv,
		   struct itimerspec *ov)
{
	struct ktimer_call c = { .fn = real, .id = id, .flags = flags, .nv = nv, .ov = ov };
	return vp_process_call(settime_here, &c);
}

static int gettime_here(void *arg)
{
	struct ktimer_call *c = arg;
	return ((int (*)(timer_t, struct itimerspec *))c->fn)(c->id, c->ov);
}

int ktimer_gettime(void *real, timer_t id, struct itimerspec *v)
{
	struct ktimer_call c = { .fn = real, .id = id, .ov = v };
	return vp_process_call(gettime_here, &c);
}

static int id_here(void *arg)
{
	struct ktimer_call *c = arg;
	return ((int (*)(timer_t))c->fn)(c->id);
}

/* timer_getoverrun, timer_delete */
int ktimer_id_call(void *real, timer_t id)
{
	struct ktimer_call c = { .fn = real, .id = id };
	return vp_process_call(id_here, &c);
}
