/* Just enough of cmocka's interface for test/unit/test_context.c and
 * test_clone_raw.c to run
 * where cmocka is not installed (cross builds under qemu).  A failed check
 * prints its location and exits non-zero. */
#ifndef PPL_MINI_CMOCKA_H
#define PPL_MINI_CMOCKA_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void mc_fail_at(const char *file, int line, const char *what)
{
	fprintf(stderr, "FAIL %s:%d: %s\n", file, line, what);
	exit(1);
}
#define mc_fail(what) mc_fail_at(__FILE__, __LINE__, what)
#define assert_true(c) ((c) ? (void)0 : mc_fail(#c))
#define assert_false(c) (!(c) ? (void)0 : mc_fail("!(" #c ")"))
#define assert_int_equal(a, b) ((long long)(a) == (long long)(b) ? (void)0 : mc_fail(#a " == " #b))
#define assert_int_not_equal(a, b) ((long long)(a) != (long long)(b) ? (void)0 : mc_fail(#a " != " #b))
#define assert_ptr_equal(a, b) ((const void *)(a) == (const void *)(b) ? (void)0 : mc_fail(#a " == " #b))
#define assert_non_null(p) ((p) != NULL ? (void)0 : mc_fail(#p " != NULL"))
#define assert_memory_equal(a, b, n) (memcmp((a), (b), (n)) == 0 ? (void)0 : mc_fail("memcmp " #a " " #b))

struct CMUnitTest {
	const char *name;
	void (*fn)(void **);
};
#define cmocka_unit_test(f) { #f, f }

static inline int mc_run(const struct CMUnitTest *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		void *state = NULL;
		printf("[ RUN ] %s\n", t[i].name);
		t[i].fn(&state);
		printf("[ OK  ] %s\n", t[i].name);
	}
	return 0;
}
#define cmocka_run_group_tests(tests, setup, teardown) \
	mc_run(tests, sizeof(tests) / sizeof((tests)[0]))

#endif
