/* TCB memory: chunks of libppl's own, never unmapped, whose unneeded
 * pages go back to the kernel.
 *
 * A TCB is never freed: a stale pthread_t must still read as a TCB (state
 * ULT_FREE gives ESRCH), and sigroute.c, threadid.c and deadlock.c visit
 * every TCB there ever was.  On the heap, though, a burst of threads left
 * all its TCBs resident for good, and fork copies the page-table entry of
 * every resident page: 10,000 pooled TCBs (16 MB with their records) made
 * each fork ten times NPTL's.  So TCBs are carved here, a few to a group
 * of whole pages (four 1,024-byte TCBs to a 4 KiB page), and thread.c's
 * cache keeps only a bounded number of them; the others go cold.  When
 * every TCB of a group is cold, its pages are released (MADV_DONTNEED):
 * they read as zeros, state ULT_FREE, and neither RSS nor fork pays for
 * them.  A cold TCB is taken again before a new one is carved.
 *
 * Each chunk is aligned to its size, and its first pages hold the records
 * of its groups, which are never released: a TCB finds its group by its
 * address, and the walkers skip released groups without touching their
 * pages (a read would map the zero page and its page table again). */
#include <stdint.h>
#include <string.h>

#include "tcbpool.h"
#include "ult.h"

/* A chunk is 32 MiB, so that a burst's TCBs share their upper page
 * tables and the page of their records: mapped 2 MiB at a time between
 * the stack arenas, each chunk kept a table of every level of its own,
 * which fork copied.  Under an address-space limit (RLIMIT_AS counts what
 * is reserved) 2 MiB. */
#define CHUNK_BYTES (32UL << 20)
#define SMALL_CHUNK_BYTES (2UL << 20)
#define PT_REACH (2UL << 20)       /* what one last-level page table maps */
#define MAX_CHUNKS 16384

struct tcb_group {
	uint32_t cold;             /* bit i: its TCB i is cold (under lock) */
	_Atomic uint32_t detached; /* bit i: its TCB i went cold detached (kept when released) */
	_Atomic bool released;     /* its pages went back (read lock-free) */
	bool queued;               /* on the list of groups with a cold TCB */
	int32_t next;              /* next such group (chunk * per_chunk + index), or -1 */
};

struct tcb_chunk {
	uint32_t index;            /* in the table */
	_Atomic uint32_t carved;   /* TCBs carved, in address order */
	struct tcb_group g[];
};

/* Named for tools/gdb/libppl.py, which walks it. */
struct tcb_pool {
	size_t chunk_bytes;        /* a power of two; each chunk aligned to it */
	size_t stride;             /* bytes per TCB (a multiple of 64) */
	size_t per_group;          /* TCBs per group */
	size_t group_bytes;        /* whole pages */
	size_t meta_bytes;         /* the chunk's records, whole pages */
	size_t per_chunk;          /* groups per chunk */
	struct tcb_chunk *_Atomic chunk[MAX_CHUNKS];
	_Atomic uint32_t nchunks;
};
struct tcb_pool ppl_tcb_pool PPL_HIDDEN;
#define P ppl_tcb_pool

/* LeakSanitizer scans the heap and the globals, not libppl's mappings: the
 * chunks hold the only pointers to what TCBs own (key blocks, the records
 * of the C library's state), so they are its roots when it runs. */
extern void __lsan_register_root_region(const void *p, size_t size) __attribute__((weak));

#if defined(__x86_64__)
/* Four TCBs to a 4 KiB page; a field more goes in a hole of ult.h. */
_Static_assert(sizeof(struct ult) <= 1024, "struct ult grew past a quarter page");
#endif

static spin_t lock PPL_FORK_STATE;
static int32_t cold_head = -1;     /* groups with a cold TCB, under lock */

static void geometry(void)
{
	size_t page = stack_page_size();
	P.chunk_bytes = vp_limit_address_space() ? SMALL_CHUNK_BYTES : CHUNK_BYTES;
	P.stride = (sizeof(struct ult) + 63) & ~(size_t)63;
	P.group_bytes = (P.stride + page - 1) / page * page;
	P.per_group = P.group_bytes / P.stride;
	if (P.per_group > 32)
		P.per_group = 32;          /* the bits of `cold` */
	size_t groups = P.chunk_bytes / P.group_bytes;
	P.meta_bytes = (sizeof(struct tcb_chunk) + groups * sizeof(struct tcb_group) + page - 1) /
		       page * page;
	P.per_chunk = (P.chunk_bytes - P.meta_bytes) / P.group_bytes;
}

static char *tcb_at(struct tcb_chunk *c, size_t g, size_t i)
{
	return (char *)c + P.meta_bytes + g * P.group_bytes + i * P.stride;
}

/* Where t sits in chunk c: its group and its index there. */
static void locate(const struct tcb_chunk *c, const struct ult *t, size_t *gi, size_t *i)
{
	size_t off = (size_t)((const char *)t - (const char *)c) - P.meta_bytes;
	*gi = off / P.group_bytes;
	*i = off % P.group_bytes / P.stride;
}

static char *map_aligned(size_t bytes)
{
	char *m = vp_stack_map(2 * bytes);
	if (m == NULL)
		return NULL;
	char *a = (char *)(((uintptr_t)m + bytes - 1) & ~(uintptr_t)(bytes - 1));
	if (a > m)
		vp_stack_unmap(m, (size_t)(a - m));
	if (a + bytes < m + 2 * bytes)
		vp_stack_unmap(a + bytes, (size_t)(m + 2 * bytes - (a + bytes)));
	return a;
}

/* A new chunk, aligned to its size; caller holds lock.  NULL: no memory. */
static struct tcb_chunk *chunk_new(void)
{
	uint32_t n = atomic_load_explicit(&P.nchunks, memory_order_relaxed);
	if (n == MAX_CHUNKS)
		return NULL;
	char *a = map_aligned(P.chunk_bytes);
	if (a == NULL)
		return NULL;
	struct tcb_chunk *c = (struct tcb_chunk *)a;   /* zeroed: nothing carved, no group cold */
	c->index = n;
	if (__lsan_register_root_region)
		__lsan_register_root_region(c, P.chunk_bytes);
	atomic_store_explicit(&P.chunk[n], c, memory_order_relaxed);
	atomic_store_explicit(&P.nchunks, n + 1, memory_order_release);
	return c;
}

static struct ult *carve_locked(void);

struct ult *tcb_pool_take(void)
{
	spin_lock(&lock);
	if (P.stride == 0)
		geometry();
	if (cold_head >= 0) {
		struct tcb_chunk *c = P.chunk[cold_head / (int32_t)P.per_chunk];
		size_t gi = (size_t)cold_head % P.per_chunk;
		struct tcb_group *g = &c->g[gi];
		int i = __builtin_ctz(g->cold);
		g->cold &= ~(1u << i);
		atomic_fetch_and_explicit(&g->detached, ~(1u << i), memory_order_relaxed);
		if (g->cold == 0) {
			cold_head = g->next;
			g->queued = false;
		}
		/* Its pages come back, zeroed, as it is written. */
		atomic_store_explicit(&g->released, false, memory_order_relaxed);
		spin_unlock(&lock);
		return (struct ult *)tcb_at(c, gi, (size_t)i);
	}
	return carve_locked();
}

struct ult *tcb_pool_take_new(void)
{
	spin_lock(&lock);
	if (P.stride == 0)
		geometry();
	return carve_locked();
}

/* A TCB never used; caller holds lock, which this releases. */
static struct ult *carve_locked(void)
{
	uint32_t n = atomic_load_explicit(&P.nchunks, memory_order_relaxed);
	struct tcb_chunk *c = n ? P.chunk[n - 1] : NULL;
	uint32_t k = c ? atomic_load_explicit(&c->carved, memory_order_relaxed) : 0;
	if (c == NULL || k == P.per_chunk * P.per_group) {
		if ((c = chunk_new()) == NULL) {
			spin_unlock(&lock);
			return NULL;
		}
		k = 0;
	}
	/* Published before it is written: zeros read as ULT_FREE. */
	atomic_store_explicit(&c->carved, k + 1, memory_order_release);
	spin_unlock(&lock);
	return (struct ult *)tcb_at(c, k / P.per_group, k % P.per_group);
}

/* Once every group a last-level page table maps is released, zap that
 * range whole: only a zap of a whole table frees it (Linux 6.14+), and an
 * empty table still costs every fork.  Caller holds lock. */
static void release_table(struct tcb_chunk *c, size_t gi)
{
	uintptr_t at = (uintptr_t)tcb_at(c, gi, 0);
	char *lo = (char *)(at & ~(uintptr_t)(PT_REACH - 1));
	if (lo < tcb_at(c, 0, 0) || PT_REACH % P.group_bytes != 0 ||
	    (size_t)(lo - tcb_at(c, 0, 0)) % P.group_bytes != 0)
		return;   /* the records' table, or groups across tables */
	size_t first = (size_t)(lo - tcb_at(c, 0, 0)) / P.group_bytes;
	size_t n = PT_REACH / P.group_bytes;
	if (first + n > P.per_chunk)
		return;
	for (size_t i = first; i < first + n; i++)
		if (!atomic_load_explicit(&c->g[i].released, memory_order_relaxed))
			return;
	vp_stack_release(lo, PT_REACH);
}

void tcb_pool_cool(struct ult *t)
{
	struct tcb_chunk *c = (struct tcb_chunk *)((uintptr_t)t & ~(uintptr_t)(P.chunk_bytes - 1));
	size_t gi, i;
	locate(c, t, &gi, &i);
	struct tcb_group *g = &c->g[gi];
	spin_lock(&lock);
	g->cold |= 1u << i;
	if (t->detached)
		atomic_fetch_or_explicit(&g->detached, 1u << i, memory_order_relaxed);
	if (!g->queued) {
		g->next = cold_head;
		cold_head = (int32_t)(c->index * P.per_chunk + gi);
		g->queued = true;
	}
	/* A group of the newest chunk may not be carved whole yet: it is
	 * released only once all its TCBs exist and are cold. */
	bool whole = (gi + 1) * P.per_group <= atomic_load_explicit(&c->carved, memory_order_relaxed);
	if (whole && g->cold == (P.per_group == 32 ? ~0u : (1u << P.per_group) - 1)) {
		atomic_store_explicit(&g->released, true, memory_order_relaxed);
		vp_stack_release(tcb_at(c, gi, 0), P.group_bytes);
		release_table(c, gi);
	}
	spin_unlock(&lock);
}

/* Whether t is a TCB of the pool whose pages went back while its thread,
 * ended, was detached: they read as zeros now, its flag included.  The
 * chunk is looked for, never read from t's address, which may be any
 * pthread_t a program passes. */
bool tcb_pool_ended_detached(const struct ult *t)
{
	uintptr_t base = (uintptr_t)t & ~(uintptr_t)(P.chunk_bytes - 1);
	uint32_t n = atomic_load_explicit(&P.nchunks, memory_order_acquire);
	for (uint32_t ci = 0; ci < n; ci++) {
		struct tcb_chunk *c = atomic_load_explicit(&P.chunk[ci], memory_order_relaxed);
		if ((uintptr_t)c != base)
			continue;
		if ((size_t)((const char *)t - (const char *)c) < P.meta_bytes)
			return false;
		size_t gi, i;
		locate(c, t, &gi, &i);
		if (gi >= P.per_chunk || i >= P.per_group)
			return false;
		struct tcb_group *g = &c->g[gi];
		return atomic_load_explicit(&g->released, memory_order_relaxed) &&
		       (atomic_load_explicit(&g->detached, memory_order_relaxed) >> i & 1);
	}
	return false;
}

/* The TCB after position (ci, k), skipping released groups, or NULL. */
static struct ult *walk_from(uint32_t ci, size_t k)
{
	uint32_t n = atomic_load_explicit(&P.nchunks, memory_order_acquire);
	for (; ci < n; ci++, k = 0) {
		struct tcb_chunk *c = atomic_load_explicit(&P.chunk[ci], memory_order_relaxed);
		size_t carved = atomic_load_explicit(&c->carved, memory_order_acquire);
		for (; k < carved; k++) {
			struct tcb_group *g = &c->g[k / P.per_group];
			if (atomic_load_explicit(&g->released, memory_order_relaxed)) {
				k = (k / P.per_group + 1) * P.per_group - 1;
				continue;
			}
			return (struct ult *)tcb_at(c, k / P.per_group, k % P.per_group);
		}
	}
	return NULL;
}

struct ult *tcb_pool_first(void)
{
	return walk_from(0, 0);
}

struct ult *tcb_pool_next(struct ult *t)
{
	struct tcb_chunk *c = (struct tcb_chunk *)((uintptr_t)t & ~(uintptr_t)(P.chunk_bytes - 1));
	size_t gi, i;
	locate(c, t, &gi, &i);
	return walk_from(c->index, gi * P.per_group + i + 1);
}

void tcb_pool_atfork(enum fork_phase ph)
{
	if (ph == FORK_PREPARE)
		spin_lock(&lock);
	else
		spin_unlock(&lock);
}
