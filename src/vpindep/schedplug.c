/* Pluggable schedulers (Ariadne's customization layer): ppl_sched_install,
 * ppl_sched_use, PPL_SCHED, their per-group forms ppl_sched_install_vps and
 * ppl_sched_use_vps, and ppl_sched_setkey.
 *
 * A scheduler serves a group of VPs: the ones a _vps call named, or all the
 * others (the default group, ppl_sched_use/ppl_sched_install; none: the
 * FIFO run queues).  It holds the ready threads of priority 0 queued on a
 * VP of its group, there or without a home; the run queue (sched.c) keeps
 * the rest (real-time priorities, bound threads, threads on their way to
 * their home), goes first to its own lists and asks the scheduler through
 * plug_put, plug_take and plug_remove, always holding the run-queue lock of
 * the VP concerned.  Idle VPs steal within their group only (runq.c's
 * steal), so a thread changes groups only where it is made ready: the
 * waker's VP, or its home (ppl_migrate, ppl_pin, ppl_pin_set); it keeps
 * its key.  None installed (the default, "fifo" everywhere):
 * PPL_HOOK_SCHED is off and each hook site is one never-taken branch on
 * ppl_hooks, tested together with the seed hook.
 *
 * The built-ins: lifo keeps a list per VP (plug_head/plug_tail, linked
 * through the TCB's next and prev, under the VP's rq_lock): the newest runs
 * next, thieves take the oldest.  prio (highest key first) and timestamp
 * (lowest first), FIFO among equal keys, keep one list for the whole group
 * under the group's lock (taken inside a run-queue lock, innermost), so the
 * order is global: a VP takes the best thread of the group that may run
 * on it, wherever it was queued.  A thread queued on VP u and taken by VP
 * v still counts in u's rq_len, which only u's lock holder may write: v
 * notes it in u's plug_debt, and u's next scheduler call subtracts it
 * (meanwhile u's length is a hint too high, which costs a look).  A
 * program's scheduler (struct ppl_sched_ops) sees VP ids and pthread_t,
 * per VP. */
#include <string.h>

#include "pthread_impl.h"
#include "runq.h"
#include "schedhooks.h"
#include "ppl.h"

#define GROUPS 8   /* schedulers installed at once, the default's included */

struct plug {
	const char *name;
	/* NULL: the FIFO run queues (a group named "fifo"). */
	void (*put)(struct plug *g, struct vproc *v, struct ult *t);
	struct ult *(*next)(struct plug *g, struct vproc *v);
	struct ult *(*steal)(struct plug *g, struct vproc *thief, struct vproc *v);
	bool (*remove)(struct plug *g, struct vproc *v, struct ult *t);
	int order;                 /* global order: 1 highest key first, -1 lowest;
				    * 0: per VP */
	spin_t lock;               /* the group's list (global order) */
	struct ult *head, *tail;
	_Atomic long len;
	struct ppl_sched_ops user; /* a program's, if installed */
};

static struct plug groups[GROUPS];
static int ngroups PPL_FORK_STATE;   /* read by fork's child handler (mutex_prio.c's holders) */
static struct plug *group_of[PPL_MAX_VPS];   /* a _vps call's, by VP id */
static struct plug *dflt;                    /* the other VPs' (NULL: FIFO) */

static struct plug *plug_of(const struct vproc *v)
{
	struct plug *g = group_of[v->vp.id];
	return g ? g : dflt;
}

bool plug_same_group(struct vproc *a, struct vproc *b)
{
	return plug_of(a) == plug_of(b);
}

/* ---- lists ------------------------------------------------------------------ */

struct list {
	struct ult **head, **tail;
};

static struct list vp_list(struct vproc *v)
{
	return (struct list){ &v->plug_head, &v->plug_tail };
}

static struct list group_list(struct plug *g)
{
	return (struct list){ &g->head, &g->tail };
}

static void link_after(struct list l, struct ult *pos, struct ult *t)
{
	/* pos NULL: at the front. */
	t->prev = pos;
	t->next = pos ? pos->next : *l.head;
	if (t->next)
		t->next->prev = t;
	else
		*l.tail = t;
	if (pos)
		pos->next = t;
	else
		*l.head = t;
}

static void unlink_one(struct list l, struct ult *t)
{
	if (t->prev)
		t->prev->next = t->next;
	else
		*l.head = t->next;
	if (t->next)
		t->next->prev = t->prev;
	else
		*l.tail = t->prev;
	t->next = t->prev = NULL;
}

static bool remove_from(struct list l, struct ult *t)
{
	for (struct ult *u = *l.head; u; u = u->next)
		if (u == t) {
			unlink_one(l, t);
			return true;
		}
	return false;
}

/* Ordered by key, highest first (order 1) or lowest first (-1); a new
 * thread goes after its equals.  Searched from the back: threads made
 * ready in key order cost O(1). */
static void ordered_put(struct list l, struct ult *t, int order)
{
	struct ult *pos = *l.tail;
	while (pos && (order > 0 ? pos->sched_key < t->sched_key : pos->sched_key > t->sched_key))
		pos = pos->prev;
	link_after(l, pos, t);
}

/* ---- lifo: per VP ---------------------------------------------------------- */

static void lifo_put(struct plug *g, struct vproc *v, struct ult *t)
{
	(void)g;
	link_after(vp_list(v), NULL, t);
}

static struct ult *lifo_next(struct plug *g, struct vproc *v)
{
	(void)g;
	struct ult *t = v->plug_head;
	if (t)
		unlink_one(vp_list(v), t);
	return t;
}

/* Thieves take the oldest that may run on them. */
static struct ult *lifo_steal(struct plug *g, struct vproc *thief, struct vproc *v)
{
	(void)g;
	struct ult *t = v->plug_tail;
	while (t && !ult_may_run(t, thief))
		t = t->prev;
	if (t)
		unlink_one(vp_list(v), t);
	return t;
}

static bool lifo_remove(struct plug *g, struct vproc *v, struct ult *t)
{
	(void)g;
	return remove_from(vp_list(v), t);
}

/* ---- prio, timestamp: one list per group ------------------------------------- */

static void global_put(struct plug *g, struct vproc *v, struct ult *t)
{
	(void)v;
	spin_lock(&g->lock);
	ordered_put(group_list(g), t, g->order);
	atomic_store_explicit(&g->len, g->len + 1, memory_order_relaxed);
	spin_unlock(&g->lock);
}

/* The group's best thread that may run on `runner`, taken out.  A retired
 * VP hands its queue on (idle.c's retire): it takes only threads queued on
 * it, or it would pass the group's best around for ever. */
static struct ult *global_take(struct plug *g, struct vproc *runner)
{
	if (atomic_load_explicit(&g->len, memory_order_relaxed) == 0)
		return NULL;
	bool retired = atomic_load_explicit(&runner->retired, memory_order_relaxed);
	spin_lock(&g->lock);
	struct ult *t = g->head;
	while (t && (retired ? t->queued_on != runner : !ult_may_run(t, runner)))
		t = t->next;
	if (t) {
		unlink_one(group_list(g), t);
		atomic_store_explicit(&g->len, g->len - 1, memory_order_relaxed);
	}
	spin_unlock(&g->lock);
	return t;
}

static struct ult *global_next(struct plug *g, struct vproc *v)
{
	return global_take(g, v);
}

static struct ult *global_steal(struct plug *g, struct vproc *thief, struct vproc *v)
{
	(void)v;
	return global_take(g, thief);
}

static bool global_remove(struct plug *g, struct vproc *v, struct ult *t)
{
	(void)v;
	spin_lock(&g->lock);
	bool found = remove_from(group_list(g), t);
	if (found)
		atomic_store_explicit(&g->len, g->len - 1, memory_order_relaxed);
	spin_unlock(&g->lock);
	return found;
}

static const struct plug builtins[] = {
	{ .name = "fifo" },
	{ .name = "lifo", .put = lifo_put, .next = lifo_next, .steal = lifo_steal,
	  .remove = lifo_remove },
	{ .name = "prio", .put = global_put, .next = global_next, .steal = global_steal,
	  .remove = global_remove, .order = 1 },
	{ .name = "timestamp", .put = global_put, .next = global_next, .steal = global_steal,
	  .remove = global_remove, .order = -1 },
};

/* ---- a program's up-calls --------------------------------------------------- */

static void user_put(struct plug *g, struct vproc *v, struct ult *t)
{
	g->user.put(v->vp.id, (pthread_t)t);
}

static struct ult *user_next(struct plug *g, struct vproc *v)
{
	return (struct ult *)g->user.next(v->vp.id);
}

static struct ult *user_steal(struct plug *g, struct vproc *thief, struct vproc *v)
{
	return g->user.steal ? (struct ult *)g->user.steal(thief->vp.id, v->vp.id) : NULL;
}

static bool user_remove(struct plug *g, struct vproc *v, struct ult *t)
{
	return g->user.remove && g->user.remove(v->vp.id, (pthread_t)t);
}

/* ---- the run queue's calls ------------------------------------------------------ */

/* Threads of v that other VPs of its group took: out of rq_len now (v's
 * lock held). */
static void settle_debt(struct vproc *v)
{
	long d = atomic_load_explicit(&v->plug_debt, memory_order_relaxed);
	if (d != 0) {
		atomic_fetch_sub_explicit(&v->plug_debt, d, memory_order_relaxed);
		rq_len_add(v, -d);
	}
}

bool plug_put(struct vproc *v, struct ult *t)
{
	struct plug *g = plug_of(v);
	if (g == NULL || g->put == NULL || t->prio != 0 || (t->home != NULL && t->home != v) ||
	    v->dedicated)
		return false;
	/* The group's list is seen by its other VPs without v's lock: the
	 * thread v still runs (queued before it switches out, visible once
	 * v's lock goes: sched_prio_changed's yield) stays on v's own list. */
	if (g->order != 0 && t == v->current)
		return false;
	settle_debt(v);
	t->plug_queued = true;
	if (g->order == 0)
		v->plug_len++;
	g->put(g, v, t);
	return true;
}

/* v's owner asked and got none while v holds some: a scheduler that keeps
 * doing so would leave them ready for ever. */
static void got_none(struct plug *g, struct vproc *v)
{
	int64_t now = clock_coarse_ns();
	if (v->plug_null_since == 0)
		v->plug_null_since = now;
	else if (now - v->plug_null_since > 1000000000)
		ppl_fatal("scheduler '%s': next(%d) returned no thread for 1 s while %ld are ready there",
			  g->name, v->vp.id, v->plug_len);
}

/* A thread of the group's list, taken by v (lock held) for itself or for
 * a thief: if it was queued on another VP u, it leaves u's rq_len through
 * u's debt, and v's, which the caller lowers, is raised first. */
static struct ult *took_global(struct vproc *v, struct ult *t)
{
	t->plug_queued = false;
	struct vproc *u = t->queued_on;
	if (u != v) {
		rq_len_add(v, 1);
		atomic_fetch_add_explicit(&u->plug_debt, 1, memory_order_relaxed);
	}
	return t;
}

struct ult *plug_take(struct vproc *v, struct vproc *thief)
{
	struct plug *g = plug_of(v);
	/* A bound thread's VP runs its thread only (and the group's list
	 * would give it any). */
	if (g == NULL || g->put == NULL || v->dedicated || (thief && plug_of(thief) != g))
		return NULL;
	settle_debt(v);
	if (g->order != 0) {
		struct ult *t = thief ? g->steal(g, thief, v) : g->next(g, v);
		return t ? took_global(v, t) : NULL;
	}
	if (v->plug_len == 0)
		return NULL;
	struct ult *t = thief ? g->steal(g, thief, v) : g->next(g, v);
	if (t == NULL) {
		if (thief == NULL)
			got_none(g, v);
		return NULL;
	}
	if (ult_stale(t) || !t->plug_queued || t->queued_on != v ||
	    atomic_load_explicit(&t->state, memory_order_relaxed) != ULT_READY ||
	    (thief && !ult_may_run(t, thief)))
		ppl_fatal("scheduler '%s': %s(%d) returned thread %lu, which is not ready there",
			  g->name, thief ? "steal" : "next", v->vp.id, ult_stale(t) ? 0 : t->id);
	t->plug_queued = false;
	t->next = t->prev = NULL;
	v->plug_len--;
	v->plug_null_since = 0;
	return t;
}

bool plug_ordered(struct vproc *v)
{
	struct plug *g = plug_of(v);
	return g != NULL && g->order != 0;
}

/* self yields on v (lock held), in a group of one order: the group's best
 * thread that may run on v, taken, if it is not worse than self (an equal
 * goes first); NULL: self runs on.  self is not queued meanwhile (other
 * VPs would see it running): the caller queues it once switched out. */
struct ult *plug_take_before(struct vproc *v, struct ult *self)
{
	struct plug *g = plug_of(v);
	settle_debt(v);
	if (atomic_load_explicit(&g->len, memory_order_relaxed) == 0)
		return NULL;
	spin_lock(&g->lock);
	struct ult *t = g->head;
	while (t && !ult_may_run(t, v))
		t = t->next;
	if (t && (g->order > 0 ? t->sched_key < self->sched_key : t->sched_key > self->sched_key))
		t = NULL;
	if (t) {
		unlink_one(group_list(g), t);
		atomic_store_explicit(&g->len, g->len - 1, memory_order_relaxed);
	}
	spin_unlock(&g->lock);
	return t ? took_global(v, t) : NULL;
}

bool plug_remove(struct vproc *v, struct ult *t)
{
	struct plug *g = plug_of(v);
	if (g == NULL || g->put == NULL || !t->plug_queued || t->queued_on != v || !g->remove(g, v, t))
		return false;
	t->plug_queued = false;
	t->next = t->prev = NULL;
	if (g->order == 0)
		v->plug_len--;
	return true;
}

/* blocked and exited go to every program's table (a thread may have been
 * in any group). */
void plug_blocked(struct ult *t)
{
	for (int i = 0; i < ngroups; i++)
		if (groups[i].user.blocked)
			groups[i].user.blocked((pthread_t)t);
}

void plug_exited(struct ult *t)
{
	for (int i = 0; i < ngroups; i++)
		if (groups[i].user.exited)
			groups[i].user.exited((pthread_t)t);
}

/* The forked child's threads are the forking one only: empty group lists. */
void plug_fork_child(void)
{
	for (int i = 0; i < ngroups; i++) {
		spin_reset(&groups[i].lock);
		PPL_RESET(groups[i].head, NULL);
		PPL_RESET(groups[i].tail, NULL);
		if (atomic_load_explicit(&groups[i].len, memory_order_relaxed) != 0)
			atomic_store_explicit(&groups[i].len, 0, memory_order_relaxed);
	}
}

/* ---- selecting ------------------------------------------------------------------- */

/* Installing changes ppl_hooks, which hook sites read without ordering:
 * only before the runtime starts, while the process runs one thread. */
static int installable(void)
{
	if (atomic_load_explicit(&ppl_rt.started, memory_order_acquire) ||
	    ppl_hook_on(PPL_HOOK_SEED))
		return EBUSY;
	return 0;
}

static const struct plug *builtin(const char *name)
{
	for (size_t i = 0; i < sizeof builtins / sizeof *builtins; i++)
		if (strcmp(name, builtins[i].name) == 0)
			return &builtins[i];
	return NULL;
}

/* Installs *p for the VPs of vps (NULL: the default group): 0, EBUSY (a
 * VP of vps, or the default, has one), EAGAIN (GROUPS in use). */
static int install(const struct plug *p, const ppl_vpset_t *vps)
{
	if (vps == NULL && dflt != NULL)
		return EBUSY;
	/* "fifo" for the default group: nothing to install. */
	if (vps == NULL && p->put == NULL)
		return 0;
	if (vps != NULL)
		for (int i = 0; i < PPL_MAX_VPS; i++)
			if (ppl_vpset_has(vps, i) && group_of[i] != NULL)
				return EBUSY;
	if (ngroups == GROUPS)
		return EAGAIN;
	struct plug *g = &groups[ngroups++];
	*g = *p;
	spin_init(&g->lock);
	if (vps == NULL)
		dflt = g;
	else
		for (int i = 0; i < PPL_MAX_VPS; i++)
			if (ppl_vpset_has(vps, i))
				group_of[i] = g;
	/* Only a real scheduler turns the hooks on: "fifo" everywhere is the
	 * default path. */
	if (g->put != NULL)
		ppl_hooks |= PPL_HOOK_SCHED;
	return 0;
}

int plug_select(const char *name)
{
	const struct plug *p = builtin(name);
	if (p == NULL)
		return -1;
	return install(p, NULL) == 0 ? 0 : -1;
}

static int use(const char *name, const ppl_vpset_t *vps)
{
	if (name == NULL || (vps != NULL && ppl_vpset_count(vps) == 0))
		return EINVAL;
	int err = installable();
	if (err)
		return err;
	const struct plug *p = builtin(name);
	return p ? install(p, vps) : EINVAL;
}

static int install_ops(const struct ppl_sched_ops *ops, const ppl_vpset_t *vps)
{
	if (ops == NULL || ops->put == NULL || ops->next == NULL ||
	    (vps != NULL && ppl_vpset_count(vps) == 0))
		return EINVAL;
	int err = installable();
	if (err)
		return err;
	struct plug p = { .name = ops->name ? ops->name : "custom", .put = user_put,
			  .next = user_next, .steal = user_steal, .remove = user_remove,
			  .user = *ops };
	return install(&p, vps);
}

PPL_API int ppl_sched_use(const char *name)
{
	return use(name, NULL);
}

PPL_API int ppl_sched_use_vps(const char *name, const ppl_vpset_t *vps)
{
	return vps == NULL ? EINVAL : use(name, vps);
}

PPL_API int ppl_sched_install(const struct ppl_sched_ops *ops)
{
	return install_ops(ops, NULL);
}

PPL_API int ppl_sched_install_vps(const struct ppl_sched_ops *ops, const ppl_vpset_t *vps)
{
	return vps == NULL ? EINVAL : install_ops(ops, vps);
}

const char *ppl_sched_name_hidden(void)
{
	return dflt ? dflt->name : "fifo";
}

PPL_API const char *ppl_sched_name(void)
{
	return ppl_sched_name_hidden();
}

PPL_API const char *ppl_sched_name_vp(int vp)
{
	if (vp < 0 || vp >= PPL_MAX_VPS)
		return NULL;
	struct plug *g = group_of[vp] ? group_of[vp] : dflt;
	return g ? g->name : "fifo";
}

PPL_API int ppl_sched_allowed(pthread_t th, int vp)
{
	struct ult *t = (struct ult *)th;
	if (ult_stale(t) || vp < 0 || vp >= ppl_rt.nvps_total || ppl_rt.vps[vp] == NULL)
		return 0;
	return ult_may_run(t, ppl_rt.vps[vp]);
}

PPL_API int ppl_sched_setkey(pthread_t th, long long key)
{
	struct ult *t = (struct ult *)th;
	if (ult_stale(t))
		return ESRCH;
	t->sched_key = key;
	/* Ready: queued again, in its new place. */
	if (ppl_hook_on(PPL_HOOK_SCHED) && t != ult_self_peek())
		sched_rehome(t);
	return 0;
}

PPL_API int ppl_sched_getkey(pthread_t th, long long *key)
{
	struct ult *t = (struct ult *)th;
	if (ult_stale(t) || key == NULL)
		return ult_stale(t) ? ESRCH : EINVAL;
	*key = t->sched_key;
	return 0;
}

PPL_API pthread_t *ppl_sched_links(pthread_t th)
{
	return (pthread_t *)&((struct ult *)th)->next;
}
