/* Nice values of user threads: setpriority, getpriority and nice on
 * PRIO_PROCESS with the calling thread (0) or a thread's id (gettid).
 *
 * On Linux a nice value belongs to a thread, and NPTL's setpriority(
 * PRIO_PROCESS, 0, n) changes the calling thread's only.  A user thread
 * scheduled M:N keeps its own (struct ult's nice): set and read through
 * these calls, inherited by the threads it creates, checked as the kernel
 * checks it (EACCES to lower it past RLIMIT_NICE without privilege).  A
 * thread with a kernel thread to itself (bound, foreign, the initial one
 * before start-up) gives it to that kernel thread as well.  libppl's time
 * slices do not weigh priority-0 threads by it, and a VP's kernel thread
 * keeps its own nice (docs/scheduling.md).  PRIO_PGRP, PRIO_USER and ids
 * of other processes are the kernel's. */
#include <errno.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "schedparam.h"
#include "thread.h"
#include "ult.h"

/* A kernel thread's, a process group's or a user's nice value: vpdep's
 * (the C library's copy is not needed, at start-up or later). */
static int real_setpriority(__priority_which_t which, id_t who, int prio)
{
	return vp_task_setpriority((int)which, who, prio);
}

static int real_getpriority(__priority_which_t which, id_t who)
{
	return vp_task_getpriority((int)which, who);
}

/* The kernel's can_nice: RLIMIT_NICE allows 20 - nice, CAP_SYS_NICE any
 * (taken as root, as sched_check does). */
static bool may_lower_to(int prio)
{
	if (geteuid() == 0)
		return true;
	long lim = vp_limit_nice();
	return lim < 0 || 20 - prio <= lim;
}

/* The thread PRIO_PROCESS `who` names, or NULL: the kernel's. */
static struct ult *target(__priority_which_t which, id_t who)
{
	if (which != PRIO_PROCESS || who > (id_t)INT32_MAX)
		return NULL;
	return tid_thread((pid_t)who);
}

int ppl_setpriority(__priority_which_t which, id_t who, int prio)
{
	struct ult *t = target(which, who);
	if (t == NULL)
		return real_setpriority(which, who, prio);
	/* The kernel clamps to the range. */
	prio = prio < -20 ? -20 : prio > 19 ? 19 : prio;
	int k = own_kthread(t);
	if (k) {
		if (real_setpriority(PRIO_PROCESS, (id_t)k, prio) != 0)
			return -1;
	} else if (prio < t->nice && !may_lower_to(prio)) {
		errno = EACCES;
		return -1;
	}
	t->nice = prio;
	return 0;
}

int ppl_getpriority(__priority_which_t which, id_t who)
{
	struct ult *t = target(which, who);
	if (t == NULL)
		return real_getpriority(which, who);
	int k = own_kthread(t);
	return k ? real_getpriority(PRIO_PROCESS, (id_t)k) : t->nice;
}

/* glibc's nice: the caller's value plus inc, clamped; EPERM where
 * setpriority says EACCES; the new value. */
int ppl_nice(int inc)
{
	int save = errno;
	errno = 0;
	int prio = ppl_getpriority(PRIO_PROCESS, 0);
	if (prio == -1 && errno != 0)
		return -1;
	errno = save;
	long want = (long)prio + inc;
	want = want < -20 ? -20 : want > 19 ? 19 : want;
	if (ppl_setpriority(PRIO_PROCESS, 0, (int)want) != 0) {
		if (errno == EACCES)
			errno = EPERM;
		return -1;
	}
	return ppl_getpriority(PRIO_PROCESS, 0);
}

void nice_init(struct ult *m)
{
	errno = 0;
	int n = real_getpriority(PRIO_PROCESS, 0);
	m->nice = n == -1 && errno != 0 ? 0 : n;
}
