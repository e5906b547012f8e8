/* TLS blocks and thread descriptors on glibc: everything libppl knows about
 * glibc's thread descriptor lives in this file (docs/tls.md), for
 * vpindep's per-thread TLS and for a VP backend's kernel threads
 * (glibcabi_tls_new).
 *
 * A user thread's block comes from ld.so's own allocator
 * (_dl_allocate_tls, GLIBC_PRIVATE), so its static TLS and DTV have the
 * layout every module's TLS accesses expect.  The descriptor (struct
 * pthread) at the thread pointer is all zeros; the fields set in
 * block_init are the ones glibc reads in a thread it did not create and
 * that break something when zero (the list in docs/tls.md says what).
 *
 * Start-up gate: the field offsets come from a table for the glibc
 * versions libppl was checked against.  The offsets glibc publishes for
 * libthread_db (_thread_db_* descriptors) and the main thread's own
 * descriptor must agree with the table, or libppl falls back to shared TLS.
 *
 * Reuse: blocks are pooled with their TCBs (glibc's per-thread malloc
 * state in them is freed only for threads glibc created).  A reused block
 * is made to look fresh on the thread itself (tls_thread_start): the init
 * image of every module except the C library is copied again, and the C
 * library's visible per-thread state (errno, locale) is reset.  The C
 * library's module is left alone because it holds the malloc tcache and
 * arena of the block, which must survive. */
#include <dlfcn.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <locale.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "glibcabi.h"
#include "vpdep.h"

bool tls_per_thread;

/* The descriptor fields libppl writes, as offsets from the thread pointer.
 * The first group is cross-checked with glibc's _thread_db_* descriptors. */
struct layout {
	const char *version;
	uint32_t sizeof_pthread, list, tid, specific, dtvp, cancelhandling, start_routine;
	/* not published by glibc: checked against the main thread where it can be */
	uint32_t multiple_threads, stack_guard, pointer_guard, feature_1;
	uint32_t robust_prev, robust_head, specific_1st, stackblock, stackblock_size, res;
	int64_t rseq_offset;
	/* the C library's cancellation (tls_cancel_*) */
	uint32_t cleanup, cleanup_jmp_buf;
};

#if defined(__x86_64__)
static const struct layout known[] = {
	{ "2.36", 2368, 704, 720, 1296, 8, 776, 1592,
	  24, 40, 48, 72,
	  728, 736, 784, 1680, 1688, 1720,
	  2336,
	  760, 768 },
};
#else
static const struct layout known[1];   /* none checked yet: shared TLS */
#endif

static const struct layout *L;
bool tls_libc_cancel;
static void libc_cancel_init(void);

/* Resolved once by the gate. */
static void *(*allocate_tls)(void *);
static void (*deallocate_tls)(void *, bool);
static void (*get_tls_static_info)(size_t *, size_t *);
static void (*call_tls_dtors)(void);
static ptrdiff_t resp_off;        /* __resp, from the thread pointer */
static ptrdiff_t rseq_off;        /* __rseq_offset */
static size_t static_size;        /* static TLS area + descriptor */
static size_t static_align;
static uint32_t lm_tls_modid, lm_tls_offset;   /* struct link_map fields */
static char *main_tp;

/* Every block ever made (they are never freed), for tls_after_dlopen. */
static spin_t blocks_lock PPL_FORK_STATE;
static void **blocks;
static size_t nblocks, cap_blocks;

#define F(tp, off, type) (*(type *)((char *)(tp) + (off)))

/* Pointers to the start of the blocks glibc allocates for libppl's TLS
 * blocks and kernel threads (their static TLS and their DTV), under
 * blocks_lock.  glibc itself points into them only at an offset (the
 * thread pointer, the DTV's second element), which valgrind's memcheck
 * and LeakSanitizer report as "possibly lost" at exit.  Keeping them costs
 * two words per block.  A DTV that glibc grows later (a dlopen'ed module
 * with TLS) is not followed. */
static void **kept;
static size_t nkept, cap_kept;

/* Room for one more in *arr (n used of *cap, first capacity `first`);
 * callers hold blocks_lock: no preemption in a replaced malloc (preempt.c).
 * False when out of memory. */
static bool room_for(void ***arr, size_t n, size_t *cap, size_t first)
{
	if (n < *cap)
		return true;
	size_t ncap = *cap ? *cap * 2 : first;
	void **na = realloc(*arr, ncap * sizeof *na);
	if (na == NULL)
		return false;
	*arr = na;
	*cap = ncap;
	return true;
}

/* Keep p; caller holds blocks_lock.  False when out of memory. */
static bool keep(void *p)
{
	if (!room_for(&kept, nkept, &cap_kept, 128))
		return false;
	kept[nkept++] = p;
	return true;
}

/* glibc's DTV pointer is one element (16 bytes) into its allocation. */
static void *dtv_start(char *tp)
{
	char *dtv = F(tp, L->dtvp, char *);
	return dtv ? dtv - 16 : NULL;
}

/* _dl_allocate_tls_storage keeps the malloc'd start of a static TLS
 * block right after the descriptor (tcb_to_pointer_to_free_location);
 * NULL unless it looks like one (below tp, within the block). */
static void *storage_start(char *tp)
{
	char *a = F(tp, L->sizeof_pthread, char *);
	return a <= tp && (size_t)(tp - a) <= static_size + 4096 ? a : NULL;
}

void tls_keep_kthread(void *tp)
{
	if (!tls_per_thread)
		return;
	void *d = dtv_start(tp ? tp : ctx_tls_self());
	spin_lock(&blocks_lock);
	/* Once: a helper that ends and starts again (retire.c) often gets the
	 * same stack, and DTV, back from the C library's cache. */
	size_t i = 0;
	while (i < nkept && kept[i] != d)
		i++;
	if (d && i == nkept)
		keep(d);
	spin_unlock(&blocks_lock);
}

/* glibc's private symbols, through vpdep's one resolver (uncached: the
 * gate runs once). */
static void *libc_private(const char *name)
{
	return vp_libc_lookup(name, "GLIBC_PRIVATE");
}

static const uint32_t *db(const char *name)
{
	return libc_private(name);
}

/* _thread_db_<field> is {bits, count, offset}; _thread_db_sizeof_* one word. */
static bool db_field(const char *name, uint32_t off)
{
	const uint32_t *d = db(name);
	return d != NULL && d[2] == off;
}

static const char *gate(void)
{
	const char *v = gnu_get_libc_version();
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		if (known[i].version && strcmp(known[i].version, v) == 0)
			L = &known[i];
	if (L == NULL)
		return "C library version or architecture not known to libppl";
	const uint32_t *sz = db("_thread_db_sizeof_pthread");
	if (sz == NULL || sz[0] != L->sizeof_pthread || !db_field("_thread_db_pthread_list", L->list) ||
	    !db_field("_thread_db_pthread_tid", L->tid) ||
	    !db_field("_thread_db_pthread_specific", L->specific) ||
	    !db_field("_thread_db_pthread_dtvp", L->dtvp) ||
	    !db_field("_thread_db_pthread_cancelhandling", L->cancelhandling) ||
	    !db_field("_thread_db_pthread_start_routine", L->start_routine))
		return "struct pthread layout differs from the known one";
	const uint32_t *m = db("_thread_db_link_map_l_tls_modid");
	const uint32_t *o = db("_thread_db_link_map_l_tls_offset");
	if (m == NULL || o == NULL)
		return "link_map TLS fields not published";
	lm_tls_modid = m[2];
	lm_tls_offset = o[2];

	allocate_tls = (void *(*)(void *))libc_private("_dl_allocate_tls");
	deallocate_tls = (void (*)(void *, bool))libc_private("_dl_deallocate_tls");
	get_tls_static_info = (void (*)(size_t *, size_t *))libc_private("_dl_get_tls_static_info");
	call_tls_dtors = (void (*)(void))libc_private("__call_tls_dtors");
	const ptrdiff_t *rs = vp_libc_lookup("__rseq_offset", "GLIBC_2.35");
	char *resp = libc_private("__resp");   /* this (main) thread's slot */
	if (!allocate_tls || !deallocate_tls || !get_tls_static_info || !call_tls_dtors || !rs ||
	    !resp)
		return "a GLIBC_PRIVATE entry point is missing";
	if (*rs != L->rseq_offset)
		return "rseq area at an unknown offset";
	rseq_off = *rs;

	/* The main thread's descriptor, which glibc filled itself. */
	main_tp = ctx_tls_self();
	resp_off = resp - main_tp;
	if (F(main_tp, 16, char *) != main_tp || F(main_tp, L->tid, pid_t) != vp_process_id() ||
	    F(main_tp, L->robust_head, char *) != main_tp + L->robust_head ||
	    F(main_tp, L->robust_head + 8, long) != -32 ||
	    F(main_tp, L->list, void *) == NULL || resp_off >= 0)
		return "the main thread's descriptor does not match the known layout";
	get_tls_static_info(&static_size, &static_align);
	return NULL;
}

/* The gate, once (it reads the main thread's descriptor through the caller's
 * thread pointer: the first call is on the main thread, at start-up). */
static const char *gate_once(void)
{
	static spin_t lock;
	static bool done;
	static const char *why;
	spin_lock(&lock);
	if (!done) {
		why = gate();
		done = true;
	}
	spin_unlock(&lock);
	return why;
}

/* ---- static TLS images of the loaded modules ----------------------------------- */

struct module {
	size_t modid;
	ptrdiff_t offset;      /* static block at tp - offset; 0 if dynamic */
	const void *image;
	size_t filesz, memsz;
	bool reset;            /* static and not the C library's: a reused block
				* gets its image again */
};

struct modtab {
	struct modtab *older;   /* the table this one replaced: readers may still
				 * use it, so it is kept (and reachable) */
	unsigned long gen;      /* modgen when it was collected */
	size_t max_modid;       /* the largest module id with TLS */
	size_t n;
	struct module m[];
};

static struct modtab *_Atomic modtab;   /* immutable snapshots; old ones leak */

/* Moves whenever the module list may have changed: libppl's dlopen,
 * dlmopen and dlclose (tls_modules_changed).  A thread start checks it
 * instead of asking dl_iterate_phdr (its lock and callback: 190
 * instructions of a create's ~2,450).  A module the C library loads or
 * unloads itself (not through dlopen/dlclose: NSS, iconv and libgcc_s
 * have no TLS) shows at the next change. */
static _Atomic unsigned long modgen = 1;

void tls_modules_changed(void)
{
	atomic_fetch_add_explicit(&modgen, 1, memory_order_acq_rel);
}

struct collect {
	struct modtab *t;
	size_t cap;
};

static int collect_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct collect *c = arg;
	if (info->dlpi_tls_modid == 0)
		return 0;
	if (info->dlpi_tls_modid > c->t->max_modid)
		c->t->max_modid = info->dlpi_tls_modid;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_TLS || c->t->n >= c->cap)
			continue;
		c->t->m[c->t->n++] = (struct module){
			.modid = info->dlpi_tls_modid,
			.image = (const char *)info->dlpi_addr + ph->p_vaddr,
			.filesz = ph->p_filesz,
			.memsz = ph->p_memsz,
		};
	}
	return 0;
}

static void copy_image(char *dst, const struct module *m)
{
	memcpy(dst, m->image, m->filesz);
	memset(dst + m->filesz, 0, m->memsz - m->filesz);
}

/* The C library's module: the one whose static block holds errno. */
static bool is_libc(char *tp, const struct module *m)
{
	char *lo = tp - m->offset;
	char *e = (char *)&errno;
	return m->offset != 0 && e >= lo && e < lo + m->memsz;
}

/* A new table of the loaded modules with TLS, collected at generation gen
 * to replace t; static offsets from their link_maps. */
static __attribute__((noinline)) struct modtab *collect_modules(struct modtab *t, unsigned long gen)
{
	size_t cap = 256;
	struct modtab *nt = malloc(sizeof *nt + cap * sizeof nt->m[0]);
	if (nt == NULL)
		return t;
	nt->gen = gen;   /* read before collecting: a change meanwhile rebuilds */
	nt->max_modid = 0;
	nt->n = 0;
	struct collect c = { nt, cap };
	dl_iterate_phdr(collect_cb, &c);
	for (struct link_map *lm = _r_debug.r_map; lm; lm = lm->l_next) {
		size_t id = F(lm, lm_tls_modid, size_t);
		ptrdiff_t off = F(lm, lm_tls_offset, ptrdiff_t);
		if (id == 0 || off == 0 || off == -1)   /* no TLS, or dynamic */
			continue;
		for (size_t i = 0; i < nt->n; i++)
			if (nt->m[i].modid == id)
				nt->m[i].offset = off;
	}
	char *tp = ctx_tls_self();
	for (size_t i = 0; i < nt->n; i++)
		nt->m[i].reset = nt->m[i].offset != 0 && !is_libc(tp, &nt->m[i]);
	/* Chained to the one it replaces (or to one another thread published
	 * meanwhile): none is freed, all stay reachable. */
	nt->older = t;
	while (!atomic_compare_exchange_weak_explicit(&modtab, &nt->older, nt, memory_order_release,
						      memory_order_acquire))
		;
	return nt;
}

/* The loaded modules with TLS: the cached table while the list is unchanged. */
static inline struct modtab *modules(void)
{
	unsigned long gen = atomic_load_explicit(&modgen, memory_order_acquire);
	struct modtab *t = atomic_load_explicit(&modtab, memory_order_acquire);
	if (ppl_likely(t && t->gen == gen))
		return t;
	return collect_modules(t, gen);
}

/* ---- blocks --------------------------------------------------------------------- */

static void block_init(char *tp)
{
	void *dtv = F(tp, L->dtvp, void *);
	memset(tp, 0, L->sizeof_pthread);
	F(tp, L->dtvp, void *) = dtv;
	F(tp, 0, char *) = tp;                   /* header.tcb: %fs:0 */
	F(tp, 16, char *) = tp;                  /* header.self */
	/* Else malloc and stdio skip their atomics and locks. */
	F(tp, L->multiple_threads, int) = 1;
	/* Compiled code checks %fs:0x28 across the switch; setjmp and atexit
	 * mangle with the pointer guard: both must be the process's. */
	F(tp, L->stack_guard, uintptr_t) = F(main_tp, L->stack_guard, uintptr_t);
	F(tp, L->pointer_guard, uintptr_t) = F(main_tp, L->pointer_guard, uintptr_t);
	F(tp, L->feature_1, uint32_t) = F(main_tp, L->feature_1, uint32_t);
	/* glibc's own locks record the owner's tid: its internal rwlocks
	 * report EDEADLK (and the caller goes on unlocked) when the owner
	 * field equals the caller's tid, and "no writer" is 0.  Each block
	 * gets a distinct id above the kernel's PID_MAX_LIMIT (2^22), so it
	 * never equals a real thread's.  fork()'s child stores its real tid. */
	static _Atomic int32_t next_tid = 1 << 30;
	F(tp, L->tid, int32_t) = atomic_fetch_add_explicit(&next_tid, 1, memory_order_relaxed);
	/* fork()'s child unlinks the forking thread's node from glibc's list. */
	F(tp, L->list, char *) = tp + L->list;
	F(tp, L->list + 8, char *) = tp + L->list;
	/* An empty robust-mutex list is a self-pointer. */
	F(tp, L->robust_prev, char *) = tp + L->robust_head;
	F(tp, L->robust_head, char *) = tp + L->robust_head;
	F(tp, L->robust_head + 8, long) = F(main_tp, L->robust_head + 8, long);
	F(tp, L->specific, char *) = tp + L->specific_1st;
	/* No rseq registration for a user thread (it moves between kernel
	 * threads): cpu_id = RSEQ_CPU_ID_REGISTRATION_FAILED, so
	 * sched_getcpu() asks the kernel. */
	F(tp, rseq_off + 4, int32_t) = -2;
	/* The resolver's state lives in the descriptor, as for glibc's threads. */
	F(tp, resp_off, char *) = tp + L->res;
}

/* With the `ldt` switch method a block goes below 4 GiB (a segment base is
 * 32 bits), laid out as NPTL lays one out at the top of its stacks: the
 * static TLS area, then the descriptor at the aligned thread pointer. */
static char *low_block(void)
{
	size_t a = static_align < 64 ? 64 : static_align;
	size_t size = (static_size + 2 * a - 1) & ~(a - 1);
	char *mem = ctx_tls_low_alloc(size, a);
	if (mem == NULL)
		return NULL;
	char *tp = (char *)(((uintptr_t)mem + size - L->sizeof_pthread) & ~(uintptr_t)(a - 1));
	return allocate_tls(tp);   /* fresh zero pages: only the DTV is malloc'ed */
}

/* Record a new block (tls_after_dlopen, the leak checker's pointers);
 * caller holds blocks_lock.  False when out of memory. */
static bool add_block(char *tp)
{
	if (!room_for(&blocks, nblocks, &cap_blocks, 64))
		return false;
	blocks[nblocks++] = tp;
	void *a = storage_start(tp), *d = dtv_start(tp);
	if (a)
		keep(a);
	if (d)
		keep(d);
	return true;
}

void *tls_block_low(void)
{
	char *tp = low_block();
	if (tp == NULL)
		return NULL;
	block_init(tp);
	spin_lock(&blocks_lock);
	bool ok = add_block(tp);
	spin_unlock(&blocks_lock);
	return ok ? tp : NULL;
}

void *tls_block_new(void)
{
	char *tp = low_block();
	if (tp == NULL)
		tp = allocate_tls(NULL);
	if (tp == NULL)
		return NULL;
	block_init(tp);
	spin_lock(&blocks_lock);
	bool ok = add_block(tp);
	spin_unlock(&blocks_lock);
	return ok ? tp : NULL;   /* the block leaks: out of memory anyway */
}

/* ---- blocks at the top of a user thread's stack ------------------------------------
 *
 * Laid out as NPTL's (variant II): the descriptor at the top, the static TLS
 * area below the thread pointer, and below that a small header of libppl's,
 * then the thread's frames.  A block here lives as long as its stack; the
 * C library's own static TLS (its module: errno, the malloc tcache and
 * arena, locale, __resp) is carried to the TCB's next block in a record,
 * as the pool kept it in the same block before, so the malloc state of
 * the threads the C library did not make is never dropped. */

struct slot_header {
	size_t index;          /* in `slot_blocks` */
	void *dtv;             /* the DTV's start, for leak checkers (dtv_start) */
};

struct tls_libc {
	struct tls_libc *next; /* in `parked` */
	bool full;             /* holds a block's C library state */
	char bytes[];          /* the C library module's static TLS */
};

/* Full records of TCBs that went cold, under blocks_lock: the malloc
 * state they carry is never dropped, it goes to the next block made. */
static struct tls_libc *parked;

void tls_libc_park(struct tls_libc **rec)
{
	struct tls_libc *r = *rec;
	*rec = NULL;
	if (r == NULL)
		return;
	if (!r->full) {
		free(r);
		return;
	}
	spin_lock(&blocks_lock);
	r->next = parked;
	parked = r;
	spin_unlock(&blocks_lock);
}

static void **slot_blocks;           /* live blocks in stacks, under blocks_lock */
static size_t nslot, cap_slot;
static ptrdiff_t libc_off;           /* the C library module's static TLS: tp - libc_off */
static size_t libc_size;             /* its memsz; 0: not found (no carrying) */

static size_t block_align(void)
{
	return static_align < 64 ? 64 : static_align;
}

size_t tls_block_room(void)
{
	if (!tls_per_thread)
		return 0;
	return L->sizeof_pthread + block_align() + static_size + sizeof(struct slot_header) + 64;
}

static struct slot_header *header_of(char *tp)
{
	uintptr_t h = (uintptr_t)tp - (static_size - L->sizeof_pthread) - sizeof(struct slot_header);
	return (struct slot_header *)(h & ~(uintptr_t)15);
}

void *tls_block_in_stack(void *lo, size_t size, struct tls_libc **recp, size_t *used)
{
	uintptr_t top = (uintptr_t)lo + size;
	char *tp = (char *)((top - L->sizeof_pthread) & ~(uintptr_t)(block_align() - 1));
	struct slot_header *h = header_of(tp);
	if ((uintptr_t)h < (uintptr_t)lo)
		return NULL;
	/* Static TLS images of every module, a fresh DTV (malloc'ed). */
	if (allocate_tls(tp) == NULL)
		return NULL;
	block_init(tp);
	h->dtv = dtv_start(tp);
	spin_lock(&blocks_lock);
	if (!room_for(&slot_blocks, nslot, &cap_slot, 256)) {
		spin_unlock(&blocks_lock);
		deallocate_tls(tp, false);
		return NULL;
	}
	h->index = nslot;
	slot_blocks[nslot++] = tp;
	if ((*recp == NULL || !(*recp)->full) && parked != NULL) {
		struct tls_libc *r = parked;
		parked = r->next;
		spin_unlock(&blocks_lock);
		free(*recp);
		*recp = r;
	} else {
		spin_unlock(&blocks_lock);
	}
	struct tls_libc *rec = *recp;
	if (rec != NULL && rec->full) {
		memcpy(tp - libc_off, rec->bytes, libc_size);
		F(tp, resp_off, char *) = tp + L->res;   /* it pointed into the old block */
		rec->full = false;
	}
	*used = top - ((uintptr_t)h & ~(uintptr_t)63);
	return tp;
}

void tls_block_leave(void *tp, struct tls_libc **rec)
{
	if (libc_size != 0) {
		if (*rec == NULL)
			*rec = malloc(sizeof **rec + libc_size);
		if (*rec != NULL) {   /* else its malloc cache is lost: out of memory anyway */
			memcpy((*rec)->bytes, (char *)tp - libc_off, libc_size);
			(*rec)->full = true;
		}
	}
	deallocate_tls(tp, false);   /* the DTV and the dynamic TLS blocks */
	struct slot_header *h = header_of(tp);
	spin_lock(&blocks_lock);
	char *last = slot_blocks[--nslot];
	slot_blocks[h->index] = last;
	header_of(last)->index = h->index;
	spin_unlock(&blocks_lock);
}

/* ---- blocks for kernel threads glibc did not create ---------------------------------------- */

static _Atomic size_t kthread_blocks;   /* made by glibcabi_tls_new: dlopen must update them */
static void **pool;                     /* freed ones, under blocks_lock */
static size_t npool, cap_pool;

void *glibcabi_tls_new(bool *reused)
{
	*reused = false;
	if (gate_once() != NULL) {
		errno = ENOTSUP;
		return NULL;
	}
	spin_lock(&blocks_lock);
	void *tp = npool ? pool[--npool] : NULL;
	spin_unlock(&blocks_lock);
	if (tp) {
		*reused = true;
		return tp;
	}
	/* Anywhere: a kernel thread's block needs no LDT selector. */
	if ((tp = allocate_tls(NULL)) == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	block_init(tp);
	spin_lock(&blocks_lock);
	bool ok = add_block(tp);
	spin_unlock(&blocks_lock);
	if (!ok) {
		errno = ENOMEM;
		return NULL;   /* the block leaks: out of memory anyway */
	}
	atomic_fetch_add_explicit(&kthread_blocks, 1, memory_order_release);
	return tp;
}

void glibcabi_tls_free(void *tp)
{
	spin_lock(&blocks_lock);
	if (!room_for(&pool, npool, &cap_pool, 16)) {
		spin_unlock(&blocks_lock);
		return;   /* not pooled: it stays in the block list, unused */
	}
	pool[npool++] = tp;
	spin_unlock(&blocks_lock);
}

void tls_block_set_stack(void *tp, void *lo, size_t size)
{
	F(tp, L->stackblock, void *) = lo;
	F(tp, L->stackblock_size, size_t) = size;
}

void tls_adopt_main(void)
{
	/* The main thread keeps its block but may now run on any VP, while
	 * the kernel would go on writing VP 0's CPU into that block's rseq
	 * area.  Unregister it: sched_getcpu() then asks the kernel, as in
	 * every other user thread. */
	int32_t *cpu_id = &F(main_tp, rseq_off + 4, int32_t);
	const unsigned *rsize = vp_libc_lookup("__rseq_size", "GLIBC_2.35");
	if (*cpu_id < 0 || rsize == NULL || *rsize == 0)
		return;
	/* The kernel wants the length registered: glibc 2.36 registers 32
	 * bytes (the original struct rseq) but publishes 20 in __rseq_size
	 * (the fields it knows), so that size alone is EINVAL; then the
	 * kernel went on writing VP 0's CPU there, and sched_getcpu() in the
	 * main thread said CPU 0 on any VP (tst-thread-affinity-pthread2). */
	if (vp_rseq_unregister(main_tp + rseq_off, *rsize) == 0 ||
	    (*rsize < 32 && vp_rseq_unregister(main_tp + rseq_off, 32) == 0))
		*cpu_id = -2;
}

/* ---- thread start and exit ---------------------------------------------------------- */

void tls_thread_start(bool reused)
{
	if (reused) {
		char *tp = ctx_tls_self();
		struct vp *vp = vp_current();   /* libppl's own slot is reset too */
		struct modtab *t = modules();
		for (size_t i = 0; t && i < t->n; i++) {
			const struct module *m = &t->m[i];
			if (m->reset)
				copy_image(tp - m->offset, m);
		}
		/* Dynamic TLS the previous thread allocated: give it back and mark
		 * the slot unallocated, so __tls_get_addr makes a fresh copy on
		 * first use.  (Copying the image into the old block instead would
		 * be wrong if its module was dlclosed and the slot reused.)  The
		 * DTV is {counter | {val, to_free}}[], with the length at [-1].
		 * Slots past the largest module id loaded belong to unloaded
		 * modules, which glibc frees itself at the thread's next DTV
		 * update (as for its own threads). */
		char *dtv = F(tp, L->dtvp, char *);
		size_t ndtv = F(dtv - 16, 0, size_t);
		if (t && t->max_modid < ndtv)
			ndtv = t->max_modid;
		char *static_lo = tp - static_size;
		for (size_t id = 1; id <= ndtv; id++) {
			char **val = &F(dtv, 16 * id, char *);
			void **to_free = &F(dtv, 16 * id + 8, void *);
			if (*val == (char *)-1 || *val == NULL || (*val >= static_lo && *val < tp))
				continue;
			free(*to_free);
			*to_free = NULL;
			*val = (char *)-1;   /* TLS_DTV_UNALLOCATED */
		}
		vp_set_current_in(tp, vp);
	}
	errno = 0;
	/* Locale to the global one, and glibc's ctype caches (__ctype_init). */
	uselocale(LC_GLOBAL_LOCALE);
}

void tls_thread_exit(void)
{
	call_tls_dtors();
	/* Free a pending dlerror() message: the block outlives the thread. */
	(void)dlerror();
}

/* ---- dlopen ------------------------------------------------------------------------------ */

/* modid -> static offset already initialised in every block. */
#define MAX_TRACKED 1024
static ptrdiff_t done_off[MAX_TRACKED];
static const void *done_image[MAX_TRACKED];
static spin_t dl_lock PPL_FORK_STATE;

static void mark_all_done(struct modtab *t)
{
	for (size_t i = 0; t && i < t->n; i++)
		if (t->m[i].modid < MAX_TRACKED) {
			done_off[t->m[i].modid] = t->m[i].offset;
			done_image[t->m[i].modid] = t->m[i].image;
		}
}

void tls_after_dlopen(void)
{
	tls_modules_changed();
	if (!tls_per_thread && atomic_load_explicit(&kthread_blocks, memory_order_acquire) == 0)
		return;
	struct modtab *t = modules();
	spin_lock(&dl_lock);
	for (size_t i = 0; t && i < t->n; i++) {
		const struct module *m = &t->m[i];
		if (m->offset == 0 || m->modid >= MAX_TRACKED)
			continue;
		if (done_off[m->modid] == m->offset && done_image[m->modid] == m->image)
			continue;
		/* New module with static TLS: glibc initialised it only in the
		 * threads it knows (kernel threads), not in user-thread blocks. */
		spin_lock(&blocks_lock);
		for (size_t b = 0; b < nblocks; b++)
			copy_image((char *)blocks[b] - m->offset, m);
		for (size_t b = 0; b < nslot; b++)
			copy_image((char *)slot_blocks[b] - m->offset, m);
		spin_unlock(&blocks_lock);
		done_off[m->modid] = m->offset;
		done_image[m->modid] = m->image;
	}
	spin_unlock(&dl_lock);
}

/* ---- mode --------------------------------------------------------------------------------- */

static char mode_name[32] = "shared";

const char *tls_mode_name(void)
{
	return mode_name;
}

/* Run once, on the initial thread (it reads that thread's descriptor), in
 * either TLS mode: a VP backend may build kernel threads' blocks too. */
static const char *gate_why = "the C library's layout was not checked";

void tls_mode_init(bool want_per_thread, enum ctx_tls_switch sw)
{
	const char *why = gate_why = gate_once();
	if (!want_per_thread)
		return;
	if (why) {
		char buf[256];
		int n = snprintf(buf, sizeof buf,
				 "libppl: per-thread TLS unavailable (%s, glibc %s); using shared TLS\n",
				 why, gnu_get_libc_version());
		if (n > 0)
			vp_write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
		return;
	}
	const char *no = NULL;
	enum ctx_tls_switch got = ctx_tls_setup(sw, &no);
	if (no) {
		char buf[256];
		int n = snprintf(buf, sizeof buf, "libppl: TLS switch %s unavailable (%s); using %s\n",
				 ctx_tls_switch_name(sw), no, ctx_tls_switch_name(got));
		if (n > 0)
			vp_write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
	}
	snprintf(mode_name, sizeof mode_name, "per-thread/%s", ctx_tls_switch_name(got));
	struct modtab *t = modules();
	mark_all_done(t);
	for (size_t i = 0; t && i < t->n; i++)
		if (is_libc(main_tp, &t->m[i])) {
			libc_off = t->m[i].offset;
			libc_size = t->m[i].memsz;
		}
	tls_per_thread = true;
	libc_cancel_init();
}

/* ---- fork ------------------------------------------------------------------------------------ */

void tls_atfork(bool prepare)
{
	if (prepare) {
		spin_lock(&dl_lock);      /* the order of tls_after_dlopen */
		spin_lock(&blocks_lock);
		return;
	}
	spin_unlock(&blocks_lock);
	spin_unlock(&dl_lock);
}

/* ---- the C library's cancellation points (docs/cancel.md) ---------------------------------
 *
 * glibc 2.36 acts on a request inside its own cancellable calls from the
 * descriptor's `cancelhandling` word: __pthread_enable_asynccancel, around
 * each such system call, sets the type bit and, if the request bit is
 * already set (and the thread enabled, not exiting), calls __pthread_unwind
 * with the descriptor's `cleanup_jmp_buf`.  libppl keeps the bits in step
 * with its own word (cancel.c) and makes that unwind libppl's:
 *  - cleanup_jmp_buf is a buffer (struct ult's libc_unwind) whose saved
 *    stack pointer is the descriptor's stack top, so glibc's stop function
 *    decides at the first frame to jump there, after running the old-style
 *    handlers of the descriptor's `cleanup` list down to the buffer's
 *    (NULL);
 *  - the last entry of that list is libppl's hook, so glibc runs it first
 *    thing (after the C library's own entries, which are inner), and the
 *    hook unwinds the thread with libppl's unwinder from there (through
 *    glibc's unwinder frames, which have unwind information).  glibc never
 *    gets to the jump, whose target is a fatal message.
 *  - The hook must survive every longjmp, which glibc follows with
 *    __pthread_cleanup_upto: it runs and unlinks the entries between the
 *    stack pointer and the jump's target, comparing addresses relative to
 *    the stack top (stackblock + stackblock_size).  A user thread's hook is
 *    in ult_entry's frame, above every frame a longjmp can reach.  The main
 *    thread's stack is not libppl's: its hook is libppl's static data and
 *    its descriptor's stack top is moved just above it, below the whole
 *    main stack, so every stack address compares below the hook and keeps
 *    its order (glibc uses the field only for those comparisons and the
 *    alloca cut-off, which stays at its maximum).
 * The bit values are glibc 2.36's (nptl/descr.h; tls.h), as its
 * cancellable calls test them on x86_64. */

static void (*hook_fn)(void *);    /* libppl's hook routine (cancel.c) */

static struct {
	struct _pthread_cleanup_buffer hook;
	_Alignas(16) char stack[4096];   /* where a stray jump would land */
} main_hook;
static __pthread_unwind_buf_t main_unwind;

/* glibc's PTR_MANGLE on x86_64. */
static uintptr_t mangle(uintptr_t p)
{
	p ^= F(main_tp, L->pointer_guard, uintptr_t);
	return (p << 0x11) | (p >> (64 - 0x11));
}

static _Noreturn void stray_jump(void)
{
	static const char msg[] =
		"libppl: fatal: the C library unwound a thread without libppl's cancellation hook\n";
	vp_write(2, msg, sizeof msg - 1);
	abort();
}

static void set_redirect(char *tp, __pthread_unwind_buf_t *b)
{
	uintptr_t top = F(tp, L->stackblock, uintptr_t) + F(tp, L->stackblock_size, uintptr_t);
	/* __jmp_buf on x86_64: rbx rbp r12 r13 r14 r15 rsp pc, the last two mangled. */
	long sp = (long)mangle(top), pc = (long)mangle((uintptr_t)stray_jump);
	/* A pooled thread's buffer, already set for the same stack: nothing
	 * writes it but this (glibc only reads it; libppl interposes
	 * __pthread_register_cancel), so it is still right. */
	if (F(tp, L->cleanup_jmp_buf, void *) == b && b->__cancel_jmp_buf[0].__cancel_jmp_buf[6] == sp &&
	    b->__cancel_jmp_buf[0].__cancel_jmp_buf[7] == pc)
		return;
	memset(b, 0, sizeof *b);
	b->__cancel_jmp_buf[0].__cancel_jmp_buf[6] = sp;
	b->__cancel_jmp_buf[0].__cancel_jmp_buf[7] = pc;
	F(tp, L->cleanup_jmp_buf, void *) = b;
}

static void libc_cancel_init(void)
{
#if defined(__x86_64__)
	char here;
	if (F(main_tp, L->cleanup, void *) != NULL || F(main_tp, L->cancelhandling, int) != 0)
		return;   /* libppl's own cancellation points only */
	uintptr_t top = ((uintptr_t)(main_hook.stack + sizeof main_hook.stack)) & ~(uintptr_t)15;
	if (top >= (uintptr_t)&here)
		return;   /* the main stack is not above libppl's data */
	F(main_tp, L->stackblock, uintptr_t) = 0;
	F(main_tp, L->stackblock_size, uintptr_t) = top;
	tls_libc_cancel = true;
#endif
}

void *tls_robust_head(void *tp)
{
	return tls_per_thread && L != NULL && tp != NULL ? (char *)tp + L->robust_head : NULL;
}

void *tls_main_block(void)
{
	/* glibc registers its own buffer for the main thread just before
	 * main(), after libppl's constructor: replace it before the first
	 * request.  Nothing else writes the field (libppl interposes
	 * __pthread_register_cancel). */
	if (F(main_tp, L->cleanup_jmp_buf, void *) != &main_unwind)
		set_redirect(main_tp, &main_unwind);
	return main_tp;
}

int tls_cancel_bits(void *tp, int clear, int set)
{
	_Atomic int *w = (_Atomic int *)((char *)tp + L->cancelhandling);
	int old = atomic_load_explicit(w, memory_order_seq_cst);
	while (!atomic_compare_exchange_weak_explicit(w, &old, (old & ~clear) | set,
						      memory_order_seq_cst, memory_order_seq_cst))
		;
	return old;
}

void tls_cancel_reset(void *tp, __pthread_unwind_buf_t *redirect)
{
	if (!tls_libc_cancel)
		return;
	atomic_store_explicit((_Atomic int *)((char *)tp + L->cancelhandling), 0,
			      memory_order_relaxed);
	F(tp, L->cleanup, void *) = NULL;
	set_redirect(tp, redirect);
}

void tls_cancel_hook(struct _pthread_cleanup_buffer *hook, void (*fn)(void *))
{
	if (!tls_libc_cancel)
		return;
	char *tp = hook ? ctx_tls_self() : main_tp;
	if (hook == NULL)
		hook = &main_hook.hook;
	hook_fn = fn;
	memset(hook, 0, sizeof *hook);
	hook->__routine = fn;
	/* The bottom of the list: whatever the C library holds stays above it. */
	struct _pthread_cleanup_buffer **p = &F(tp, L->cleanup, struct _pthread_cleanup_buffer *);
	while (*p != NULL && *p != hook)
		p = &(*p)->__prev;
	*p = hook;
}

void tls_cancel_hooked(void)
{
	char *tp = ctx_tls_self();
	struct _pthread_cleanup_buffer *c = F(tp, L->cleanup, struct _pthread_cleanup_buffer *);
	while (c != NULL && c->__routine != hook_fn)
		c = c->__prev;
	F(tp, L->cleanup, struct _pthread_cleanup_buffer *) = c;
}

void tls_cancel_run_cleanups(uintptr_t below, bool all)
{
	char *tp = ctx_tls_self();
	struct _pthread_cleanup_buffer **head = &F(tp, L->cleanup, struct _pthread_cleanup_buffer *);
	struct _pthread_cleanup_buffer *c;
	while ((c = *head) != NULL && c->__routine != hook_fn && (all || (uintptr_t)c < below)) {
		*head = c->__prev;   /* off the list before it runs, as glibc does */
		c->__routine(c->__arg);
	}
}

/* ---- kernel threads made by a VP backend (vpdep/glibcabi_kthread.h) ---------------------- */

#include "../vpdep/internal/glibcabi_kthread.h"

void *glibcabi_kthread_block(const char **why)
{
	if (gate_why != NULL) {
		*why = gate_why;
		return NULL;
	}
	void *tp = tls_block_new();
	if (tp == NULL)
		*why = "no memory for a TLS block";
	return tp;
}

void glibcabi_kthread_block_reset(void *tp)
{
	block_init(tp);
}

void glibcabi_kthread_block_stack(void *tp, void *lo, size_t size)
{
	tls_block_set_stack(tp, lo, size);
}

pid_t *glibcabi_kthread_tid(void *tp)
{
	return &F(tp, L->tid, pid_t);
}

void glibcabi_kthread_start(bool reused)
{
	tls_thread_start(reused);
}

void glibcabi_kthread_keep_dtv(void)
{
	tls_keep_kthread(NULL);
}

void glibcabi_process_threaded(void)
{
	static _Atomic bool done;
	if (gate_why != NULL || atomic_exchange(&done, true))
		return;
	glibcabi_set_multi_threaded();
	/* malloc skips its arena locks on a thread whose descriptor says it is
	 * the only one (the initial thread's, until a pthread_create). */
	__atomic_store_n(&F(main_tp, L->multiple_threads, int), 1, __ATOMIC_RELAXED);
	void (*enable_locks)(void) =
		(void (*)(void))vp_libc_lookup("_IO_enable_locks", "GLIBC_PRIVATE");
	if (enable_locks == NULL) {
		static const char msg[] =
			"libppl: fatal: the C library has no _IO_enable_locks: stdio would not lock\n";
		vp_write(2, msg, sizeof msg - 1);
		abort();
	}
	enable_locks();
}
