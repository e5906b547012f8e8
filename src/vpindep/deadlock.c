/* Deadlock report (PPL_DEADLOCK=abort|warn|off): when every thread is
 * parked on a libppl object and nothing could ever wake one, say which
 * thread waits on what.  The monitor calls deadlock_snapshot when the last
 * VP went idle, and again QUIET_NS later; only two equal looks report.
 *
 * Conservative by construction: a false report is worse than a missed one.
 * Anything that could still wake a thread vetoes it: a VP running, in a
 * system call (a process-shared wait's leader is one) or lent; a timer
 * armed (timed waits, sleeps); a kernel thread libppl did not make (it may
 * call in later, such as the C library's SIGEV_THREAD helper); a foreign
 * thread that did call in. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base.h"
#include "monitor.h"
#include "runtime.h"
#include "tcbpool.h"
#include "thread.h"
#include "timer.h"
#include "ult.h"
#include "vproc.h"

int ppl_env_deadlock PPL_HIDDEN = 1;

static bool live(struct ult *t)
{
	int st = atomic_load_explicit(&t->state, memory_order_acquire);
	/* A thread of the parent, in a forked child: it does not exist here. */
	if (t->fork_gen != ppl_rt.fork_gen)
		return false;
	return st != ULT_FREE && st != ULT_ZOMBIE;
}

/* Parked on a wait queue with no deadline: only another thread wakes it. */
static bool stuck(struct ult *t)
{
	return atomic_load_explicit(&t->state, memory_order_acquire) == ULT_BLOCKED &&
	       atomic_load_explicit(&t->timer.state, memory_order_acquire) == TIMER_IDLE &&
	       !t->foreign;
}

bool deadlock_snapshot(unsigned long *mark)
{
	if (ppl_env_deadlock == 0 || !atomic_load_explicit(&ppl_rt.started, memory_order_acquire))
		return false;
	unsigned long m = monitor_handoffs();
	for (int i = 0; i < ppl_rt.nvps_total; i++) {
		struct vproc *v = ppl_rt.vps[i];
		if (v == NULL)
			continue;
		if (atomic_load_explicit(&v->next_deadline, memory_order_acquire) != INT64_MAX ||
		    atomic_load_explicit(&v->rq_len, memory_order_seq_cst) != 0 ||
		    atomic_load_explicit(&v->in_syscall, memory_order_seq_cst) != SYS_OUT ||
		    atomic_load_explicit(&v->lent_to, memory_order_relaxed) != NULL)
			return false;
		if (!atomic_load(&v->retired) && !atomic_load(&v->sleeping))
			return false;
		m += atomic_load_explicit(&v->stats.switches, memory_order_relaxed) +
		     atomic_load_explicit(&v->sys_seq, memory_order_relaxed);
	}
	struct ult *main_t = &ppl_rt.main_ult;
	if (live(main_t) && !stuck(main_t))
		return false;
	int n = live(main_t) ? 1 : 0;
	for (struct ult *t = tcb_pool_first(); t; t = tcb_pool_next(t)) {
		if (!live(t))
			continue;
		if (!stuck(t))
			return false;
		n++;
	}
	if (n == 0 || vp_process_kthreads() != monitor_own_kthreads())
		return false;
	*mark = m;
	return true;
}

/* Append "thread N (name) waits on ..." to buf; false once it is full. */
static bool describe(char *buf, size_t size, size_t *len, struct ult *t, bool first)
{
	const char *name = t->is_main ? "main" : t->name;
	char what[64];
	struct ult *j = t->joining;
	if (j != NULL)
		snprintf(what, sizeof what, "joins thread %lu", j->id);
	else   /* the queue's lock lives in the object it belongs to */
		snprintf(what, sizeof what, "waits on the object at %p", (void *)t->wait_lock);
	int n = snprintf(buf + *len, size - *len, "%s thread %lu%s%s%s %s", first ? "" : ";", t->id,
			 name[0] ? " (" : "", name, name[0] ? ")" : "", what);
	if (n < 0 || (size_t)n >= size - *len)
		return false;
	*len += (size_t)n;
	return true;
}

void deadlock_report(void)
{
	char buf[4096];
	size_t len = 0;
	size_t room = sizeof buf - 1;   /* for the newline */
	int k = snprintf(buf, room, "libppl: deadlock: every thread is blocked and none can "
				    "wake another:");
	if (k > 0)
		len = (size_t)k;
	bool first = true;
	struct ult *main_t = &ppl_rt.main_ult;
	if (live(main_t) && describe(buf, room, &len, main_t, first))
		first = false;
	for (struct ult *t = tcb_pool_first(); t; t = tcb_pool_next(t)) {
		if (!live(t))
			continue;
		if (!describe(buf, room, &len, t, first))
			break;
		first = false;
	}
	buf[len++] = '\n';
	vp_write(2, buf, len);
	if (ppl_env_deadlock == 2)
		abort();
}
