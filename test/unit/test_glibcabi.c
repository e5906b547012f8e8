/* glibcabi's block for a kernel thread the C library did not create
 * (glibcabi_tls_new/free), as a raw-clone VP backend uses it: a thread made
 * by clone(CLONE_SETTLS) on such a block runs C that needs the thread
 * descriptor (errno, initial-exec and dynamic TLS, malloc, stdio), and a
 * freed block comes back from the pool looking fresh after
 * tls_thread_start(true).  Skipped where the C library's layout is not one
 * libppl knows (ENOTSUP). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "glibcabi.h"
#include "vpdep.h"

#define STACK (256u << 10)

static __thread int image = 42;   /* initial-exec: from the static TLS image */

struct run {
	void *tp;
	bool reused;
	_Atomic pid_t ctid;   /* CLONE_CHILD_CLEARTID: 0 when the thread is gone */
	/* what the thread saw */
	void *self;
	int image_before, err;
	char text[32];
};

static int child(void *arg)
{
	struct run *r = arg;
	if (r->reused)
		tls_thread_start(true);
	r->self = ctx_tls_self();
	r->image_before = image;
	image = 7;                        /* the next user of the block must not see it */
	errno = 0;
	if (close(-1) == 0 || errno != EBADF)
		r->err = -1;
	else
		r->err = errno;
	char *p = malloc(100);
	if (p) {
		snprintf(p, 100, "tid %d", (int)syscall(SYS_gettid));
		strncpy(r->text, p, sizeof r->text - 1);
		free(p);
	}
	return 0;   /* glibc's clone ends the thread with SYS_exit */
}

static void run_once(struct run *r)
{
	char *stack = mmap(NULL, STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
			   -1, 0);
	assert_true(stack != MAP_FAILED);
	r->ctid = 1;
	pid_t ptid;
	int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
		    CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
	int tid = clone(child, stack + STACK, flags, r, &ptid, r->tp, (pid_t *)&r->ctid);
	assert_true(tid > 0);
	struct timespec limit = { 10, 0 };
	pid_t v;
	while ((v = atomic_load(&r->ctid)) != 0)
		assert_int_not_equal(syscall(SYS_futex, &r->ctid, FUTEX_WAIT, v, &limit, NULL, 0) == -1 &&
					     errno == ETIMEDOUT,
				     1);
	munmap(stack, STACK);
}

static void test_kthread_block(void **state)
{
	(void)state;
	struct run r = { 0 };
	r.tp = glibcabi_tls_new(&r.reused);
	if (r.tp == NULL && errno == ENOTSUP)
		skip();
	assert_non_null(r.tp);
	assert_false(r.reused);
	assert_ptr_not_equal(r.tp, ctx_tls_self());
	run_once(&r);
	assert_ptr_equal(r.self, r.tp);
	assert_int_equal(r.image_before, 42);
	assert_int_equal(r.err, EBADF);
	assert_int_equal(strncmp(r.text, "tid ", 4), 0);
	assert_int_equal(image, 42);   /* the main thread's own copy */

	/* Back to the pool, out again: the same block, fresh on its thread. */
	glibcabi_tls_free(r.tp);
	struct run r2 = { 0 };
	r2.tp = glibcabi_tls_new(&r2.reused);
	assert_ptr_equal(r2.tp, r.tp);
	assert_true(r2.reused);
	run_once(&r2);
	assert_ptr_equal(r2.self, r2.tp);
	assert_int_equal(r2.image_before, 42);
	assert_int_equal(r2.err, EBADF);
	glibcabi_tls_free(r2.tp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kthread_block),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
