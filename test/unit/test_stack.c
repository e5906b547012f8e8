/* Stack arenas: sizes, guards, reuse, many stacks in few mappings, and what
 * freed stacks keep resident (pages, guard markers, page tables). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cmocka.h>

#include "pthread_impl.h"

extern size_t ppl_env_stack_size;

static size_t count_mappings(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	assert_non_null(f);
	size_t n = 0;
	int c;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static void test_alloc_sizes(void **state)
{
	struct stack s;
	assert_int_equal(stack_alloc(100000, 4096, &s), 0);
	assert_true(s.size >= 100000 && s.size % 4096 == 0);
	assert_int_equal(s.guard, 4096);
	assert_ptr_equal((char *)s.guard_lo + s.guard, s.lo);
	memset(s.lo, 0xab, s.size);      /* all of it is writable */
	assert_true(stack_guard_contains(&s, s.guard_lo));
	assert_false(stack_guard_contains(&s, s.lo));
	stack_free(&s);
	assert_int_equal(stack_alloc(0, 0, &s), EINVAL);
}

static void test_reuse(void **state)
{
	struct stack a, b;
	assert_int_equal(stack_alloc(65536, 4096, &a), 0);
	void *lo = a.lo;
	stack_free(&a);
	assert_int_equal(stack_alloc(65536, 4096, &b), 0);
	assert_ptr_equal(b.lo, lo);      /* the freed slot comes back first */
	stack_free(&b);
}

static void test_many_stacks_few_mappings(void **state)
{
	enum { N = 20000 };
	static struct stack s[N];
	size_t before = count_mappings();
	for (int i = 0; i < N; i++) {
		assert_int_equal(stack_alloc(65536, 4096, &s[i]), 0);
		*((char *)s[i].lo + s[i].size - 1) = 1;   /* touch the top */
	}
	size_t after = count_mappings();
	/* NPTL would need 2 mappings per stack; guards must not split arenas
	 * (on kernels with MADV_GUARD_INSTALL). */
	if (after - before > 64)
		print_message("note: %zu new mappings (mprotect guard fallback?)\n", after - before);
	assert_true(after - before < 2 * N);
	for (int i = 0; i < N; i++)
		stack_free(&s[i]);
}

static sigjmp_buf jb;
static void on_segv(int sig) { siglongjmp(jb, 1); }

/* A write just below the stack faults (its guard). */
static bool guard_faults(const struct stack *s)
{
	struct sigaction sa = { .sa_handler = on_segv }, old;
	sigaction(SIGSEGV, &sa, &old);
	volatile bool faulted = false;
	if (sigsetjmp(jb, 1) == 0)
		*((volatile char *)s->lo - 1) = 1;
	else
		faulted = true;
	sigaction(SIGSEGV, &old, NULL);
	return faulted;
}

static void test_guard_faults(void **state)
{
	struct stack s;
	assert_int_equal(stack_alloc(65536, 8192, &s), 0);
	assert_true(guard_faults(&s));
	stack_free(&s);
}

/* Page tables of this process, in KiB (VmPTE). */
static long page_tables_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	assert_non_null(f);
	char line[256];
	long kib = -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmPTE: %ld", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static bool kernel_at_least(int major, int minor)
{
	struct utsname u;
	int a = 0, b = 0;
	return uname(&u) == 0 && sscanf(u.release, "%d.%d", &a, &b) == 2 &&
	       (a > major || (a == major && b >= minor));
}

/* Page tables (KiB) before n stacks of size were taken, with them taken and
 * their top `touch` bytes written, and after all were freed; and where the
 * last one freed was. */
struct pt_use {
	long before, touched, freed;
	void *last;
};

static struct pt_use take_touch_free(struct stack *s, int n, size_t size, size_t touch,
				     size_t align)
{
	struct pt_use u = { .before = page_tables_kib() };
	for (int i = 0; i < n; i++) {
		assert_int_equal(stack_alloc(size, 4096, &s[i]), 0);
		if (align)
			assert_int_equal(((uintptr_t)s[i].lo + s[i].size) % align, 0);
		memset((char *)s[i].lo + s[i].size - touch, 0x5a, touch);
	}
	u.touched = page_tables_kib();
	u.last = s[n - 1].lo;
	for (int i = 0; i < n; i++)
		stack_free(&s[i]);
	u.freed = page_tables_kib();
	print_message("page tables: %ld KiB before, %ld with %d stacks, %ld freed\n", u.before,
		      u.touched, n, u.freed);
	return u;
}

/* The slot freed last comes back once the hot ones (a few dozen at most,
 * taken first) are gone: zeroed (its top `touch` bytes read 0) and guarded
 * again; whole: all of it is written. */
static void retake_cold(size_t size, size_t touch, void *last, bool whole)
{
	enum { MAX_TAKES = 100 };
	static struct stack r[MAX_TAKES];
	int n = 0;
	do {
		assert_true(n < MAX_TAKES);
		assert_int_equal(stack_alloc(size, 4096, &r[n]), 0);
	} while (r[n++].lo != last);
	assert_true(n > 1);   /* a hot one came first */
	struct stack *c = &r[n - 1];
	const char *top = (const char *)c->lo + c->size - touch;
	for (size_t i = 0; i < touch; i++)
		assert_int_equal(top[i], 0);
	assert_true(guard_faults(c));
	if (whole)
		memset((char *)c->lo, 1, c->size);   /* all of it usable */
	for (int i = 0; i < n; i++)
		stack_free(&r[i]);
}

/* Freed stacks past the hot ones give everything back: a reused one reads
 * zero, faults in its guard again, and (Linux 6.14+) their page tables
 * are gone.  Slots of 2 MiB or more end on a page table boundary. */
static void test_cold_slots(void **state)
{
	enum { N = 300 };
	static struct stack s[N];
	const size_t size = (3 << 20) - 4096;   /* a class of its own: 3 MiB slots -> 4 MiB */
	struct pt_use u = take_touch_free(s, N, size, 8192, 2u << 20);
	if (kernel_at_least(6, 14))
		assert_true(u.freed - u.before < (u.touched - u.before) / 3);   /* the hot ones stay */
	retake_cold(size, 8192, u.last, false);
}

/* Small slots share page tables, which MADV_DONTNEED of one slot never
 * frees: cold ones are unmapped instead (holes in the arena), so that a
 * run of them gives its page tables back on any kernel; a hole taken
 * again reads zero and faults in its guard. */
static void test_cold_small_slots(void **state)
{
	enum { N = 2000 };
	static struct stack s[N];
	const size_t size = 60 << 10;   /* with its guard, 64 KiB slots: 32 to a page table */
	struct pt_use u = take_touch_free(s, N, size, 4096, 0);
	assert_true(u.touched - u.before >= 200);
	assert_true(u.freed - u.before < (u.touched - u.before) / 3);   /* the hot ones stay */
	retake_cold(size, 4096, u.last, true);
}

static void test_default_size(void **state)
{
	size_t d = stack_default_size();
	assert_true(d >= 16384 && d % 4096 == 0);
	ppl_env_stack_size = 100000;
	assert_int_equal(stack_default_size(), 102400);
	ppl_env_stack_size = 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc_sizes),
		cmocka_unit_test(test_reuse),
		/* Before the 20,000 stacks, whose holes take stack.c's budget. */
		cmocka_unit_test(test_cold_small_slots),
		cmocka_unit_test(test_many_stacks_few_mappings),
		cmocka_unit_test(test_guard_faults),
		cmocka_unit_test(test_cold_slots),
		cmocka_unit_test(test_default_size),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
