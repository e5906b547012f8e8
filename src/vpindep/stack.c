/* Thread stacks carved out of large shared arenas.
 *
 * NPTL maps every stack (and its guard) separately: two mappings per thread
 * against vm.max_map_count (65530) stop it near 32,000 threads.  Here one
 * arena mapping holds thousands of stacks of one size class, reserved with
 * MAP_NORESERVE so untouched stack pages cost nothing.  The guard of each
 * slot is installed with MADV_GUARD_INSTALL (Linux 6.13+), which does not
 * split the mapping; older kernels fall back to mprotect, which does (the
 * memory itself is vpdep's: stackmem.c).
 *
 * Freed stacks go back to their size class's free list (Ariadne's shell
 * recycling).  Past a bound, a freed stack's slot is unmapped, a hole in
 * its arena that the slot's address on the free list keeps for it (mapped
 * again when taken), so that it keeps no page and, once its neighbours
 * are holes too, no page table of any level: fork copies every page table
 * of a mapping, so ten thousand stacks with one page each made each fork
 * ~50 ms instead of NPTL's 0.4 ms, and the upper tables of the emptied
 * arenas alone (one per GiB) still 0.3 ms.  Past a bound of holes (each
 * may split the arena's mapping) a cold slot stays mapped and is zapped
 * with MADV_DONTNEED instead.  The free list lives outside the slots.
 *
 * A class's arenas start at 8 slots and double up to 1 GiB: RLIMIT_AS
 * counts reserved address space, MAP_NORESERVE or not, so a process that
 * made a few threads and then lowers the limit must not already hold a
 * gigabyte.  Under a limit an arena is at most a sixteenth of it, and one
 * that does not fit is halved down to one slot: threads are made until the
 * address space is full, then pthread_create says EAGAIN. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "config.h"
#include "fork.h"
#include "runtime.h"
#include "stack.h"

#if PPL_HAVE_VALGRIND
#include <valgrind/valgrind.h>
#endif

#define ARENA_BYTES (1UL << 30)    /* reserved per arena; virtual only */
#define CLASS_MAX 32               /* distinct (size, guard) classes kept */
#define HOT_STACKS 64              /* freed stacks per class kept resident, */
#define HOT_BYTES (64UL << 20)     /* and at most this much (thread.c keeps 40 MiB more): */
/* eight of the default 8 MiB stacks (8 MiB held one: every thread of a
 * burst of short ones unmapped its stack and mapped one anew, four system
 * calls, glibc's tst-create-detached 1.3 to 1.6 times NPTL's time) */
#define CHUNK_SLOTS 254            /* free slots per chunk (a 2 KiB chunk) */
#define FIRST_ARENA_SLOTS 8        /* a class's first arena; each next doubles */

/* A class's cold free slots: a LIFO of their addresses, in chunks.  A
 * slot's address | COLD: its pages, and its guard if a marker, are gone. */
#define COLD 1
/* A slot's address | HOLE: the slot is unmapped, a hole in its arena
 * (vp_stack_punch), so that the page tables of a run of cold slots go back
 * too: MADV_DONTNEED frees a page table only when it zaps a whole one
 * (Linux 6.14+, and only the last level), and fork copies every page
 * table of a mapping, however empty.  A hole may split the arena's
 * mapping in two: at most HOLES_MAX of them, so that they take at most
 * that many of the process's vm.max_map_count (65530) mappings. */
#define HOLE 2
#define HOLES_MAX 16384
struct free_chunk {
	struct free_chunk *next;
	size_t n;
	char *slot[CHUNK_SLOTS];
};

struct size_class {
	size_t size, guard;            /* usable bytes and guard bytes of a slot */
	size_t stride;                 /* bytes per slot: [unused][guard][stack] */
	char *cur, *end;               /* uncarved part of the newest arena */
	size_t next_slots;             /* slots of the next arena (doubles) */
	struct free_chunk *free;       /* cold slots, newest chunk first; none empty */
};

/* A class's hot free slots (pages and guard in place), apart from the cold
 * ones so that a take finds them first however many cold slots a burst of
 * threads left: in one LIFO a hot slot freed before a burst's ended lay
 * under them all, and every later free went cold, so a program whose
 * threads came and went by the dozen (quicksort, a thread per partition)
 * mapped and faulted in a stack for each.  Under `lock`; outside the fork
 * section: no fork handler touches them. */
static struct hot_slots {
	unsigned n;
	char *slot[HOT_STACKS];
} hot[CLASS_MAX];

static spin_t lock PPL_FORK_STATE; /* protects classes; held only briefly */
static struct size_class classes[CLASS_MAX] PPL_FORK_STATE;
static int nclasses;
static size_t holes;               /* slots listed with HOLE, under lock */

static size_t page_size(void)
{
	static size_t ps;
	if (!ps)
		ps = (size_t)sysconf(_SC_PAGESIZE);
	return ps;
}

size_t stack_page_size(void)
{
	return page_size();
}

/* The bytes one page table maps: a page of 8-byte entries. */
static size_t pt_reach(void)
{
	return page_size() / 8 * page_size();
}

static size_t round_page(size_t n)
{
	size_t ps = page_size();
	return (n + ps - 1) & ~(ps - 1);
}

/* RLIMIT_STACK is read once, as glibc reads it at start-up for its
 * default attribute (a getrlimit per create was one system call in
 * every pthread_create). */
static size_t rlimit_default;

void stack_init(void)
{
	size_t lim = vp_limit_stack();
	rlimit_default = lim >= (size_t)PTHREAD_STACK_MIN ? round_page(lim) : 8UL << 20;
}

size_t stack_default_size(void)
{
	if (ppl_env_stack_size)
		return round_page(ppl_env_stack_size);
#if PPL_DEFAULT_STACK_SIZE > 0
	return round_page(PPL_DEFAULT_STACK_SIZE);
#else
	if (ppl_unlikely(rlimit_default == 0))   /* a caller before ppl_init */
		stack_init();
	return rlimit_default;
#endif
}

static int install_guard(char *lo, size_t len)
{
	return vp_stack_guard(lo, len);
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
	/* A slot as large as a page table's reach (2 MiB with 4 KiB pages)
	 * spans whole page tables of its own, so that a cold slot's tables
	 * go back to the kernel with it (Linux 6.14+). */
	size_t pt = pt_reach();
	c->stride = size + guard >= pt ? (size + guard + pt - 1) / pt * pt : size + guard;
	return c;
}

/* The stack and guard of the slot at `slot`. */
static void slot_layout(const struct size_class *c, char *slot, struct stack *out)
{
	out->guard_lo = slot + (c->stride - c->size - c->guard);
	out->guard = c->guard;
	out->lo = (char *)out->guard_lo + c->guard;
	out->size = c->size;
	out->user = false;
}

/* An arena's reservation.  Under an address-space limit (RLIMIT_AS) it
 * counts whole, NORESERVE or not: a sixteenth of the limit, so that one
 * arena leaves room for the VPs' kernel threads, malloc and the other
 * size classes (a 2 GiB limit: 128 MiB arenas). */
static size_t arena_bytes(void)
{
	size_t lim = vp_limit_address_space();
	if (lim != 0 && lim / 16 < ARENA_BYTES)
		return lim / 16;
	return ARENA_BYTES;
}

/* Carve a new slot.  Caller holds `lock`. */
static int carve(struct size_class *c, char **slot)
{
	size_t stride = c->stride;
	if (c->cur == NULL || (size_t)(c->end - c->cur) < stride) {
		/* Whole page tables per slot need the arena aligned too. */
		size_t align = stride % pt_reach() == 0 ? pt_reach() : page_size();
		/* Arenas grow from a few slots to ARENA_BYTES: a process with
		 * few threads reserves little, which a later RLIMIT_AS counts. */
		if (c->next_slots == 0)
			c->next_slots = FIRST_ARENA_SLOTS;
		size_t bytes = arena_bytes();
		if (c->next_slots < bytes / stride)
			bytes = c->next_slots * stride;
		else
			bytes = stride > bytes ? stride : bytes - bytes % stride;
		c->next_slots *= 2;
		char *a;
		/* Near the limit, halve it until it fits, down to one slot. */
		while ((a = vp_stack_map(bytes + align - page_size())) == NULL) {
			if (errno != ENOMEM || bytes == stride)
				return EAGAIN;
			bytes = bytes / 2 < stride ? stride : bytes / 2 - bytes / 2 % stride;
		}
		c->cur = (char *)(((uintptr_t)a + align - 1) & ~(uintptr_t)(align - 1));
		c->end = c->cur + bytes;
		/* The slack of the alignment goes: a mapping between two
		 * arenas would keep their shared upper page table when every
		 * slot around it is a hole. */
		if (c->cur > a)
			vp_stack_unmap(a, (size_t)(c->cur - a));
		if (a + bytes + align - page_size() > c->end)
			vp_stack_unmap(c->end, (size_t)(a + bytes + align - page_size() - c->end));
	}
	*slot = c->cur;
	c->cur += stride;
	if (c->guard) {
		int err = install_guard(*slot + (stride - c->size - c->guard), c->guard);
		if (err)
			return EAGAIN;
	}
	return 0;
}

/* A new slot of c for out, with the lock held; releases it. */
static int carve_unlock(struct size_class *c, struct stack *out)
{
	char *slot;
	int err = carve(c, &slot);
	spin_unlock(&lock);
	if (err == 0)
		slot_layout(c, slot, out);
	return err;
}

static int alloc(size_t size, size_t guard, struct stack *out)
{
	size = round_page(size);
	guard = round_page(guard);
	if (size == 0)
		return EINVAL;
	/* More than any mapping gets (glibc's mmap fails: EAGAIN). */
	if (size > (1UL << 40) || guard > (1UL << 40))
		return EAGAIN;

	spin_lock(&lock);
	struct size_class *c = class_for(size, guard);
	if (c == NULL) {
		spin_unlock(&lock);
		/* Too many distinct sizes: a private mapping of its own. */
		char *m = vp_stack_map(size + guard);
		if (m == NULL)
			return EAGAIN;
		if (guard && install_guard(m, guard) != 0) {
			vp_stack_unmap(m, size + guard);
			return EAGAIN;
		}
		*out = (struct stack){ .guard_lo = m, .guard = guard, .lo = m + guard, .size = size };
		return 0;
	}
	struct hot_slots *h = &hot[c - classes];
	if (h->n > 0) {
		char *slot = h->slot[--h->n];
		spin_unlock(&lock);
		slot_layout(c, slot, out);
		return 0;
	}
	if (c->free == NULL)
		return carve_unlock(c, out);
	for (;;) {
		struct free_chunk *f = c->free;
		uintptr_t e = (uintptr_t)f->slot[--f->n];
		if (e & HOLE)
			holes--;
		if (f->n == 0)
			c->free = f->next;
		else
			f = NULL;
		spin_unlock(&lock);
		free(f);
		char *slot = (char *)(e & ~(uintptr_t)(COLD | HOLE));
		/* Another mapping may have taken the hole: forget the slot. */
		if ((e & HOLE) && !vp_stack_refill(slot, c->stride)) {
			spin_lock(&lock);
			if (c->free == NULL)
				return carve_unlock(c, out);
			continue;
		}
		slot_layout(c, slot, out);
		if ((e & (COLD | HOLE)) && guard && install_guard(out->guard_lo, guard) != 0) {
			vp_stack_unmap(out->guard_lo, size + guard);   /* a hole in the arena */
			return EAGAIN;
		}
		return 0;
	}
}

/* Give a slot up for good: a private mapping, or no memory to list it
 * (then it leaves a hole in its arena). */
static void drop(struct stack *s)
{
	vp_stack_unmap(s->guard_lo, s->size + s->guard);
	s->lo = NULL;
}

int stack_alloc(size_t size, size_t guard, struct stack *out)
{
	int err = alloc(size, guard, out);
	if (err == 0)
		stack_vg_register(out);
	return err;
}

void stack_vg_register(struct stack *s)
{
#if PPL_HAVE_VALGRIND
	/* Outside valgrind a client request is a few no-op instructions. */
	s->vg_id = VALGRIND_STACK_REGISTER(s->lo, (char *)s->lo + s->size);
#else
	s->vg_id = 0;
#endif
}

void stack_vg_deregister(struct stack *s)
{
#if PPL_HAVE_VALGRIND
	if (s->vg_id != 0)
		VALGRIND_STACK_DEREGISTER(s->vg_id);
#endif
	s->vg_id = 0;
}

void stack_free(struct stack *s)
{
	if (s->user || s->lo == NULL)
		return;
	stack_vg_deregister(s);
	spin_lock(&lock);
	struct size_class *c = class_for(s->size, s->guard);
	if (c == NULL) {
		spin_unlock(&lock);
		drop(s);
		return;
	}
	char *slot = (char *)s->lo + s->size - c->stride;
	struct hot_slots *h = &hot[c - classes];
	size_t bound = HOT_BYTES / c->stride < HOT_STACKS ? HOT_BYTES / c->stride : HOT_STACKS;
	if (h->n < bound) {
		h->slot[h->n++] = slot;
		spin_unlock(&lock);
		s->lo = NULL;
		return;
	}
	bool hole = holes < HOLES_MAX;
	if (hole)
		holes++;   /* reserved; given back below if not made */
	spin_unlock(&lock);
	uintptr_t entry = (uintptr_t)slot;
	if (hole && vp_stack_punch(slot, c->stride)) {
		entry |= HOLE;
	} else {
		/* Before it is listed: then another thread may take it.  A
		 * guard marker keeps its page table: remove it, so that the
		 * whole slot, page tables too, goes back. */
		if (s->guard && vp_stack_guard_remove(s->guard_lo, s->guard)) {
			vp_stack_release(slot, c->stride);
			entry |= COLD;
		} else {
			vp_stack_release(s->lo, s->size);
		}
	}
	struct free_chunk *fresh = NULL;   /* malloc'd outside the lock */
	for (;;) {
		spin_lock(&lock);
		if (hole && !(entry & HOLE)) {
			holes--;
			hole = false;
		}
		if (c->free != NULL && c->free->n < CHUNK_SLOTS)
			break;
		if (fresh != NULL) {
			fresh->n = 0;
			fresh->next = c->free;
			c->free = fresh;
			fresh = NULL;
			break;
		}
		spin_unlock(&lock);
		fresh = malloc(sizeof *fresh);
		if (fresh == NULL) {
			if (entry & HOLE) {
				spin_lock(&lock);
				holes--;
				spin_unlock(&lock);
			}
			drop(s);
			return;
		}
	}
	c->free->slot[c->free->n++] = (char *)entry;
	spin_unlock(&lock);
	free(fresh);   /* another thread's chunk came first */
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
