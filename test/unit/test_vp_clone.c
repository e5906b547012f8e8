/* The clone backend (vp_clone.c) with the glibc-ABI code that builds its
 * TLS blocks: a VP made by raw clone knows itself, has its signal stack,
 * the C library works there (errno, malloc, stdio), and a VP that ended
 * leaves its slot (stack and block) to the next one, whose TLS is fresh
 * again; in a forked child the slots of the threads that did not survive
 * carry new VPs. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "glibcabi.h"
#include "vpdep.h"

#define MS 1000000LL

static __thread int tls_value = 7;

struct test_vp {
	struct vp vp;                 /* first: main receives &vp */
	struct vp *seen_current;
	int seen_tls, seen_errno;
	bool altstack_ok, libc_ok;
	pid_t tid;
	_Atomic int ready;
};

static void ending_main(struct vp *vp)
{
	struct test_vp *t = (struct test_vp *)vp;
	t->seen_current = vp_current();
	t->seen_tls = tls_value;
	t->seen_errno = errno;
	t->tid = (pid_t)syscall(SYS_gettid);
	stack_t ss;
	t->altstack_ok = sigaltstack(NULL, &ss) == 0 && !(ss.ss_flags & SS_DISABLE) &&
			 ss.ss_sp == vp->altstack && ss.ss_size == vp->altstack_size;
	char buf[32];
	char *p = malloc(100);
	t->libc_ok = p != NULL && snprintf(buf, sizeof buf, "%d", 42) == 2 && strcmp(buf, "42") == 0;
	free(p);
	/* Left behind for the next thread on this slot, which must not see them. */
	tls_value = 99;
	errno = EIO;
	atomic_store_explicit(&t->ready, 1, memory_order_release);
	vp_terminate();
}

static bool task_exists(pid_t tid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/self/task/%d", (int)tid);
	DIR *d = opendir(path);
	if (d == NULL)
		return false;
	closedir(d);
	return true;
}

/* Start t, wait until it has ended. */
static void run_to_end(struct test_vp *t)
{
	memset(t, 0, sizeof *t);
	assert_int_equal(vp_create(&t->vp, ending_main), 0);
	assert_true(t->vp.handle != 0);
	int64_t until = clock_now_ns(CLOCK_MONOTONIC) + 5000 * MS;
	while (!atomic_load_explicit(&t->ready, memory_order_acquire) &&
	       clock_now_ns(CLOCK_MONOTONIC) < until)
		sched_yield();
	assert_true(atomic_load_explicit(&t->ready, memory_order_acquire));
	while (task_exists(t->tid) && clock_now_ns(CLOCK_MONOTONIC) < until)
		sched_yield();
	assert_false(task_exists(t->tid));
	assert_ptr_equal(t->seen_current, &t->vp);
	assert_true(t->altstack_ok);
	assert_true(t->libc_ok);
	assert_int_equal(t->seen_tls, 7);
	assert_int_equal(t->seen_errno, 0);
	assert_int_not_equal(t->tid, (pid_t)syscall(SYS_gettid));
}

static void test_slot_reused_fresh(void **state)
{
	static struct test_vp a, b;
	run_to_end(&a);
	uintptr_t first = a.vp.handle;
	run_to_end(&b);
	/* The ended thread's slot, its TLS made fresh. */
	assert_true(b.vp.handle == first);
}

struct waiting_vp {
	struct vp vp;
	_Atomic int ready, quit;
	pid_t tid;
};

static void waiting_main(struct vp *vp)
{
	struct waiting_vp *w = (struct waiting_vp *)vp;
	w->tid = (pid_t)syscall(SYS_gettid);
	atomic_store_explicit(&w->ready, 1, memory_order_release);
	for (;;) {
		uint32_t seen = atomic_load_explicit(&vp->wakeword, memory_order_acquire);
		if (atomic_load_explicit(&w->quit, memory_order_acquire))
			break;
		vp_suspend(vp, seen, -1);
	}
	vp_terminate();
}

static void start_waiting(struct waiting_vp *w)
{
	memset(w, 0, sizeof *w);
	assert_int_equal(vp_create(&w->vp, waiting_main), 0);
	int64_t until = clock_now_ns(CLOCK_MONOTONIC) + 5000 * MS;
	while (!atomic_load_explicit(&w->ready, memory_order_acquire) &&
	       clock_now_ns(CLOCK_MONOTONIC) < until)
		sched_yield();
	assert_true(atomic_load_explicit(&w->ready, memory_order_acquire));
}

/* Forked while one VP runs and one has ended: in the child both slots
 * carry new VPs (the running one's thread is not there). */
static void test_fork_child_slots(void **state)
{
	static struct waiting_vp w;
	static struct test_vp a;
	start_waiting(&w);
	run_to_end(&a);
	pid_t p = fork();
	assert_true(p >= 0);
	if (p == 0) {
		/* This thread runs none of the pool's slots. */
		struct vp self = { .handle = 1 };
		vp_fork_child(&self);
		static struct waiting_vp x, y;
		start_waiting(&x);   /* cmocka's checks exit nonzero on failure */
		start_waiting(&y);
		bool both = (x.vp.handle == w.vp.handle && y.vp.handle == a.vp.handle) ||
			    (x.vp.handle == a.vp.handle && y.vp.handle == w.vp.handle);
		_exit(both ? 0 : 3);
	}
	int st;
	assert_int_equal(waitpid(p, &st, 0), p);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	atomic_store_explicit(&w.quit, 1, memory_order_release);
	vp_resume(&w.vp);
	int64_t until = clock_now_ns(CLOCK_MONOTONIC) + 5000 * MS;
	while (task_exists(w.tid) && clock_now_ns(CLOCK_MONOTONIC) < until)
		sched_yield();
	assert_false(task_exists(w.tid));
}

static int setup(void **state)
{
	tls_mode_init(false, CTX_TLS_AUTO);   /* the layout check: on this thread */
	return vp_backend_select("clone");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slot_reused_fresh),
		cmocka_unit_test(test_fork_child_slots),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
