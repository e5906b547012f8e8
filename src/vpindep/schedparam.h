/* Scheduling policies and priorities (schedparam.c), and the kernel
 * class a thread gives its VP. */
#ifndef PPL_SCHEDPARAM_H
#define PPL_SCHEDPARAM_H

#include "base.h"
#include "ult.h"
#include "vproc.h"

/* The class (VP_CLASS) a VP's kernel thread takes while t runs there. */
static inline int ult_kclass(const struct ult *t)
{
	return t->kclass;
}
/* What ult_kclass gives, computed whenever t's policy, priority or boost
 * changes (ult_set_sched, mutex_prio.c): a thread boosted by a PI or PP
 * mutex is real-time at that priority. */
static inline void ult_update_kclass(struct ult *t)
{
	int k;
	if (ppl_unlikely(t->prio > t->sched_param.sched_priority))
		k = VP_CLASS(t->sched_policy == SCHED_RR ? SCHED_RR : SCHED_FIFO, t->prio);
	else
		k = VP_CLASS(t->sched_policy, t->sched_param.sched_priority);
	if (t->kclass != k) {
		t->kclass = k;
		vp_kstate_changed();
	}
}
/* Give v's kernel thread the class of t, which runs there: a compare, and
 * one system call only when they differ (vp_set_class). */
static inline void sched_class_sync(const struct ult *t, struct vproc *v)
{
	int c = ult_kclass(t);
	if (ppl_unlikely(c != vp_kclass(&v->vp)))
		vp_set_class(&v->vp, c);
}
/* schedparam.c: t, real-time, is queued on v to run there next: raise
 * v's kernel thread to t's class if it ranks lower, so that the kernel
 * gives it a CPU that a lower real-time kernel thread holds. */
void sched_class_raise(struct vproc *v, const struct ult *t);

/* The initial thread's policy and priority, from its kernel thread (schedparam.c). */
void sched_params_init(struct ult *m);
/* affinity.c: the process's CPUs, read at start-up; what a new VP's
 * kernel thread has (NULL: the process's; or not known, once a thread
 * narrowed its set); a new thread's set, its creator's. */
void affinity_init(void);
const struct cpus *affinity_vp_initial(void);
void affinity_inherit(struct ult *t, const struct ult *creator);

/* The kernel thread t has to itself (bound, foreign), or 0 (schedparam.c). */
int own_kthread(struct ult *t);

/* Whether a thread may take this policy and priority: 0, EINVAL (no such
 * policy, a priority out of its range) or EPERM, as the kernel (schedparam.c). */
int sched_check(int policy, const struct sched_param *p);
/* The priority the scheduler orders t by (struct ult's prio). */
static inline int sched_prio_of(int policy, const struct sched_param *p)
{
	return policy == SCHED_FIFO || policy == SCHED_RR ? p->sched_priority : 0;
}
/* Set t's policy and priority, and the priority the scheduler goes by. */
static inline void ult_set_sched(struct ult *t, int policy, const struct sched_param *p)
{
	t->sched_policy = policy;
	t->sched_param = *p;
	t->prio = sched_prio_of(policy, p);
	ult_update_kclass(t);
}

#endif
