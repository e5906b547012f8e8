/* Kernel state the kernel keeps per process, which every kernel thread of
 * the program must share whatever the VP backend makes them of: the
 * interval timers (alarm, setitimer) and the resource limits.  With the
 * process VP backend a VP process has its own of each; vpdep keeps them
 * the program's (vp_process_itimer, vp_process_prlimit).  The kernel's
 * conventions, as the C library's. */
#include <sys/resource.h>
#include <sys/time.h>

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
