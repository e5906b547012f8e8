/* The raw set_robust_list and get_robust_list of a user thread
 * (src/preload/syscall.c).  The kernel keeps one robust-list head per
 * kernel thread and walks it when that kernel thread dies.  A user thread
 * scheduled M:N shares its VP's kernel thread with others, and the initial
 * kernel thread's head is libppl's own list (mutex_robust.c), so a user
 * thread's head is its own: by default glibc's in its TLS block, the
 * one NPTL registers for each thread (NULL with shared TLS, where glibc's
 * is the VP's); one set by raw system call is kept beside it.  When the
 * thread ends, its list is walked as the kernel's exit_robust_list does.  stress-ng's pthread stressor reads its head, sets
 * one on its stack and sets the old one back: on the VP's kernel thread the
 * next thread read the first one's stack, gone by then (SIGSEGV). */
#include <errno.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "glibcabi.h"
#include "mutex_robust.h"
#include "parklot.h"
#include "scheduler.h"
#include "thread.h"
#include "ult.h"
#include "vpindep.h"

#define ROBUST_LIST_LIMIT 2048   /* the kernel's bound on entries walked */

/* Heads set by raw system call (few threads, for a while: stress-ng sets
 * one and then glibc's back), kept beside the TCBs, which have no room
 * left; a thread with one has robust_own set. */
struct own_head {
	struct ult *t;
	void *head;
	struct own_head *next;
};
static spin_t heads_lock;
static struct own_head *heads;

/* Whether thread t's head is the kernel's to keep: a kernel thread libppl
 * did not make, other than the initial one, whose head is libppl's list
 * (mutex_robust.c) even before the main thread is a user thread. */
static bool kernels(const struct ult *t)
{
	return t->foreign && !t->is_main;
}

/* glibc's head in thread t's block (the running thread's block is the one
 * in place: the main thread's context records it only once it switches). */
static void *glibc_head(struct ult *t)
{
	return tls_robust_head(t == ult_self() ? ctx_tls_self() : t->ctx.tls);
}

/* Thread t's entry, under heads_lock. */
static struct own_head **entry_of(struct ult *t)
{
	struct own_head **p = &heads;
	while (*p != NULL && (*p)->t != t)
		p = &(*p)->next;
	return p;
}

/* Thread t's entry, unlinked (NULL: none). */
static struct own_head *take(struct ult *t)
{
	spin_lock(&heads_lock);
	struct own_head **p = entry_of(t), *e = *p;
	if (e != NULL)
		*p = e->next;
	t->robust_own = false;
	spin_unlock(&heads_lock);
	return e;
}

int ppl_robust_list_set(void *head, size_t len)
{
	struct ult *self = ult_self();
	if (kernels(self))
		return -1;
	if (len != sizeof(struct robust_list_head))
		return EINVAL;
	if (head == glibc_head(self)) {
		free(take(self));
		return 0;
	}
	/* Only the thread itself adds or changes its entry. */
	struct own_head *e = self->robust_own ? NULL : malloc(sizeof *e);
	if (!self->robust_own && e == NULL)
		return ENOMEM;
	spin_lock(&heads_lock);
	if (self->robust_own) {
		(*entry_of(self))->head = head;
	} else {
		*e = (struct own_head){ .t = self, .head = head, .next = heads };
		heads = e;
		self->robust_own = true;
	}
	spin_unlock(&heads_lock);
	return 0;
}

int ppl_robust_list_get(pid_t tid, void **head, size_t *len)
{
	struct ult *t = tid_thread(tid);
	if (t == NULL || kernels(t))
		return -1;
	void *h = glibc_head(t);
	spin_lock(&heads_lock);
	struct own_head *e = t->robust_own ? *entry_of(t) : NULL;
	if (e != NULL)
		h = e->head;
	spin_unlock(&heads_lock);
	size_t n = sizeof(struct robust_list_head);
	if (vp_copy_out(head, &h, sizeof h) != 0 || vp_copy_out(len, &n, sizeof n) != 0)
		return EFAULT;
	return 0;
}

void robust_list_fork_child(void)
{
	spin_init(&heads_lock);
	heads = NULL;   /* the parent's threads' entries: not freed, not ours */
	ult_self()->robust_own = false;
}

/* The kernel's handle_futex_death on the word at addr, read safely first
 * (a bad pointer ends it, as a fault does in the kernel); a pending
 * operation's word of 0 is woken too. */
static void futex_death(uintptr_t addr, uint32_t tid, bool pi, bool pending)
{
	_Atomic uint32_t *word = (_Atomic uint32_t *)addr;
	uint32_t v;
	if (addr % sizeof v != 0 || vp_copy_in(&v, (void *)addr, sizeof v) != 0)
		return;
	if (pending && !pi && v == 0)
		pshared_wake(word, 1);
	else
		robust_word_dead(word, v, tid, pi);
}

static bool fetch(uintptr_t at, uintptr_t *entry, bool *pi)
{
	uintptr_t v;
	if (vp_copy_in(&v, (void *)at, sizeof v) != 0)
		return false;
	*entry = v & ~(uintptr_t)1;
	*pi = v & 1;
	return true;
}

void robust_list_exit(struct ult *self)
{
	struct own_head *e = take(self);
	if (e == NULL)
		return;
	uintptr_t head = (uintptr_t)e->head, entry, pending, next;
	free(e);
	bool pi, pending_pi, next_pi;
	long offset;
	uint32_t tid = (uint32_t)thread_tid(self);
	if (!fetch(head + offsetof(struct robust_list_head, list.next), &entry, &pi) ||
	    vp_copy_in(&offset, (void *)(head + offsetof(struct robust_list_head, futex_offset)),
		       sizeof offset) != 0 ||
	    !fetch(head + offsetof(struct robust_list_head, list_op_pending), &pending, &pending_pi))
		return;
	for (int left = ROBUST_LIST_LIMIT; entry != head && left > 0; left--) {
		bool more = fetch(entry, &next, &next_pi);
		if (entry != pending)
			futex_death(entry + offset, tid, pi, false);
		if (!more)
			return;
		entry = next;
		pi = next_pi;
	}
	if (pending != 0)
		futex_death(pending + offset, tid, pending_pi, true);
}
