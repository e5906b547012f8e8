/* Moving threads between VPs (ppl.h): ppl_migrate, ppl_pin, ppl_unpin,
 * ppl_pinned (Xthreads' xthread_migrate).
 *
 * A thread's placement is its `home` (the VP it must run on, or NULL), the
 * one field the scheduler reads (sched.c: sched_push and requeue queue a
 * thread with a home there, thieves leave it alone).  Three things set it,
 * under the TCB's lock, in this order of precedence:
 *  - ppl_pin: `pin`, until ppl_unpin;
 *  - ppl_migrate of an unpinned thread: the destination, once: when the
 *    thread resumes there (sched_migrate_arrived, from the switch) its home
 *    goes back to what its affinity says, and it may be stolen again;
 *  - pthread_setaffinity_np: `aff_home` (schedparam.c picks the VP for a
 *    CPU set; sched_affinity_home is the whole hook).
 * A ready thread whose home changes is queued again on its new home at once
 * (sched_rehome); a parked one goes there when it is woken; one running
 * elsewhere at its next switch (a yield, a park, a preemption tick); the
 * caller itself moves before the call returns.
 *
 * A pin to a set of VPs (ppl_pin_set) keeps `pin` as the VP of the set the
 * thread is kept on now (its home, where it is queued when made ready) and
 * the set in pin_vps: thieves of the set may take it (ult_may_run), and a
 * thread that yields on a VP of its set adopts that VP as its home there
 * (sched_home_here) instead of going back, so the usual path never looks
 * at the set. */
#include <stdlib.h>
#include <string.h>

#include "pthread_impl.h"
#include "ppl.h"

_Static_assert(PPL_PIN_WORDS * sizeof(unsigned long) == sizeof(ppl_vpset_t),
	       "ult.h's pin_vps is a ppl_vpset_t");
_Static_assert(PPL_VPSET_SIZE >= PPL_MAX_VPS, "a VP set holds every VP id");

/* t's home from its pin and affinity (caller holds t->lock). */
static void settle(struct ult *t)
{
	t->home = t->pin ? t->pin : t->aff_home;
}

void sched_affinity_home(struct ult *t, struct vproc *vp)
{
	spin_lock(&t->lock);
	t->aff_home = vp;
	if (!t->migrating)
		settle(t);
	spin_unlock(&t->lock);
	if (t != ult_self_peek())
		sched_rehome(t);
}

void sched_migrate_arrived(struct ult *self)
{
	struct vp *v = vp_current();
	spin_lock(&self->lock);
	/* Not there yet: its VP's owner took it off its old queue before
	 * ppl_migrate could.  It goes at its next switch. */
	if (self->migrating && self->home != NULL && &self->home->vp == v) {
		self->migrating = false;
		settle(self);
	}
	spin_unlock(&self->lock);
}

/* The VP numbered vp that may take threads, or NULL. */
static struct vproc *target(int vp)
{
	if (!atomic_load_explicit(&ppl_rt.started, memory_order_acquire) || vp < 0 ||
	    vp >= ppl_rt.nvps)
		return NULL;
	struct vproc *v = ppl_rt.vps[vp];
	if (v == NULL || v->vp.id != vp || v->dedicated || v->spare || atomic_load(&v->retired))
		return NULL;
	return v;
}

/* 0 if t may be placed: ESRCH if it has ended, EPERM if it cannot leave
 * its kernel thread (a bound thread, a foreign one, the main thread with
 * TLS shared per VP: docs/tls.md). */
static int movable(struct ult *t)
{
	if (ult_stale(t))
		return ESRCH;
	int s = atomic_load_explicit(&t->state, memory_order_acquire);
	if (s == ULT_EXITING || s == ULT_ZOMBIE)
		return ESRCH;
	if (t->foreign || t->bound || (t->is_main && !tls_per_thread))
		return EPERM;
	return 0;
}

static bool elsewhere(struct ult *self)
{
	struct vproc *h = self->home;
	return h != NULL && &h->vp != vp_current();
}

/* The caller goes where its placement says: yield_min moves a thread whose
 * home is elsewhere.  If another thread migrates it meanwhile, the last
 * call wins; a migrated thread stops at the first VP it arrives on (then
 * it is free, or kept to its affinity's VP from its next switch on). */
static void move_self(struct ult *self)
{
	if (!self->migrating) {
		while (elsewhere(self))
			sched_yield_ult();
		return;
	}
	while (self->migrating) {
		if (elsewhere(self))
			sched_yield_ult();   /* sched_migrate_arrived runs as it resumes */
		else
			sched_migrate_arrived(self);   /* here already: no switch says so */
	}
}

/* t's pin changed: another thread is requeued where it may run, the
 * caller moves now. */
static void move_to_pin(struct ult *t)
{
	if (t != ult_self_peek())
		sched_rehome(t);
	else
		move_self(t);
}

/* Sets t's placement (pin: ppl_pin; else ppl_migrate) and moves it. */
static int place(pthread_t th, int vp, bool pin)
{
	struct ult *t = (struct ult *)th;
	if (ult_stale(t))
		return ESRCH;
	/* Before start-up the initial thread is not a user thread yet: no VP. */
	struct vproc *v = target(vp);
	if (v == NULL)
		return EINVAL;
	int err = movable(t);
	if (err)
		return err;
	struct ult *self = ult_self_peek();
	spin_lock(&t->lock);
	if (pin || t->pin) {
		/* A pinned thread that migrates stays pinned: to its set if vp
		 * is in it, else to its new VP alone. */
		bool in_set = !pin && t->pin_set &&
			      ppl_vpset_has((const ppl_vpset_t *)t->pin_vps, vp);
		if (!in_set)
			t->pin_set = false;
		t->pin = v;
		/* In its set: a migration, which thieves of the set leave
		 * alone until it has arrived (then v is its home there). */
		t->migrating = in_set && !(t == self && self->vp == v);
		settle(t);
	} else if (t == self && self->vp == v) {
		/* Already there: nothing to wait for. */
	} else {
		t->home = v;
		t->migrating = true;
	}
	spin_unlock(&t->lock);
	if (t != self) {
		sched_rehome(t);
		return 0;
	}
	move_self(self);
	return 0;
}

PPL_API int ppl_migrate(pthread_t th, int vp)
{
	return place(th, vp, false);
}

PPL_API int ppl_pin(pthread_t th, int vp)
{
	return place(th, vp, true);
}

PPL_API int ppl_unpin(pthread_t th)
{
	struct ult *t = (struct ult *)th;
	int err = movable(t);
	if (err)
		return err;
	spin_lock(&t->lock);
	t->pin = NULL;
	if (!t->migrating)
		settle(t);
	spin_unlock(&t->lock);
	move_to_pin(t);
	return 0;
}

/* ppl_pin_set's VP for t among the n VPs of set that take threads: where
 * it is (or runs) now if that is one, else the one with the shortest
 * queue; NULL if none. */
static struct vproc *set_pick(struct ult *t, const ppl_vpset_t *set, int *n)
{
	struct vproc *now = t == ult_self_peek() ? (struct vproc *)vp_current() : t->vp;
	struct vproc *best = NULL;
	*n = 0;
	for (int i = 0; i < ppl_rt.nvps && i < PPL_VPSET_SIZE; i++) {
		struct vproc *v = ppl_vpset_has(set, i) ? target(i) : NULL;
		if (v == NULL)
			continue;
		++*n;
		if (best != now && (best == NULL || v == now ||
				    atomic_load_explicit(&v->rq_len, memory_order_relaxed) <
				    atomic_load_explicit(&best->rq_len, memory_order_relaxed)))
			best = v;
	}
	return best;
}

PPL_API int ppl_pin_set(pthread_t th, const ppl_vpset_t *set)
{
	struct ult *t = (struct ult *)th;
	if (ult_stale(t))
		return ESRCH;
	if (set == NULL)
		return EINVAL;
	int n;
	struct vproc *v = set_pick(t, set, &n);
	if (v == NULL)
		return EINVAL;
	int err = movable(t);
	if (err)
		return err;
	/* The TCB's set, made once (outside its lock) and kept with it. */
	unsigned long *fresh = NULL;
	if (__atomic_load_n(&t->pin_vps, __ATOMIC_ACQUIRE) == NULL &&
	    (fresh = malloc(sizeof(ppl_vpset_t))) == NULL)
		return ENOMEM;
	spin_lock(&t->lock);
	if (t->pin_vps == NULL) {
		__atomic_store_n(&t->pin_vps, fresh, __ATOMIC_RELEASE);
		fresh = NULL;
	}
	memcpy(t->pin_vps, set, sizeof(ppl_vpset_t));
	t->pin_set = n > 1;
	t->pin = v;
	t->migrating = false;
	settle(t);
	spin_unlock(&t->lock);
	free(fresh);   /* another ppl_pin_set made it first */
	move_to_pin(t);
	return 0;
}

PPL_API int ppl_pinned_set(pthread_t th, ppl_vpset_t *set)
{
	struct ult *t = (struct ult *)th;
	if (ult_stale(t))
		return ESRCH;
	if (set == NULL)
		return EINVAL;
	spin_lock(&t->lock);
	struct vproc *p = t->pin;
	if (p && t->pin_set)
		memcpy(set, t->pin_vps, sizeof *set);
	else
		ppl_vpset_zero(set);
	if (p && !t->pin_set)
		ppl_vpset_add(set, p->vp.id);
	spin_unlock(&t->lock);
	return 0;
}

bool sched_home_here(struct ult *self, struct vproc *v)
{
	if (self->pin == NULL || !self->pin_set)
		return false;
	bool here = false;
	spin_lock(&self->lock);
	if (self->pin != NULL && self->pin_set && !self->migrating &&
	    ppl_vpset_has((const ppl_vpset_t *)self->pin_vps, v->vp.id)) {
		self->pin = v;
		settle(self);
		here = true;
	}
	spin_unlock(&self->lock);
	return here;
}

PPL_API int ppl_pinned(pthread_t th)
{
	struct ult *t = (struct ult *)th;
	if (ult_stale(t))
		return -ESRCH;
	struct vproc *v = t->pin;
	return v ? v->vp.id : -1;
}
