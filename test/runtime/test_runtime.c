/* The runtime as a user sees it: how many VPs, what an idle program costs,
 * kernel threads libppl did not create, bound threads, concurrency. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <ppl.h>

/* A number from /proc/PID/status (field "Threads:", "PPid:"), or -1. */
static int status_field(const char *pid, const char *field)
{
	char path[300], line[256];
	snprintf(path, sizeof path, "/proc/%s/status", pid);
	FILE *f = fopen(path, "r");
	int n = -1;
	size_t len = strlen(field);
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, field, len) == 0) {
			n = atoi(line + len);
			break;
		}
	if (f)
		fclose(f);
	return n;
}

/* The process backend's own helpers in the initial process (vp_process.c). */
static bool backend_helper(const char *comm)
{
	return strcmp(comm, "ppl-vpmanager\n") == 0 || strcmp(comm, "ppl-vpreaper\n") == 0 ||
	       strcmp(comm, "ppl-vpsignals\n") == 0;
}

/* The program's kernel threads, the same count on every VP backend: with
 * PPL_VP_BACKEND=process (docs/vpdep.md) a VP is a process of its own, a
 * child of the initial process, with a watcher thread beside it, and the
 * initial process has the backend's three helpers: the VP counts, the
 * watcher and the helpers do not (this program forks no other child). */
static int kernel_threads(void)
{
	char self[32], path[600], comm[64];
	snprintf(self, sizeof self, "%d", (int)getpid());
	snprintf(path, sizeof path, "/proc/%s/task", self);
	DIR *d = opendir(path);
	if (d == NULL)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/%s/task/%s/comm", self, e->d_name);
		FILE *f = fopen(path, "r");
		if (f == NULL)
			continue;   /* ended meanwhile */
		if (fgets(comm, sizeof comm, f) == NULL || !backend_helper(comm))
			n++;
		fclose(f);
	}
	closedir(d);
	d = opendir("/proc");
	while (d && (e = readdir(d)) != NULL)
		if (e->d_name[0] >= '1' && e->d_name[0] <= '9' &&
		    status_field(e->d_name, "PPid:") == (int)getpid() &&
		    status_field(e->d_name, "Threads:") > 0)
			n++;
	if (d)
		closedir(d);
	return n;
}

/* kernel_threads() is at most bound within a second: a helper the process
 * backend has just made has its creator's name until it names itself. */
static bool kernel_threads_within(int bound)
{
	for (int i = 0; i < 100; i++) {
		if (kernel_threads() <= bound)
			return true;
		usleep(10000);
	}
	return false;
}

static void *nop(void *arg) { return arg; }

static void start_runtime(void)
{
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, nop, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
}

/* Lazy start: no VP before the first pthread_create; then as many as the
 * affinity mask allows, or PPL_VPS. */
static void test_vp_count(void **state)
{
	assert_int_equal(ppl_vp_count(), 0);
	assert_int_equal(kernel_threads(), 1);
	start_runtime();
	int want;
	const char *env = getenv("PPL_VPS");
	if (env) {
		want = atoi(env);
	} else {
		cpu_set_t set;
		assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
		want = CPU_COUNT(&set);
	}
	assert_int_equal(ppl_vp_count(), want);
	assert_true(ppl_current_vp() >= 0 && ppl_current_vp() < want);
	assert_true(kernel_threads_within(want + 1));
}

static double cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *sleeper(void *arg)
{
	for (int i = 0; i < 4; i++)
		usleep(100000);
	return arg;
}

/* Threads that sleep leave the VPs idle: idle VPs must sleep, not spin. */
static void test_idle_uses_no_cpu(void **state)
{
	pthread_t t[8];
	double c0 = cpu_seconds();
	for (int i = 0; i < 8; i++)
		assert_int_equal(pthread_create(&t[i], NULL, sleeper, NULL), 0);
	for (int i = 0; i < 8; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	double used = cpu_seconds() - c0;   /* over ~0.4 s of wall time */
	print_message("CPU used while idle: %.1f ms\n", used * 1e3);
	assert_true(used < 0.05);
}

/* A kernel thread libppl did not create (made with the C library's own
 * pthread_create) uses mutexes and condition variables with user threads. */
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int turn, rounds = 2000;

static void *pingpong(void *arg)
{
	int me = (int)(long)arg;
	for (int i = 0; i < rounds; i++) {
		pthread_mutex_lock(&m);
		while (turn != me)
			pthread_cond_wait(&c, &m);
		turn = !me;
		pthread_cond_broadcast(&c);
		pthread_mutex_unlock(&m);
	}
	return pthread_equal(pthread_self(), pthread_self()) ? arg : NULL;
}

static void test_foreign_kernel_thread(void **state)
{
	/* Look inside the C library itself: RTLD_NEXT would find libppl. */
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	assert_non_null(libc);
	int (*real_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
		(int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
			dlsym(libc, "pthread_create");
	int (*real_join)(pthread_t, void **) =
		(int (*)(pthread_t, void **))dlsym(libc, "pthread_join");
	assert_non_null(real_create);
	assert_non_null(real_join);
	int before = kernel_threads();
	pthread_t k, u;
	turn = 0;
	assert_int_equal(real_create(&k, NULL, pingpong, (void *)0L), 0);
	assert_int_equal(pthread_create(&u, NULL, pingpong, (void *)1L), 0);
	void *rk, *ru;
	assert_int_equal(pthread_join(u, &ru), 0);
	assert_int_equal(real_join(k, &rk), 0);
	assert_ptr_equal(ru, (void *)1L);
	assert_ptr_equal(rk, (void *)0L);
	/* No kernel thread per user thread.  One more is allowed: while main
	 * waits in the C library's pthread_join (a futex wait libppl does not
	 * see), the monitor may lend its VP's queue to a spare kernel thread,
	 * which is kept for reuse (docs/blocking.md). */
	assert_true(kernel_threads_within(before + 1));
}

static void *where(void *arg)
{
	*(int *)arg = ppl_current_vp();
	return NULL;
}

/* PTHREAD_SCOPE_SYSTEM: with PPL_SYSTEM_SCOPE=bound the thread gets a VP of
 * its own, beyond the shared ones; by default it runs on the shared ones. */
static void test_scope_system(void **state)
{
	const char *knob = getenv("PPL_SYSTEM_SCOPE");
	bool bound = knob != NULL && strcmp(knob, "bound") == 0;
	pthread_attr_t a;
	pthread_attr_init(&a);
	assert_int_equal(pthread_attr_setscope(&a, PTHREAD_SCOPE_SYSTEM), 0);
	for (int round = 0; round < 3; round++) {
		int vp = -2;
		pthread_t t;
		assert_int_equal(pthread_create(&t, &a, where, &vp), 0);
		assert_int_equal(pthread_join(t, NULL), 0);
		assert_true(bound ? vp >= ppl_vp_count() : vp >= 0 && vp < ppl_vp_count());
	}
	pthread_attr_destroy(&a);
}

static void test_setconcurrency(void **state)
{
	int n = ppl_vp_count();
	assert_int_equal(pthread_setconcurrency(-1), EINVAL);
	assert_int_equal(pthread_setconcurrency(n + 1), 0);
	assert_int_equal(pthread_getconcurrency(), n + 1);
	assert_int_equal(ppl_vp_count(), n + 1);
	start_runtime();
	assert_int_equal(pthread_setconcurrency(1), 0);
	assert_int_equal(ppl_vp_count(), 1);
	pthread_t t[16];
	for (int i = 0; i < 16; i++)
		assert_int_equal(pthread_create(&t[i], NULL, sleeper, NULL), 0);
	for (int i = 0; i < 16; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	assert_int_equal(pthread_setconcurrency(0), 0);
	assert_int_equal(pthread_getconcurrency(), 0);
}

static pthread_mutex_t burst_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t burst_c = PTHREAD_COND_INITIALIZER;
static int burst_go;

static void *burst_waiter(void *arg)
{
	pthread_mutex_lock(&burst_m);
	while (!burst_go)
		pthread_cond_wait(&burst_c, &burst_m);
	pthread_mutex_unlock(&burst_m);
	return arg;
}

/* A burst of threads alive at once, then joined: the TCB cache keeps a
 * bounded number and the others go cold, their pages back to the kernel
 * (tcbpool.c).  Every stale pthread_t still names a TCB that says it is
 * gone, and the TCBs are taken again by the next burst. */
static void test_stale_after_burst(void **state)
{
	enum { N = 1000 };
	static pthread_t t[N];
	for (int round = 0; round < 2; round++) {
		burst_go = 0;
		for (int i = 0; i < N; i++)
			assert_int_equal(pthread_create(&t[i], NULL, burst_waiter, NULL), 0);
		for (int i = 0; i < N; i++)
			assert_true(ppl_thread_serial(t[i]) != 0);
		pthread_mutex_lock(&burst_m);
		burst_go = 1;
		pthread_cond_broadcast(&burst_c);
		pthread_mutex_unlock(&burst_m);
		for (int i = 0; i < N; i++)
			assert_int_equal(pthread_join(t[i], NULL), 0);
		for (int i = 0; i < N; i++) {
			assert_int_equal(ppl_thread_serial(t[i]), 0);
			assert_int_equal(pthread_kill(t[i], 0), ESRCH);
			assert_int_equal(pthread_join(t[i], NULL), ESRCH);
			assert_int_equal(pthread_detach(t[i]), ESRCH);
		}
	}
}

int main(void)
{
	/* An assertion that fails in a thread other than main's finds no
	 * running test in cmocka's thread-local state: it calls exit(-1) and
	 * drops the buffered message (silent deaths with status 255).  Abort
	 * with the message instead. */
	setenv("CMOCKA_TEST_ABORT", "1", 0);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vp_count),
		cmocka_unit_test(test_idle_uses_no_cpu),
		cmocka_unit_test(test_foreign_kernel_thread),
		cmocka_unit_test(test_scope_system),
		cmocka_unit_test(test_setconcurrency),
		cmocka_unit_test(test_stale_after_burst),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
