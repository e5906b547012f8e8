/* vp_clone_raw (clone_raw.h, arch/<cpu>/clone_raw.S): the child runs
 * fn(arg) on the given stack, 16-byte aligned, in the same address space;
 * the parent gets its tid, also stored at ptid; CLONE_CHILD_CLEARTID clears
 * ctid and wakes its futex when the child is gone; an error is -errno.
 * The child shares the caller's TLS here (no CLONE_SETTLS), so it makes
 * raw system calls only. */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef PPL_TEST_NO_CMOCKA
#include "mini_cmocka.h"   /* test/cross/aarch64.sh */
#else
#include <cmocka.h>
#endif
#include <linux/futex.h>

#include "clone_raw.h"

#define STACK_SIZE (64 * 1024)

struct seen {
	void *arg;
	uintptr_t local;     /* an aligned local's address in the child */
	long tid;
	_Atomic int ran;
};

static struct seen seen;

static _Noreturn void child(void *arg)
{
	_Alignas(16) volatile char local[16];
	local[0] = 1;
	seen.arg = arg;
	seen.local = (uintptr_t)local;
	seen.tid = syscall(SYS_gettid);
	atomic_store(&seen.ran, 1);
	for (;;)
		syscall(SYS_exit, 0);
}

static void test_child_runs_and_clears_tid(void **state)
{
	char *stack = malloc(STACK_SIZE);
	assert_non_null(stack);
	_Atomic pid_t tid = -1;
	unsigned long flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
			      CLONE_SYSVSEM | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
	/* A misaligned top: the entry aligns it down. */
	long r = vp_clone_raw(flags, stack + STACK_SIZE - 3, (pid_t *)&tid, NULL, (pid_t *)&tid,
			      child, &seen);
	assert_true(r > 0);
	/* Wait until the kernel has cleared the word: the child is gone. */
	for (;;) {
		pid_t t = atomic_load(&tid);
		if (t == 0)
			break;
		assert_int_equal(t, r);   /* CLONE_PARENT_SETTID */
		syscall(SYS_futex, &tid, FUTEX_WAIT, t, NULL, NULL, 0);
	}
	assert_int_equal(atomic_load(&seen.ran), 1);
	assert_ptr_equal(seen.arg, &seen);
	assert_int_equal(seen.tid, r);
	assert_true(seen.local >= (uintptr_t)stack && seen.local < (uintptr_t)stack + STACK_SIZE);
	assert_int_equal(seen.local % 16, 0);
	free(stack);   /* nothing runs there any more */
}

static void test_error_is_negative_errno(void **state)
{
	char stack[256];
	/* CLONE_THREAD without CLONE_SIGHAND: EINVAL, no child. */
	long r = vp_clone_raw(CLONE_VM | CLONE_THREAD, stack + sizeof stack, NULL, NULL, NULL, child,
			      NULL);
	assert_int_equal(r, -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_child_runs_and_clears_tid),
		cmocka_unit_test(test_error_is_negative_errno),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
