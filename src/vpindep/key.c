/* Thread-specific data: pthread_key_create/delete, get/setspecific, and the
 * destructor pass at thread exit.
 *
 * Invariants:
 * - keys[k].seq is odd while key k exists.  Create and delete each add one
 *   with a compare-and-swap, so a key is claimed or released exactly once.
 * - A thread's slot for k holds {seq, value}.  The value belongs to the live
 *   key only while slot.seq == keys[k].seq; deleting a key therefore never
 *   visits the threads, and a re-created key (seq + 2) reads NULL in every
 *   thread.  Sequence numbers are 64-bit: they do not wrap in practice, and
 *   a slot whose next number would wrap is retired for good, as in glibc.
 * - Only the owning thread touches its slots (struct ult, pthread_impl.h),
 *   so get/setspecific take no lock.  The keys table is read with atomic
 *   loads; a delete racing with another thread's access is the
 *   application's race, and is harmless here (the value is dropped).
 * - Keys below PPL_KEY_INLINE have their slots in the TCB; the others are
 *   in blocks listed by a directory, both allocated by the first non-NULL
 *   value stored there (a TCB carries 8 slots, not 1024).
 * - key_run_destructors leaves every slot NULL and every on-demand block
 *   and directory freed, so a recycled TCB starts empty, exits leak
 *   nothing, and a pooled TCB keeps nothing on the heap. */
#include <stdlib.h>
#include <string.h>

#include "scheduler.h"
#include "thread.h"
#include "ult.h"

struct key {
	_Atomic uintptr_t seq;                 /* odd: in use */
	void (*_Atomic destr)(void *);         /* set by create, after the claim */
};

static struct key keys[PTHREAD_KEYS_MAX];

_Static_assert(PTHREAD_KEYS_MAX <= PPL_KEY_INLINE + PPL_KEY_BLOCK * PPL_KEY_BLOCKS,
	       "the inline slots and the blocks cover every key");

static inline bool seq_in_use(uintptr_t seq)
{
	return seq & 1;
}

/* The slot of key k in thread t, or NULL if its block was never allocated. */
static inline struct key_slot *slot_of(struct ult *t, pthread_key_t k)
{
	if (k < PPL_KEY_INLINE)
		return &t->specific_1st[k];
	if (t->specific == NULL)
		return NULL;
	k -= PPL_KEY_INLINE;
	struct key_slot *blk = t->specific[k / PPL_KEY_BLOCK];
	return blk ? &blk[k % PPL_KEY_BLOCK] : NULL;
}

/* The slot of key k >= PPL_KEY_INLINE in the caller, its directory and
 * block allocated now if need be; NULL when out of memory. */
static struct key_slot *slot_make(struct ult *self, pthread_key_t k)
{
	if (self->specific == NULL) {
		self->specific = calloc(PPL_KEY_BLOCKS, sizeof *self->specific);
		if (self->specific == NULL)
			return NULL;
		self->specific_used = true;   /* key_run_destructors frees it */
	}
	k -= PPL_KEY_INLINE;
	struct key_slot **blk = &self->specific[k / PPL_KEY_BLOCK];
	if (*blk == NULL && (*blk = calloc(PPL_KEY_BLOCK, sizeof **blk)) == NULL)
		return NULL;
	return &(*blk)[k % PPL_KEY_BLOCK];
}

int ppl_pthread_key_create(pthread_key_t *out, void (*destr)(void *))
{
	for (pthread_key_t k = 0; k < PTHREAD_KEYS_MAX; k++) {
		uintptr_t seq = atomic_load_explicit(&keys[k].seq, memory_order_relaxed);
		if (seq_in_use(seq) || seq + 2 < seq)
			continue;
		if (!atomic_compare_exchange_strong_explicit(&keys[k].seq, &seq, seq + 1,
							     memory_order_acq_rel,
							     memory_order_relaxed))
			continue;   /* another thread claimed it first */
		/* No slot can carry the new seq yet: that takes a setspecific
		 * with the key this call has not returned. */
		atomic_store_explicit(&keys[k].destr, destr, memory_order_release);
		*out = k;
		return 0;
	}
	return EAGAIN;
}

int ppl_pthread_key_delete(pthread_key_t k)
{
	if (k >= PTHREAD_KEYS_MAX)
		return EINVAL;
	uintptr_t seq = atomic_load_explicit(&keys[k].seq, memory_order_relaxed);
	if (!seq_in_use(seq))
		return EINVAL;
	/* A concurrent delete of the same key makes this CAS fail: EINVAL. */
	if (!atomic_compare_exchange_strong_explicit(&keys[k].seq, &seq, seq + 1,
						     memory_order_acq_rel, memory_order_relaxed))
		return EINVAL;
	return 0;
}

void *ppl_pthread_getspecific(pthread_key_t k)
{
	if (ppl_unlikely(k >= PTHREAD_KEYS_MAX))
		return NULL;
	struct ult *self = ult_self_peek();   /* no TCB yet: every value is NULL */
	if (self == NULL)
		return NULL;
	struct key_slot *s = slot_of(self, k);
	if (s == NULL)
		return NULL;
	void *v = s->value;
	if (v != NULL && s->seq != atomic_load_explicit(&keys[k].seq, memory_order_relaxed)) {
		s->value = NULL;   /* a value of a deleted key: drop it now */
		v = NULL;
	}
	return v;
}

int ppl_pthread_setspecific(pthread_key_t k, const void *v)
{
	if (ppl_unlikely(k >= PTHREAD_KEYS_MAX))
		return EINVAL;
	uintptr_t seq = atomic_load_explicit(&keys[k].seq, memory_order_relaxed);
	if (ppl_unlikely(!seq_in_use(seq)))
		return EINVAL;
	struct ult *self = ult_self();
	struct key_slot *s = slot_of(self, k);
	if (s == NULL) {
		if (v == NULL)   /* an absent block already reads NULL */
			return 0;
		if ((s = slot_make(self, k)) == NULL)
			return ENOMEM;
	}
	s->seq = seq;
	s->value = (void *)v;
	self->specific_used = true;
	return 0;
}

/* One pass over t's slots: each non-NULL value is cleared, then handed to
 * its key's destructor if the key still exists.  A destructor may store new
 * values (setting specific_used again); a block it allocates is visited in
 * this pass or the next. */
static void destructor_pass(struct ult *t)
{
	for (size_t b = 0; b <= PPL_KEY_BLOCKS; b++) {
		/* Destructors may allocate the directory and blocks, never free
		 * them: read both again for every block. */
		struct key_slot *blk;
		size_t n, first;
		if (b == 0) {
			blk = t->specific_1st;
			n = PPL_KEY_INLINE;
			first = 0;
		} else {
			if (t->specific == NULL)
				break;
			blk = t->specific[b - 1];
			first = PPL_KEY_INLINE + (b - 1) * PPL_KEY_BLOCK;
			n = PTHREAD_KEYS_MAX - first < PPL_KEY_BLOCK ? PTHREAD_KEYS_MAX - first
								      : PPL_KEY_BLOCK;
		}
		if (blk == NULL)
			continue;
		for (size_t i = 0; i < n; i++) {
			void *v = blk[i].value;
			if (v == NULL)
				continue;
			blk[i].value = NULL;
			size_t k = first + i;
			if (blk[i].seq != atomic_load_explicit(&keys[k].seq, memory_order_acquire))
				continue;
			void (*d)(void *) = atomic_load_explicit(&keys[k].destr,
								  memory_order_acquire);
			if (d)
				d(v);
		}
	}
}

/* Runs on t itself (thread exit, or the kernel-thread exit of a foreign
 * thread): destructors call get/setspecific on the current thread. */
void key_run_destructors(struct ult *t)
{
	/* Every value and block comes with specific_used set, and only this
	 * function clears it: a thread that never stored a value has nothing. */
	if (!t->specific_used)
		return;
	for (int round = 0; t->specific_used && round < PTHREAD_DESTRUCTOR_ITERATIONS; round++) {
		t->specific_used = false;
		destructor_pass(t);
	}
	/* Values stored by destructors in the last round are dropped, as POSIX
	 * allows after PTHREAD_DESTRUCTOR_ITERATIONS rounds. */
	memset(t->specific_1st, 0, sizeof t->specific_1st);
	if (t->specific != NULL) {
		for (size_t b = 0; b < PPL_KEY_BLOCKS; b++)
			free(t->specific[b]);
		free(t->specific);
		t->specific = NULL;
	}
	t->specific_used = false;
}
