/* Thread stacks carved out of large shared arenas.
 *
 * NPTL maps every stack (and its guard) separately: two mappings per thread
 * against vm.max_map_count (65530) stop it near 32,000 threads.  Here one
 * arena mapping holds thousands of stacks of one size class, reserved with
 * MAP_NORESERVE so untouched stack pages cost nothing.  The guard of each
 * slot is installed with MADV_GUARD_INSTALL (Linux 6.13+), which does not
 * split the mapping; older kernels fall back to mprotect, which does.
 *
 * Freed stacks go back to their size class's free list (Ariadne's shell
 * recycling).  Past a bound, a freed stack's pages are returned to the
 * kernel with MADV_DONTNEED but its slot stays carved and guarded. */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "config.h"
#include "pthread_impl.h"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

#define ARENA_BYTES (1UL << 30)    /* reserved per arena; virtual only */
#define CLASS_MAX 32               /* distinct (size, guard) classes kept */
#define HOT_STACKS 256             /* freed stacks per class kept resident */

struct free_stack {                /* lives at the top of a freed stack */
	struct free_stack *next;
};

struct size_class {
	size_t size, guard;            /* usable bytes and guard bytes of a slot */
	char *cur, *end;               /* uncarved part of the newest arena */
	struct free_stack *free;
	size_t nfree;
};

static spin_t lock;                /* protects classes; held only briefly */
static struct size_class classes[CLASS_MAX];
static int nclasses;
static _Atomic int guard_mode;     /* 0 unknown, 1 madvise, 2 mprotect */

static size_t page_size(void)
{
	static size_t ps;
	if (!ps)
		ps = (size_t)sysconf(_SC_PAGESIZE);
	return ps;
}

static size_t round_page(size_t n)
{
	size_t ps = page_size();
	return (n + ps - 1) & ~(ps - 1);
}

size_t stack_default_size(void)
{
	extern size_t ppl_env_stack_size PPL_HIDDEN;
	if (ppl_env_stack_size)
		return round_page(ppl_env_stack_size);
#if PPL_DEFAULT_STACK_SIZE > 0
	return round_page(PPL_DEFAULT_STACK_SIZE);
#else
	struct rlimit rl;
	if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur >= (rlim_t)PTHREAD_STACK_MIN)
		return round_page(rl.rlim_cur);
	return 8UL << 20;
#endif
}

static int install_guard(char *lo, size_t len)
{
	int mode = atomic_load_explicit(&guard_mode, memory_order_relaxed);
	if (mode != 2) {
		if (madvise(lo, len, MADV_GUARD_INSTALL) == 0) {
			atomic_store_explicit(&guard_mode, 1, memory_order_relaxed);
			return 0;
		}
		if (errno != EINVAL)
			return errno;
		atomic_store_explicit(&guard_mode, 2, memory_order_relaxed);
	}
	return mprotect(lo, len, PROT_NONE) == 0 ? 0 : errno;
}

static struct size_class *class_for(size_t size, size_t guard)
{
	for (int i = 0; i < nclasses; i++)
		if (classes[i].size == size && classes[i].guard == guard)
			return &classes[i];
	if (nclasses == CLASS_MAX)
		return NULL;
	struct size_class *c = &classes[nclasses++];
	c->size = size;
	c->guard = guard;
	return c;
}

/* Carve a new slot: [guard][stack].  Caller holds `lock`. */
static int carve(struct size_class *c, char **slot)
{
	size_t slot_bytes = c->size + c->guard;
	if (c->cur == NULL || (size_t)(c->end - c->cur) < slot_bytes) {
		size_t bytes = slot_bytes > ARENA_BYTES ? slot_bytes : ARENA_BYTES - ARENA_BYTES % slot_bytes;
		void *a = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
		if (a == MAP_FAILED)
			return EAGAIN;
		c->cur = a;
		c->end = (char *)a + bytes;
	}
	*slot = c->cur;
	c->cur += slot_bytes;
	if (c->guard) {
		int err = install_guard(*slot, c->guard);
		if (err)
			return EAGAIN;
	}
	return 0;
}

int stack_alloc(size_t size, size_t guard, struct stack *out)
{
	size = round_page(size);
	guard = round_page(guard);
	if (size == 0 || size > (1UL << 40) || guard > (1UL << 40))
		return EINVAL;

	spin_lock(&lock);
	struct size_class *c = class_for(size, guard);
	char *slot = NULL;
	int err = 0;
	if (c == NULL) {
		spin_unlock(&lock);
		/* Too many distinct sizes: a private mapping of its own. */
		slot = mmap(NULL, size + guard, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
		if (slot == MAP_FAILED)
			return EAGAIN;
		if (guard && install_guard(slot, guard) != 0) {
			munmap(slot, size + guard);
			return EAGAIN;
		}
	} else if (c->free) {
		struct free_stack *f = c->free;
		c->free = f->next;
		c->nfree--;
		spin_unlock(&lock);
		slot = (char *)(f + 1) - size - guard;
	} else {
		err = carve(c, &slot);
		spin_unlock(&lock);
		if (err)
			return err;
	}
	out->guard_lo = slot;
	out->guard = guard;
	out->lo = slot + guard;
	out->size = size;
	out->user = false;
	return 0;
}

void stack_free(struct stack *s)
{
	if (s->user || s->lo == NULL)
		return;
	/* The free-list node sits in the stack's topmost bytes. */
	struct free_stack *f = (struct free_stack *)((char *)s->lo + s->size) - 1;
	spin_lock(&lock);
	struct size_class *c = class_for(s->size, s->guard);
	if (c == NULL) {
		spin_unlock(&lock);
		munmap(s->guard_lo, s->size + s->guard);
		return;
	}
	bool cold = c->nfree >= HOT_STACKS;
	spin_unlock(&lock);
	if (cold)  /* keep the slot, give its pages back (the node page stays) */
		madvise(s->lo, s->size - page_size(), MADV_DONTNEED);
	spin_lock(&lock);
	f->next = c->free;
	c->free = f;
	c->nfree++;
	spin_unlock(&lock);
	s->lo = NULL;
}

bool stack_guard_contains(const struct stack *s, const void *addr)
{
	const char *a = addr;
	return s->guard && a >= (const char *)s->guard_lo &&
	       a < (const char *)s->guard_lo + s->guard;
}

void stack_atfork(enum fork_phase ph)
{
	if (ph == FORK_PREPARE)
		spin_lock(&lock);
	else
		spin_unlock(&lock);
}
