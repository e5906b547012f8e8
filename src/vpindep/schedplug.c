/* Pluggable schedulers (Ariadne's customization layer): ppl_sched_install,
 * ppl_sched_use, PPL_SCHED, ppl_sched_setkey.
 *
 * The installed scheduler holds the ready threads of priority 0 queued on
 * their home VP or without one; the run queue (sched.c) keeps the rest
 * (real-time priorities, bound threads, threads on their way to their
 * home), goes first to its own lists
 * and asks the scheduler through three calls (plug_put, plug_take,
 * plug_remove), always holding the run-queue lock of the VP concerned.  So
 * a scheduler's per-VP state needs no lock of its own.  None installed
 * (the default, "fifo"): PPL_HOOK_SCHED is off and each hook site is one
 * never-taken branch on ppl_hooks, tested together with the seed hook.
 *
 * Built-ins keep a doubly linked list per VP (plug_head/plug_tail, linked
 * through the TCB's next and prev): lifo (work-first: the newest runs
 * next, thieves take the oldest), prio (highest key first, FIFO among
 * equals) and timestamp (lowest key first, FIFO among equals).  A
 * program's scheduler (struct ppl_sched_ops) sees VP ids and pthread_t. */
#include <string.h>

#include "pthread_impl.h"
#include "schedhooks.h"
#include "ppl.h"

struct plug {
	const char *name;
	void (*put)(struct vproc *v, struct ult *t);
	struct ult *(*next)(struct vproc *v);
	struct ult *(*steal)(struct vproc *thief, struct vproc *v);
	bool (*remove)(struct vproc *v, struct ult *t);
};

static struct plug plug;
static struct ppl_sched_ops user;   /* a program's, if installed */

/* ---- lists ------------------------------------------------------------------ */

static void link_after(struct vproc *v, struct ult *pos, struct ult *t)
{
	/* pos NULL: at the front. */
	t->prev = pos;
	t->next = pos ? pos->next : v->plug_head;
	if (t->next)
		t->next->prev = t;
	else
		v->plug_tail = t;
	if (pos)
		pos->next = t;
	else
		v->plug_head = t;
}

static void unlink_one(struct vproc *v, struct ult *t)
{
	if (t->prev)
		t->prev->next = t->next;
	else
		v->plug_head = t->next;
	if (t->next)
		t->next->prev = t->prev;
	else
		v->plug_tail = t->prev;
	t->next = t->prev = NULL;
}

static struct ult *pop_front(struct vproc *v)
{
	struct ult *t = v->plug_head;
	if (t)
		unlink_one(v, t);
	return t;
}

static bool remove_any(struct vproc *v, struct ult *t)
{
	for (struct ult *u = v->plug_head; u; u = u->next)
		if (u == t) {
			unlink_one(v, t);
			return true;
		}
	return false;
}

/* ---- built-ins -------------------------------------------------------------- */

static void lifo_put(struct vproc *v, struct ult *t)
{
	link_after(v, NULL, t);
}

/* Ordered by key, highest first (sign 1) or lowest first (-1); a new
 * thread goes after its equals.  Searched from the back: threads made
 * ready in key order cost O(1). */
static void ordered_put(struct vproc *v, struct ult *t, int sign)
{
	struct ult *pos = v->plug_tail;
	while (pos && (sign > 0 ? pos->sched_key < t->sched_key : pos->sched_key > t->sched_key))
		pos = pos->prev;
	link_after(v, pos, t);
}

static void prio_put(struct vproc *v, struct ult *t)
{
	ordered_put(v, t, 1);
}

static void stamp_put(struct vproc *v, struct ult *t)
{
	ordered_put(v, t, -1);
}

/* Thieves take only threads without a home (pinned ones stay). */
static struct ult *steal_back(struct vproc *thief, struct vproc *v)
{
	struct ult *t = v->plug_tail;
	while (t && t->home)
		t = t->prev;
	if (t)
		unlink_one(v, t);
	return t;
}

static struct ult *steal_front(struct vproc *thief, struct vproc *v)
{
	struct ult *t = v->plug_head;
	while (t && t->home)
		t = t->next;
	if (t)
		unlink_one(v, t);
	return t;
}

static const struct plug builtins[] = {
	{ "lifo", lifo_put, pop_front, steal_back, remove_any },
	{ "prio", prio_put, pop_front, steal_front, remove_any },
	{ "timestamp", stamp_put, pop_front, steal_front, remove_any },
};

/* ---- a program's up-calls --------------------------------------------------- */

static void user_put(struct vproc *v, struct ult *t)
{
	user.put(v->vp.id, (pthread_t)t);
}

static struct ult *user_next(struct vproc *v)
{
	return (struct ult *)user.next(v->vp.id);
}

static struct ult *user_steal(struct vproc *thief, struct vproc *v)
{
	return user.steal ? (struct ult *)user.steal(thief->vp.id, v->vp.id) : NULL;
}

static bool user_remove(struct vproc *v, struct ult *t)
{
	return user.remove && user.remove(v->vp.id, (pthread_t)t);
}

/* ---- the run queue's calls ------------------------------------------------------ */

bool plug_put(struct vproc *v, struct ult *t)
{
	if (t->prio != 0 || (t->home != NULL && t->home != v) || v->dedicated)
		return false;
	t->plug_queued = true;
	v->plug_len++;
	plug.put(v, t);
	return true;
}

/* v's owner asked and got none while v holds some: a scheduler that keeps
 * doing so would leave them ready for ever. */
static void got_none(struct vproc *v)
{
	int64_t now = clock_coarse_ns();
	if (v->plug_null_since == 0)
		v->plug_null_since = now;
	else if (now - v->plug_null_since > 1000000000)
		ppl_fatal("scheduler '%s': next(%d) returned no thread for 1 s while %ld are ready there",
			  plug.name, v->vp.id, v->plug_len);
}

struct ult *plug_take(struct vproc *v, struct vproc *thief)
{
	if (v->plug_len == 0)
		return NULL;
	struct ult *t = thief ? plug.steal(thief, v) : plug.next(v);
	if (t == NULL) {
		if (thief == NULL)
			got_none(v);
		return NULL;
	}
	if (ult_stale(t) || !t->plug_queued || t->queued_on != v ||
	    atomic_load_explicit(&t->state, memory_order_relaxed) != ULT_READY ||
	    (thief && t->home != NULL))
		ppl_fatal("scheduler '%s': %s(%d) returned thread %lu, which is not ready there",
			  plug.name, thief ? "steal" : "next", v->vp.id, ult_stale(t) ? 0 : t->id);
	t->plug_queued = false;
	t->next = t->prev = NULL;
	v->plug_len--;
	v->plug_null_since = 0;
	return t;
}

bool plug_remove(struct vproc *v, struct ult *t)
{
	if (!t->plug_queued || t->queued_on != v || !plug.remove(v, t))
		return false;
	t->plug_queued = false;
	t->next = t->prev = NULL;
	v->plug_len--;
	return true;
}

void plug_blocked(struct ult *t)
{
	if (user.blocked)
		user.blocked((pthread_t)t);
}

void plug_exited(struct ult *t)
{
	if (user.exited)
		user.exited((pthread_t)t);
}

/* ---- selecting ------------------------------------------------------------------- */

/* Installing changes ppl_hooks, which hook sites read without ordering:
 * only before the runtime starts, while the process runs one thread. */
static int installable(void)
{
	if (atomic_load_explicit(&ppl_rt.started, memory_order_acquire) ||
	    ppl_hook_on(PPL_HOOK_SCHED | PPL_HOOK_SEED))
		return EBUSY;
	return 0;
}

int plug_select(const char *name)
{
	if (strcmp(name, "fifo") == 0)
		return 0;
	for (size_t i = 0; i < sizeof builtins / sizeof *builtins; i++)
		if (strcmp(name, builtins[i].name) == 0) {
			plug = builtins[i];
			ppl_hooks |= PPL_HOOK_SCHED;
			return 0;
		}
	return -1;
}

PPL_API int ppl_sched_use(const char *name)
{
	if (name == NULL)
		return EINVAL;
	int err = installable();
	if (err)
		return err;
	return plug_select(name) == 0 ? 0 : EINVAL;
}

PPL_API int ppl_sched_install(const struct ppl_sched_ops *ops)
{
	if (ops == NULL || ops->put == NULL || ops->next == NULL)
		return EINVAL;
	int err = installable();
	if (err)
		return err;
	user = *ops;
	plug = (struct plug){ ops->name ? ops->name : "custom", user_put, user_next, user_steal,
			      user_remove };
	ppl_hooks |= PPL_HOOK_SCHED;
	return 0;
}

const char *ppl_sched_name_hidden(void)
{
	return ppl_hook_on(PPL_HOOK_SCHED) ? plug.name : "fifo";
}

PPL_API const char *ppl_sched_name(void)
{
	return ppl_sched_name_hidden();
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
