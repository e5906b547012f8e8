/* Virtual processors with the kthread backend: backend selection,
 * vp_current, the signal stack, the suspend/resume handshake, termination
 * and the C library's thread helpers.  This program does not link libppl:
 * pthread_* here is the C library's, which is what the backend finds with
 * dlsym(RTLD_NEXT) too. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "vpdep.h"

#define MS 1000000LL
#define ROUNDS 20000

/* ---- selection ----------------------------------------------------------------- */

static void test_backend_select(void **state)
{
	assert_int_equal(vp_backend_select(NULL), 0);
	assert_string_equal(vp_backend_name(), "kthread");
	assert_int_equal(vp_backend_select("no-such-backend"), EINVAL);
	assert_int_equal(vp_backend_select(""), EINVAL);
	/* A failed selection leaves the previous one in place. */
	assert_string_equal(vp_backend_name(), "kthread");
	assert_int_equal(vp_backend_select("kthread"), 0);
	assert_string_equal(vp_backend_name(), "kthread");
}

/* ---- VPs running a handshake ----------------------------------------------- */

struct test_vp {
	struct vp vp;                  /* first: main receives &vp */
	_Atomic uint32_t requests;     /* bumped by the test before vp_resume */
	_Atomic uint32_t done;         /* requests served; futex for the test */
	_Atomic int quit;
	struct vp *seen_current;
	bool altstack_ok;
	pid_t tid;
	_Atomic int ready;
};

static void handshake_main(struct vp *vp)
{
	struct test_vp *t = (struct test_vp *)vp;
	t->seen_current = vp_current();
	t->tid = (pid_t)syscall(SYS_gettid);
	stack_t ss;
	t->altstack_ok = sigaltstack(NULL, &ss) == 0 && !(ss.ss_flags & SS_DISABLE) &&
			 ss.ss_sp == vp->altstack && ss.ss_size == vp->altstack_size &&
			 ss.ss_size >= 65536;
	atomic_store_explicit(&t->ready, 1, memory_order_release);
	futex_wake(&t->done, 1);
	for (;;) {
		/* The idle-loop pattern vpindep uses: read the word, look for
		 * work, sleep only if the word is still the one we read. */
		uint32_t seen = atomic_load_explicit(&vp->wakeword, memory_order_acquire);
		uint32_t req = atomic_load_explicit(&t->requests, memory_order_acquire);
		uint32_t done = atomic_load_explicit(&t->done, memory_order_relaxed);
		if (req != done) {
			atomic_store_explicit(&t->done, req, memory_order_release);
			futex_wake(&t->done, 1);
			continue;
		}
		if (atomic_load_explicit(&t->quit, memory_order_acquire))
			break;
		vp_suspend(vp, seen, -1);
	}
	vp_terminate();
}

static void wait_done(struct test_vp *t, uint32_t want)
{
	uint32_t v;
	while ((v = atomic_load_explicit(&t->done, memory_order_acquire)) != want) {
		struct timespec ts = ns_to_timespec(clock_now_ns(CLOCK_MONOTONIC) + 5000 * MS);
		/* A lost wake-up of the VP shows up here as a timeout. */
		assert_int_not_equal(futex_wait(&t->done, v, &ts, CLOCK_MONOTONIC), ETIMEDOUT);
	}
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

static void test_two_vps(void **state)
{
	static struct test_vp t[2];
	memset(t, 0, sizeof t);
	for (int i = 0; i < 2; i++) {
		t[i].vp.id = i + 1;
		assert_int_equal(vp_create(&t[i].vp, handshake_main), 0);
		assert_true(t[i].vp.handle != 0);
	}
	for (int i = 0; i < 2; i++)
		while (!atomic_load_explicit(&t[i].ready, memory_order_acquire))
			sched_yield();
	/* Each VP knows itself; this thread is none of them. */
	assert_ptr_equal(t[0].seen_current, &t[0].vp);
	assert_ptr_equal(t[1].seen_current, &t[1].vp);
	assert_null(vp_current());
	assert_true(t[0].altstack_ok);
	assert_true(t[1].altstack_ok);
	assert_ptr_not_equal(t[0].vp.altstack, t[1].vp.altstack);
	assert_int_not_equal(t[0].tid, t[1].tid);

	for (uint32_t r = 1; r <= ROUNDS; r++) {
		for (int i = 0; i < 2; i++) {
			atomic_store_explicit(&t[i].requests, r, memory_order_release);
			vp_resume(&t[i].vp);
		}
		for (int i = 0; i < 2; i++)
			wait_done(&t[i], r);
	}

	/* vp_terminate ends the kernel threads. */
	for (int i = 0; i < 2; i++) {
		atomic_store_explicit(&t[i].quit, 1, memory_order_release);
		vp_resume(&t[i].vp);
	}
	for (int i = 0; i < 2; i++) {
		int64_t until = clock_now_ns(CLOCK_MONOTONIC) + 5000 * MS;
		while (task_exists(t[i].tid) && clock_now_ns(CLOCK_MONOTONIC) < until)
			sched_yield();
		assert_false(task_exists(t[i].tid));
	}
}

/* ---- suspend without a VP thread ----------------------------------------------- */

static void test_resume_before_suspend(void **state)
{
	struct vp v = { 0 };
	uint32_t seen = atomic_load_explicit(&v.wakeword, memory_order_acquire);
	vp_resume(&v);
	int64_t t0 = clock_now_ns(CLOCK_MONOTONIC);
	vp_suspend(&v, seen, 5000 * MS);
	/* The resume came first: the suspend must not sleep at all. */
	assert_true(clock_now_ns(CLOCK_MONOTONIC) - t0 < 1000 * MS);
	assert_int_equal(atomic_load(&v.wakeword), seen + 1);
}

static void test_suspend_timeout(void **state)
{
	struct vp v = { 0 };
	uint32_t seen = atomic_load_explicit(&v.wakeword, memory_order_acquire);
	int64_t t0 = clock_now_ns(CLOCK_MONOTONIC);
	vp_suspend(&v, seen, 50 * MS);
	int64_t dt = clock_now_ns(CLOCK_MONOTONIC) - t0;
	/* Spurious returns are allowed but do not happen without signals. */
	assert_true(dt >= 49 * MS);
	assert_true(dt < 2000 * MS);
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	vp_suspend(&v, seen, 0);
	assert_true(clock_now_ns(CLOCK_MONOTONIC) - t0 < 1000 * MS);
}

struct resumer {
	struct vp *vp;
	_Atomic int go;
};

static void *resume_later(void *arg)
{
	struct resumer *r = arg;
	struct timespec nap = { .tv_nsec = 30 * MS };
	nanosleep(&nap, NULL);
	vp_resume(r->vp);
	return NULL;
}

static void test_suspend_woken(void **state)
{
	struct vp v = { 0 };
	struct resumer r = { .vp = &v };
	uint32_t seen = atomic_load_explicit(&v.wakeword, memory_order_acquire);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, resume_later, &r), 0);
	int64_t t0 = clock_now_ns(CLOCK_MONOTONIC);
	while (atomic_load_explicit(&v.wakeword, memory_order_acquire) == seen &&
	       clock_now_ns(CLOCK_MONOTONIC) - t0 < 5000 * MS)
		vp_suspend(&v, seen, 5000 * MS);
	assert_true(clock_now_ns(CLOCK_MONOTONIC) - t0 < 4000 * MS);
	assert_int_equal(pthread_join(t, NULL), 0);
}

/* ---- adopting a kernel thread, and ending it ------------------------------------ */

struct adopt_report {
	struct vp vp;
	struct vp *before, *after;
	bool handle_ok, altstack_ok;
};

static void *adopt_and_terminate(void *arg)
{
	struct adopt_report *a = arg;
	a->before = vp_current();
	vp_adopt(&a->vp);
	a->after = vp_current();
	a->handle_ok = a->vp.handle == (uintptr_t)pthread_self();
	stack_t ss;
	a->altstack_ok = sigaltstack(NULL, &ss) == 0 && ss.ss_sp == a->vp.altstack &&
			 a->vp.altstack != NULL && !(ss.ss_flags & SS_DISABLE);
	vp_terminate();
}

static void test_adopt_terminate(void **state)
{
	struct adopt_report a = { 0 };
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, adopt_and_terminate, &a), 0);
	void *res = (void *)1;
	/* vp_terminate ended the thread through the C library: joinable. */
	assert_int_equal(pthread_join(t, &res), 0);
	assert_null(res);
	assert_null(a.before);
	assert_ptr_equal(a.after, &a.vp);
	assert_true(a.handle_ok);
	assert_true(a.altstack_ok);
	/* vp_terminate released the signal stack. */
	assert_null(a.vp.altstack);
}

/* ---- the C library's thread helpers ------------------------------------------- */

static void *exit_with_42(void *arg)
{
	*(struct vp **)arg = vp_current();
	vp_kthread_exit((void *)42);
}

static void test_kthread_exit(void **state)
{
	pthread_t t;
	struct vp *cur = (struct vp *)1;
	assert_int_equal(pthread_create(&t, NULL, exit_with_42, &cur), 0);
	void *res = NULL;
	assert_int_equal(pthread_join(t, &res), 0);
	assert_ptr_equal(res, (void *)42);
	/* A foreign kernel thread is no VP. */
	assert_null(cur);
}

static void check_own_stack(void)
{
	void *lo = NULL;
	size_t size = 0;
	int local;
	assert_int_equal(vp_kthread_stack(0, &lo, &size), 0);
	assert_true(size >= 16384);
	assert_true((char *)&local >= (char *)lo && (char *)&local < (char *)lo + size);
}

static void *stack_in_thread(void *arg)
{
	check_own_stack();
	return NULL;
}

static void test_kthread_stack(void **state)
{
	check_own_stack();
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, stack_in_thread, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backend_select),
		cmocka_unit_test(test_two_vps),
		cmocka_unit_test(test_resume_before_suspend),
		cmocka_unit_test(test_suspend_timeout),
		cmocka_unit_test(test_suspend_woken),
		cmocka_unit_test(test_adopt_terminate),
		cmocka_unit_test(test_kthread_exit),
		cmocka_unit_test(test_kthread_stack),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
