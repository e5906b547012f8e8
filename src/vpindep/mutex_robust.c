/* Robust mutexes (PTHREAD_MUTEX_ROBUST), private and process-shared: the
 * lock word protocol of glibc, so that an NPTL process and a libppl process
 * can share one, and owner death.
 *
 * The overlay is glibc's struct __pthread_mutex_s: the lock word at 0 holds
 * the owner's tid | FUTEX_WAITERS | FUTEX_OWNER_DIED, __owner at 8 the tid
 * or PTHREAD_MUTEX_INCONSISTENT / _NOTRECOVERABLE, and __list at 24 links
 * the held mutex into a robust list, the kernel's format (an entry is the
 * address of the `next` word, the lock word is 32 bytes before it).
 *
 * Invariants
 *  - The tid in the lock word of a mutex held by any thread of this process
 *    is `rtid`, the tid of the process's initial kernel thread, which lives
 *    as long as the process (it is VP 0; docs/sync.md).  Every held robust
 *    mutex of the process is on one list, `rl`, which that kernel thread
 *    registered with set_robust_list.  So when the process dies the kernel
 *    marks every one FUTEX_OWNER_DIED and wakes a waiter, in whichever
 *    process it is, as for NPTL's threads.
 *  - A user thread's identity is its token (the low 32 bits of its id,
 *    never 0), in `token` (glibc's __spins/__elision, unused by glibc for
 *    robust kinds): the holder is the thread whose lock word tid is rtid and
 *    whose token is there.  Only the holder writes its token, and clears it
 *    before it releases the word.
 *  - The list and its op_pending slot are changed only under rl_lock, which
 *    is held from before the lock word is changed until the mutex is on (or
 *    off) the list: a death in between is covered by list_op_pending.
 *  - A user thread that ends (return, pthread_exit, cancel) holding robust
 *    mutexes does what the kernel does for a dying kernel thread
 *    (robust_thread_exit): word = (word & FUTEX_WAITERS) | FUTEX_OWNER_DIED,
 *    then a wake-up if FUTEX_WAITERS was set.
 *  - Waiters always use the shared kernel futex protocol (pshared_wait), as
 *    glibc does for every robust mutex: the kernel's wake-up at a death is
 *    a shared one. */
#include <linux/futex.h>
#include <string.h>
#include <unistd.h>

#include "mutex_robust.h"
#include "parklot.h"
#include "preempt.h"
#include "scheduler.h"
#include "ult.h"

#define MK_TYPE 3u
#define INCONSISTENT   INT_MAX         /* glibc's PTHREAD_MUTEX_INCONSISTENT */
#define NOTRECOVERABLE (INT_MAX - 1)   /* glibc's PTHREAD_MUTEX_NOTRECOVERABLE */

struct rmutex {
	_Atomic uint32_t word;     /* tid | FUTEX_WAITERS | FUTEX_OWNER_DIED */
	uint32_t count;            /* recursion depth */
	_Atomic int owner;         /* glibc's __owner: tid, INCONSISTENT, NOTRECOVERABLE, 0 */
	uint32_t nusers;           /* glibc's __nusers: not used for robust kinds */
	_Atomic int kind;
	_Atomic uint32_t token;    /* holder's token, 0 when free */
	struct link {
		void *prev;        /* address of the previous entry's `next` word */
		void *next;        /* the kernel's entry: the next entry's `next` word */
	} link;
};

_Static_assert(sizeof(struct rmutex) == sizeof(pthread_mutex_t), "robust mutex overlay size");
_Static_assert(offsetof(struct rmutex, kind) == 16, "__kind at glibc's offset");
_Static_assert(offsetof(struct rmutex, owner) == 8, "__owner at glibc's offset");
_Static_assert(offsetof(struct rmutex, link) == 24, "__list at glibc's offset");

#define FUTEX_OFFSET (-(long)offsetof(struct rmutex, link.next))

/* The kernel's struct robust_list_head, preceded by a `prev` word so the
 * head is a node like the others (glibc's robust_prev does the same). */
static struct rl {
	void *prev;
	void *list;                /* first entry: watch */
	long futex_offset;
	void *op_pending;
} rl;

/* The first two entries of rl for good, `watch` then `front`: lock words
 * held by rtid and by no user thread (token 0).  The kernel's walk of rl
 * as the initial kernel thread dies marks an entry FUTEX_OWNER_DIED after
 * it has read the entry's next: it marks watch, then reads front's next.
 * But a kernel thread of the program may still run after the walk (a VP
 * process of the process backend until the kernel kills it for its
 * parent's death, another thread of a process being killed), and take a
 * robust mutex.  It adds the mutex after front, then looks at watch: not
 * marked yet, the walk will read front's next after the add and find the
 * mutex; marked, the walk may be past, so it releases the mutex as the
 * kernel would and ends its process (program_dead).  One sentinel would
 * leave the kernel's step between reading its next and marking it. */
static struct rmutex front;
static struct rmutex watch = { .link = { &rl.list, &front.link.next } };
static struct rmutex front = { .link = { &watch.link.next, &rl.list } };
static struct rl rl = { &front.link.next, &watch.link.next, FUTEX_OFFSET, NULL };
static spin_t rl_lock PPL_FORK_STATE;
static _Atomic uint32_t rtid PPL_FORK_STATE;

static inline struct rmutex *R(pthread_mutex_t *m)
{
	return (struct rmutex *)m;
}

static inline struct link *node_of(void *entry)
{
	return (struct link *)((char *)entry - offsetof(struct link, next));
}

static inline struct rmutex *mutex_of(void *entry)
{
	return (struct rmutex *)((char *)entry + FUTEX_OFFSET);
}

/* On the initial kernel thread (ppl_init) and in a forked child's only
 * one: make rl the kernel thread's robust list; the tid of that kernel
 * thread is vp_initial_kthread_id() (the pid). */
void robust_init(void)
{
	rl.list = &watch.link.next;
	watch.link.prev = &rl.list;
	watch.link.next = &front.link.next;
	front.link.prev = &watch.link.next;
	front.link.next = &rl.list;
	rl.prev = &front.link.next;
	rl.op_pending = NULL;
	spin_init(&rl_lock);
	atomic_store_explicit(&rtid, (uint32_t)vp_initial_kthread_id(), memory_order_relaxed);
	atomic_store_explicit(&watch.word, atomic_load(&rtid), memory_order_relaxed);
	atomic_store_explicit(&front.word, atomic_load(&rtid), memory_order_relaxed);
	/* Not the initial kernel thread (an early caller): the list then only
	 * serves the user-level owner death, not the process's. */
	if (vp_is_initial_kthread())
		(void)futex_robust_register(&rl.list, 3 * sizeof(void *));
}

void robust_fork_child(void)
{
	/* Only the forking thread survives, and it holds nothing here (the
	 * words of its mutexes hold the parent's tid, as on NPTL). */
	ult_self()->robust_held = 0;
	robust_list_fork_child();
	robust_init();
}

static inline uint32_t my_tid(void)
{
	uint32_t t = atomic_load_explicit(&rtid, memory_order_relaxed);
	if (ppl_unlikely(t == 0)) {
		t = (uint32_t)vp_initial_kthread_id();
		atomic_store_explicit(&rtid, t, memory_order_relaxed);
	}
	return t;
}

static inline uint32_t token_of(const struct ult *t)
{
	uint32_t tok = (uint32_t)t->id;
	return tok ? tok : 0x80000000u;
}

/* ---- the list, under rl_lock ------------------------------------------------ */

static void list_begin(struct rmutex *m)
{
	spin_lock(&rl_lock);
	rl.op_pending = &m->link.next;
	atomic_signal_fence(memory_order_seq_cst);
}

static void list_end(void)
{
	atomic_signal_fence(memory_order_seq_cst);
	rl.op_pending = NULL;
	spin_unlock(&rl_lock);
}

/* After front; the entry is complete before front points to it, so a
 * kernel walk (the process dying on another kernel thread) sees either. */
static void list_add(struct rmutex *m)
{
	struct link *s = &front.link, *l = &m->link, *first = node_of(s->next);
	l->next = s->next;
	l->prev = &s->next;
	first->prev = &l->next;
	atomic_signal_fence(memory_order_seq_cst);
	s->next = &l->next;
}

void robust_word_dead(_Atomic uint32_t *word, uint32_t w, uint32_t tid, bool pi)
{
	while ((w & FUTEX_TID_MASK) == tid) {
		if (atomic_compare_exchange_weak_explicit(word, &w, (w & FUTEX_WAITERS) | FUTEX_OWNER_DIED,
							  memory_order_release, memory_order_relaxed)) {
			if (!pi && (w & FUTEX_WAITERS))
				pshared_wake(word, 1);
			return;
		}
	}
}

/* The initial kernel thread is dead and the kernel's walk of rl may be
 * past: m, just taken, is released as the kernel releases a dead owner's
 * (unless the walk found it: then it may be another's already), and this
 * kernel thread's process ends as the program's did. */
static _Noreturn void program_dead(struct rmutex *m, uint32_t tid)
{
	robust_word_dead(&m->word, atomic_load_explicit(&m->word, memory_order_relaxed), tid, false);
	vp_kthread_group_end();
}

static void list_del(struct rmutex *m)
{
	struct link *l = &m->link;
	node_of(l->next)->prev = l->prev;
	node_of(l->prev)->next = l->next;
	/* next stays: a kernel walk that stands on this entry (the process
	 * dying on another kernel thread) goes on to the rest of the list. */
	atomic_signal_fence(memory_order_seq_cst);
	l->prev = NULL;
}

/* ---- lock, unlock, consistent ------------------------------------------------ */

static inline bool held_by(struct rmutex *m, uint32_t tid, uint32_t tok)
{
	return (atomic_load_explicit(&m->word, memory_order_relaxed) & FUTEX_TID_MASK) == tid &&
	       atomic_load_explicit(&m->token, memory_order_relaxed) == tok;
}

static int lock_once(pthread_mutex_t *pm, int kind, int mode, const struct timespec *abstime,
		     clockid_t clk)
{
	struct rmutex *m = R(pm);
	struct ult *self = ult_self();
	uint32_t tid = my_tid(), tok = token_of(self);
	unsigned type = (unsigned)kind & MK_TYPE;
	if (held_by(m, tid, tok)) {
		/* glibc: EDEADLK from trylock too; a NORMAL one deadlocks. */
		if (type == PTHREAD_MUTEX_ERRORCHECK_NP)
			return EDEADLK;
		if (type == PTHREAD_MUTEX_RECURSIVE_NP) {
			if (m->count + 1 == 0)
				return EAGAIN;
			m->count++;
			return 0;
		}
	}
	/* FUTEX_WAITERS once this thread has waited: others may still wait. */
	uint32_t assume = 0;
	bool checked = false;
	for (;;) {
		list_begin(m);
		uint32_t w = atomic_load_explicit(&m->word, memory_order_relaxed);
		if (w == 0 || (w & FUTEX_OWNER_DIED)) {
			uint32_t nw = tid | (w & FUTEX_WAITERS) | assume;
			if (!atomic_compare_exchange_strong_explicit(&m->word, &w, nw,
					memory_order_acquire, memory_order_relaxed)) {
				list_end();
				continue;
			}
			bool dead = (w & FUTEX_OWNER_DIED) != 0;
			if (!dead && atomic_load_explicit(&m->owner, memory_order_relaxed) ==
					     NOTRECOVERABLE) {
				/* Let the next waiter find it out as well. */
				m->count = 0;
				w = atomic_exchange_explicit(&m->word, 0, memory_order_release);
				list_end();
				if (w & FUTEX_WAITERS)
					pshared_wake(&m->word, 1);
				return ENOTRECOVERABLE;
			}
			m->count = 1;
			list_add(m);
			list_end();
			atomic_thread_fence(memory_order_seq_cst);
			if (ppl_unlikely(atomic_load_explicit(&watch.word, memory_order_relaxed) &
					 FUTEX_OWNER_DIED))
				program_dead(m, tid);
			atomic_store_explicit(&m->token, tok, memory_order_relaxed);
			atomic_store_explicit(&m->owner, dead ? INCONSISTENT : (int)tid,
					      memory_order_relaxed);
			self->robust_held++;
			return dead ? EOWNERDEAD : 0;
		}
		list_end();
		if (mode == ROBUST_TRY)
			return EBUSY;
		if (abstime && !checked) {
			/* As glibc: the time is checked only once the caller must wait. */
			if (abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L)
				return EINVAL;
			if (abstime->tv_sec < 0)
				return ETIMEDOUT;
			checked = true;
		}
		if ((w & FUTEX_WAITERS) == 0) {
			if (!atomic_compare_exchange_strong_explicit(&m->word, &w, w | FUTEX_WAITERS,
					memory_order_relaxed, memory_order_relaxed))
				continue;
			w |= FUTEX_WAITERS;
		}
		assume = FUTEX_WAITERS;
		if (pshared_wait(&m->word, w, abstime, clk) == ETIMEDOUT)
			return ETIMEDOUT;
	}
}

/* Every return is an entry point's: pay a deferred preemption there (a
 * trylock loop spends most of its time inside libppl, where ticks defer). */
int robust_lock(pthread_mutex_t *pm, int kind, int mode, const struct timespec *abstime,
		clockid_t clk)
{
	int err = lock_once(pm, kind, mode, abstime, clk);
	preempt_point();
	return err;
}

int robust_unlock(pthread_mutex_t *pm, int kind)
{
	struct rmutex *m = R(pm);
	struct ult *self = ult_self();
	if (!held_by(m, my_tid(), token_of(self)))
		return EPERM;
	bool inconsistent = atomic_load_explicit(&m->owner, memory_order_relaxed) == INCONSISTENT;
	if (((unsigned)kind & MK_TYPE) == PTHREAD_MUTEX_RECURSIVE_NP && --m->count != 0)
		return inconsistent ? ENOTRECOVERABLE : 0;   /* glibc's answers */
	list_begin(m);
	list_del(m);
	/* Unlocked without pthread_mutex_consistent: unusable for good. */
	atomic_store_explicit(&m->owner, inconsistent ? NOTRECOVERABLE : 0, memory_order_relaxed);
	atomic_store_explicit(&m->token, 0, memory_order_relaxed);
	uint32_t w = atomic_exchange_explicit(&m->word, 0, memory_order_release);
	list_end();
	self->robust_held--;
	/* As glibc's, the wake-up may reach a mutex already destroyed: harmless. */
	if (w & FUTEX_WAITERS)
		pshared_wake(&m->word, 1);
	preempt_point();
	return 0;
}

/* glibc checks neither the caller nor that the mutex is held. */
int robust_consistent(pthread_mutex_t *pm)
{
	struct rmutex *m = R(pm);
	if (atomic_load_explicit(&m->owner, memory_order_relaxed) != INCONSISTENT)
		return EINVAL;
	atomic_store_explicit(&m->owner, (int)my_tid(), memory_order_relaxed);
	return 0;
}

/* ---- owner death ------------------------------------------------------------- */

void robust_thread_exit(struct ult *self)
{
	if (self->robust_held == 0)
		return;
	uint32_t tid = my_tid(), tok = token_of(self);
	_Atomic uint32_t *wake[16];
	for (;;) {
		int n = 0;
		spin_lock(&rl_lock);
		void *e = rl.list;
		/* (A held mutex re-initialised in place cuts the list: stop there.) */
		while (e != &rl.list && e != NULL && n < (int)(sizeof wake / sizeof wake[0])) {
			struct rmutex *m = mutex_of(e);
			e = m->link.next;
			if (!held_by(m, tid, tok))
				continue;
			rl.op_pending = &m->link.next;
			list_del(m);
			atomic_store_explicit(&m->token, 0, memory_order_relaxed);
			uint32_t w = atomic_load_explicit(&m->word, memory_order_relaxed);
			while (!atomic_compare_exchange_weak_explicit(&m->word, &w,
					(w & FUTEX_WAITERS) | FUTEX_OWNER_DIED,
					memory_order_release, memory_order_relaxed))
				;
			rl.op_pending = NULL;
			self->robust_held--;
			if (w & FUTEX_WAITERS)
				wake[n++] = &m->word;
		}
		bool more = self->robust_held != 0 && e != &rl.list && e != NULL;
		spin_unlock(&rl_lock);
		for (int i = 0; i < n; i++)
			pshared_wake(wake[i], 1);
		if (!more)
			break;
	}
	self->robust_held = 0;
}
