/* Context switching (context.h), built once per implementation: the
 * assembly of the host CPU and the ucontext reference (-DPPL_CONTEXT_UCONTEXT
 * changes struct ctx, hence two programs from this one file).
 * test/cross/aarch64.sh builds it without cmocka (mini_cmocka.h). */
#include <execinfo.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef PPL_TEST_NO_CMOCKA
#include "mini_cmocka.h"
#else
#include <cmocka.h>
#endif

#include "context.h"

#define STACK_SIZE (256 * 1024)

struct test_stack {
	void *map;
	size_t map_size;
	void *lo;
	size_t size;
};

/* A stack with a guard page below it, so an overflow faults at once. */
static void stack_new(struct test_stack *s, size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	s->map_size = ((size + page - 1) & ~(page - 1)) + page;
	s->map = mmap(NULL, s->map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(s->map != MAP_FAILED);
	assert_int_equal(mprotect(s->map, page, PROT_NONE), 0);
	s->lo = (char *)s->map + page;
	s->size = s->map_size - page;
}

static void stack_del(struct test_stack *s)
{
	munmap(s->map, s->map_size);
}

static bool on_stack(const struct test_stack *s, const void *p)
{
	return (const char *)p >= (const char *)s->lo && (const char *)p < (const char *)s->lo + s->size;
}

/* Hide a pointer's origin from the optimiser, which would otherwise fold
 * alignment checks of objects it knows to be aligned. */
static __attribute__((noinline)) uintptr_t launder(const void *p)
{
	__asm__ __volatile__("" : "+r"(p));
	return (uintptr_t)p;
}

/* ---- ping-pong ------------------------------------------------------------ */

static struct ctx main_ctx, a_ctx, b_ctx;
static long counter;

#define PINGPONG_ROUNDS 200000

static void pingpong_entry(void *arg)
{
	long *c = arg;
	for (;;) {
		*c += 1;
		ctx_switch(&a_ctx, &main_ctx);
	}
}

static void test_pingpong(void **state)
{
	struct test_stack s;
	stack_new(&s, STACK_SIZE);
	counter = 0;
	ctx_make(&a_ctx, s.lo, s.size, pingpong_entry, &counter);
	for (long i = 1; i <= PINGPONG_ROUNDS; i++) {
		ctx_switch(&main_ctx, &a_ctx);
		/* Exactly one increment per round trip: no lost or doubled resume. */
		assert_int_equal(counter, i);
	}
	stack_del(&s);
}

/* ---- ctx_switch_call --------------------------------------------------------- */

struct call_note {
	struct test_stack *to_stack;   /* stack fn must run on */
	struct ctx *saved;             /* the context fn "publishes" */
	int ran;
	bool on_to_stack;
	uintptr_t frame;
};

static struct ctx *published;      /* set by fn, used by b to resume main */

static void note_fn(void *arg)
{
	struct call_note *n = arg;
	int local;
	n->ran++;
	n->on_to_stack = on_stack(n->to_stack, &local);
	n->frame = launder(__builtin_frame_address(0));
	/* What a scheduler does with a parked thread: hand it on.  Safe only
	 * because the switch saved `from` completely before calling us. */
	published = n->saved;
}

static struct call_note *b_note;
static int b_entries;

static void call_entry(void *arg)
{
	for (;;) {
		b_entries++;
		/* fn ran before our first instruction, and main is resumable. */
		assert_int_equal(b_note->ran, b_entries);
		struct ctx *back = published;
		published = NULL;
		ctx_switch(&b_ctx, back);
	}
}

static void test_switch_call(void **state)
{
	struct test_stack s;
	stack_new(&s, STACK_SIZE);
	struct call_note n = { .to_stack = &s, .saved = &main_ctx };
	b_note = &n;
	b_entries = 0;
	ctx_make(&b_ctx, s.lo, s.size, call_entry, NULL);
	/* Into a fresh context (the trampoline path)... */
	ctx_switch_call(&main_ctx, &b_ctx, note_fn, &n);
	assert_int_equal(n.ran, 1);
	assert_int_equal(b_entries, 1);
	assert_true(n.on_to_stack);
	assert_int_equal(n.frame & 15, 0);
	/* ...and into a suspended one (the resume path). */
	for (int i = 2; i <= 1000; i++) {
		n.on_to_stack = false;
		ctx_switch_call(&main_ctx, &b_ctx, note_fn, &n);
		assert_int_equal(n.ran, i);
		assert_int_equal(b_entries, i);
		assert_true(n.on_to_stack);
	}
	stack_del(&s);
}

/* ---- callee-saved registers -------------------------------------------------- */

#if defined(__x86_64__) || defined(__aarch64__)
/* ctx_regs_<cpu>.S: loads the callee-saved registers from in[], switches,
 * stores them to out[] when resumed. */
#if defined(__x86_64__)
#define NREGS 6                    /* rbx rbp r12-r15 */
#else
#define NREGS 18                   /* x19-x28 d8-d15 */
#endif
void regs_switch(struct ctx *from, struct ctx *to, const uint64_t in[NREGS],
		 uint64_t out[NREGS]);

static void regs_entry(void *arg)
{
	uint64_t theirs[NREGS], out[NREGS];
	for (int i = 0; i < NREGS; i++)
		theirs[i] = 0xdead0000u + (uint64_t)i;
	for (;;) {
		regs_switch(&a_ctx, &main_ctx, theirs, out);
		*(int *)arg += memcmp(theirs, out, sizeof out) == 0;
	}
}

static void test_callee_saved(void **state)
{
	struct test_stack s;
	stack_new(&s, STACK_SIZE);
	int other_ok = 0;
	ctx_make(&a_ctx, s.lo, s.size, regs_entry, &other_ok);
	uint64_t mine[NREGS];
	for (int i = 0; i < NREGS; i++)
		mine[i] = 0x1111u * (uint64_t)(i + 1);
	for (int i = 0; i < 100; i++) {
		uint64_t out[NREGS] = { 0 };
		regs_switch(&main_ctx, &a_ctx, mine, out);
		assert_memory_equal(mine, out, sizeof out);
	}
	/* The other side checked its registers 99 times (its first entry
	 * came through the trampoline, not through regs_switch). */
	assert_int_equal(other_ok, 99);
	stack_del(&s);
}
#endif

/* ---- floating-point control words --------------------------------------- */

#if defined(__x86_64__)
#define FP_DEFAULT 0x1F80u
#define FP_OTHER 0x7F80u           /* round toward zero */
#define FP_MINE 0x3F80u            /* round down */
static unsigned fp_get(void)
{
	unsigned v;
	__asm__ __volatile__("stmxcsr %0" : "=m"(v));
	return v & 0xFFC0u;        /* control bits only; flags come and go */
}
static void fp_set(unsigned v)
{
	__asm__ __volatile__("ldmxcsr %0" : : "m"(v));
}
static unsigned x87_get(void)
{
	unsigned short v;
	__asm__ __volatile__("fnstcw %0" : "=m"(v));
	return v;
}
static void x87_set(unsigned v)
{
	unsigned short w = (unsigned short)v;
	__asm__ __volatile__("fldcw %0" : : "m"(w));
}
#define X87_DEFAULT 0x037Fu
#define X87_OTHER 0x0E7Fu          /* round toward zero, extended precision */
#elif defined(__aarch64__)
#define FP_DEFAULT 0x0u
#define FP_OTHER 0x00C00000u       /* FPCR.RMode = round toward zero */
#define FP_MINE 0x00400000u        /* round up */
static unsigned fp_get(void)
{
	uint64_t v;
	__asm__ __volatile__("mrs %0, fpcr" : "=r"(v));
	return (unsigned)v;
}
static void fp_set(unsigned v)
{
	__asm__ __volatile__("msr fpcr, %0" : : "r"((uint64_t)v));
}
#endif

struct fp_seen {
	unsigned at_entry, after_resume;
#if defined(__x86_64__)
	unsigned x87_at_entry, x87_after_resume;
#endif
};

static void fp_entry(void *arg)
{
	struct fp_seen *s = arg;
	s->at_entry = fp_get();
#if defined(__x86_64__)
	s->x87_at_entry = x87_get();
	x87_set(X87_OTHER);
#endif
	fp_set(FP_OTHER);
	ctx_switch(&a_ctx, &main_ctx);
	s->after_resume = fp_get();
#if defined(__x86_64__)
	s->x87_after_resume = x87_get();
#endif
	fp_set(FP_DEFAULT);
	ctx_switch(&a_ctx, &main_ctx);
	assert_true(false);
}

static void test_fp_control(void **state)
{
	struct test_stack s;
	stack_new(&s, STACK_SIZE);
	struct fp_seen seen = { 0 };
	assert_int_equal(fp_get(), FP_DEFAULT);
	ctx_make(&a_ctx, s.lo, s.size, fp_entry, &seen);
	ctx_switch(&main_ctx, &a_ctx);
	assert_int_equal(seen.at_entry, FP_DEFAULT);
	/* The other context's rounding mode did not leak into ours... */
	assert_int_equal(fp_get(), FP_DEFAULT);
#if defined(__x86_64__)
	assert_int_equal(seen.x87_at_entry, X87_DEFAULT);
	assert_int_equal(x87_get(), X87_DEFAULT);
	/* ...nor ours into it: change ours while it is suspended. */
	x87_set(X87_OTHER & ~0x0C00u);
#endif
	fp_set(FP_MINE);
	ctx_switch(&main_ctx, &a_ctx);
	assert_int_equal(seen.after_resume, FP_OTHER);
	assert_int_equal(fp_get(), FP_MINE);
#if defined(__x86_64__)
	assert_int_equal(seen.x87_after_resume, X87_OTHER);
	assert_int_equal(x87_get(), X87_OTHER & ~0x0C00u);
	x87_set(X87_DEFAULT);
#endif
	fp_set(FP_DEFAULT);
	stack_del(&s);
}

#ifndef PPL_CONTEXT_UCONTEXT
/* The assembly starts every context with the ABI's default modes; the
 * ucontext reference copies its creator's (getcontext), so only here. */
static void test_fp_fresh_default(void **state)
{
	struct test_stack s;
	stack_new(&s, STACK_SIZE);
	struct fp_seen seen = { 0 };
	fp_set(FP_OTHER);
	ctx_make(&a_ctx, s.lo, s.size, fp_entry, &seen);
	ctx_switch(&main_ctx, &a_ctx);
	fp_set(FP_DEFAULT);
	assert_int_equal(seen.at_entry, FP_DEFAULT);
	stack_del(&s);
}
#endif

/* ---- stack use: alignment, recursion, floating point --------------------- */

struct stack_report {
	struct test_stack *s;
	uintptr_t frame;
	uintptr_t vec;
	double sum;
	uintptr_t top_frame;      /* recurse's frame at level `top` */
	uintptr_t bottom_frame;   /* and at level 0 */
	bool deep_on_stack;
	int top;
	int depth;
	int frames;
};

typedef double v2df __attribute__((vector_size(16)));

/* Each level keeps a 256-byte array live across the recursive call, so the
 * depth really consumes stack.  How much a level takes is the compiler's
 * choice (about 300 bytes at -O2; 560 at -O3, which unrolls and vectorises
 * the loops and spills their registers across the call), so the caller
 * measures it.  noipa: a clone for the measuring call's constant depth
 * (gcc -O3 makes one) would have frames of another size. */
static __attribute__((noinline, noipa)) double recurse(int n, struct stack_report *r)
{
	double a[32];
	for (int i = 0; i < 32; i++)
		a[i] = (double)n / (i + 1);
	/* The frame, not the array: the compiler may put the array at
	 * different places in the frame on different paths. */
	if (n == r->top)
		r->top_frame = launder(__builtin_frame_address(0));
	if (n == 0) {
		r->bottom_frame = launder(__builtin_frame_address(0));
		r->deep_on_stack = on_stack(r->s, a);
		return 0.0;
	}
	double below = recurse(n - 1, r);
	double s = 0.0;
	for (int i = 0; i < 32; i++)
		s += a[i] * 0.5;
	return below + s;
}

static void stack_entry(void *arg)
{
	struct stack_report *r = arg;
	v2df v = { 1.0, 2.0 };
	r->frame = launder(__builtin_frame_address(0));
	r->vec = launder(&v);
	/* A level's size, from 8 levels; then enough levels to fill seven
	 * eighths of the stack (the rest: this frame, the trampoline's, and
	 * backtrace's below them afterwards). */
	r->top = 8;
	(void)recurse(r->top, r);
	size_t level = (r->top_frame - r->bottom_frame) / (size_t)r->top;
	r->depth = level ? (int)((r->s->size - r->s->size / 8) / level) : 0;
	r->top = r->depth;
	r->sum = recurse(r->depth, r);
	void *bt[64];
	r->frames = backtrace(bt, 64);
	ctx_switch(&a_ctx, &main_ctx);
	assert_true(false);
}

static void test_stack_use(void **state)
{
	/* Recursion through seven eighths of the 256 KiB stack, whatever a
	 * level takes at this optimisation level. */
	for (size_t misalign = 0; misalign < 16; misalign += 8) {
		struct test_stack s;
		stack_new(&s, STACK_SIZE);
		struct stack_report r = { .s = &s };
		/* An odd top and size: ctx_make must align the stack itself. */
		ctx_make(&a_ctx, s.lo, s.size - misalign - 3, stack_entry, &r);
		ctx_switch(&main_ctx, &a_ctx);
		double expect = 0.0;
		for (int n = 1; n <= r.depth; n++) {
			double level = 0.0;
			for (int i = 0; i < 32; i++)
				level += (double)n / (i + 1) * 0.5;
			expect += level;
		}
		assert_true(r.depth > 0);
		assert_true(r.top_frame - r.bottom_frame >= STACK_SIZE / 4 * 3);
		assert_true(r.deep_on_stack);
		assert_true(r.sum == expect);
		assert_int_equal(r.frame & 15, 0);
		assert_int_equal(r.vec & 15, 0);
		/* The unwinder stops at the trampoline: entry, its caller and
		 * little else.  A bad frame would run away or crash here. */
		assert_true(r.frames >= 1 && r.frames <= 4);
		stack_del(&s);
	}
}

/* ---- migration between kernel threads ------------------------------------- */

static struct ctx home_ctx;
static pid_t host_tid;

/* gettid, not pthread_self: glibc declares pthread_self `const`, so the
 * compiler may hoist it out of the loop, which is exactly the stale
 * thread-pointer hazard of a context that changes kernel threads. */
static pid_t tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static void migrant_entry(void *arg)
{
	pid_t *where = arg;
	for (;;) {
		*where = tid();
		ctx_switch(&a_ctx, &home_ctx);
	}
}

static void *migrate_host(void *arg)
{
	host_tid = tid();
	/* A kernel thread of its own resumes a context main started. */
	ctx_switch(&home_ctx, &a_ctx);
	return NULL;
}

static void test_migration(void **state)
{
	struct test_stack s;
	stack_new(&s, STACK_SIZE);
	pid_t where = 0;
	ctx_make(&a_ctx, s.lo, s.size, migrant_entry, &where);
	ctx_switch(&home_ctx, &a_ctx);
	assert_int_equal(where, tid());
	for (int i = 0; i < 3; i++) {
		pthread_t t;
		assert_int_equal(pthread_create(&t, NULL, migrate_host, NULL), 0);
		assert_int_equal(pthread_join(t, NULL), 0);
		assert_int_not_equal(host_tid, tid());
		assert_int_equal(where, host_tid);
	}
	stack_del(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pingpong),
		cmocka_unit_test(test_switch_call),
#if defined(__x86_64__) || defined(__aarch64__)
		cmocka_unit_test(test_callee_saved),
#endif
		cmocka_unit_test(test_fp_control),
#ifndef PPL_CONTEXT_UCONTEXT
		cmocka_unit_test(test_fp_fresh_default),
#endif
		cmocka_unit_test(test_stack_use),
		cmocka_unit_test(test_migration),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
