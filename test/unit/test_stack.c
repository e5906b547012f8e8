/* Stack arenas: sizes, guards, reuse, and many stacks in few mappings. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
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

static void test_guard_faults(void **state)
{
	struct stack s;
	assert_int_equal(stack_alloc(65536, 8192, &s), 0);
	struct sigaction sa = { .sa_handler = on_segv }, old;
	sigaction(SIGSEGV, &sa, &old);
	volatile int faulted = 0;
	if (sigsetjmp(jb, 1) == 0)
		*((volatile char *)s.lo - 1) = 1;
	else
		faulted = 1;
	sigaction(SIGSEGV, &old, NULL);
	assert_int_equal(faulted, 1);
	stack_free(&s);
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
		cmocka_unit_test(test_many_stacks_few_mappings),
		cmocka_unit_test(test_guard_faults),
		cmocka_unit_test(test_default_size),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
