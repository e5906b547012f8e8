/* ppl_spawn, ppl_spawn_cif and ppl_join_typed (libppl-ffi): every argument
 * kind reaches the function with its value, every return kind comes back
 * with its value, a signature that does not parse is EINVAL. */
#include <ffi.h>
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <semaphore.h>
#include <sched.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "ppl.h"

static int ran_on_vp;

static long ints(signed char c, unsigned char uc, short s, unsigned short us, int i,
		 unsigned u, long l, unsigned long ul, int64_t q, uint64_t uq, size_t z)
{
	ran_on_vp = ppl_current_vp();
	if (c != -100 || uc != 200 || s != -30000 || us != 60000 || i != INT_MIN ||
	    u != UINT_MAX || l != LONG_MIN || ul != ULONG_MAX || q != -(INT64_C(1) << 40) ||
	    uq != (UINT64_C(1) << 63) + 7 || z != (size_t)-3)
		return -1;
	return 42;
}

static void test_ints(void **state)
{
	(void)state;
	pthread_t t;
	ran_on_vp = -2;
	assert_int_equal(ppl_spawn(&t, NULL, ints, "cCsSiIlLqQz>l", -100, 200, -30000, 60000,
				   INT_MIN, UINT_MAX, LONG_MIN, ULONG_MAX, -(INT64_C(1) << 40),
				   (UINT64_C(1) << 63) + 7, (size_t)-3), 0);
	long r = 0;
	assert_int_equal(ppl_join_typed(t, &r), 0);
	assert_int_equal(r, 42);
	assert_true(ran_on_vp >= 0);   /* a libppl thread */
}

static double hyp(double a, double b, int k)
{
	return (a * a + b * b) * k;
}

static float floats(float f, double d, long double ld, void *p)
{
	if (d != 0.25 || ld != 1.0L / 3 || p != (void *)&ran_on_vp)
		return -1.0f;
	return f * 2;
}

static void test_floating(void **state)
{
	(void)state;
	pthread_t t;
	assert_int_equal(ppl_spawn(&t, NULL, hyp, "ddi>d", 1.5, 2.5, 3), 0);
	double r = 0;
	assert_int_equal(ppl_join_typed(t, &r), 0);
	assert_true(r == (1.5 * 1.5 + 2.5 * 2.5) * 3);
	assert_int_equal(ppl_spawn(&t, NULL, floats, "fdDp>f", 1.25f, 0.25, 1.0L / 3,
				   (void *)&ran_on_vp), 0);
	float f = 0;
	assert_int_equal(ppl_join_typed(t, &f), 0);
	assert_true(f == 2.5f);
}

/* Narrow returns: exactly the type's bytes are written. */
static signed char ret_c(void) { return -7; }
static unsigned short ret_S(void) { return 65535; }
static int ret_i(void) { return -123456; }
static unsigned ret_I(void) { return 4000000000u; }
static long double ret_D(void) { return 2.0L / 3; }
static void *ret_p(void) { return &ran_on_vp; }
static int64_t ret_q(int64_t x) { return x * -3; }

static void test_returns(void **state)
{
	(void)state;
	pthread_t t;
	unsigned char buf[32];

	memset(buf, 0x55, sizeof buf);
	assert_int_equal(ppl_spawn(&t, NULL, ret_c, ">c"), 0);
	assert_int_equal(ppl_join_typed(t, buf), 0);
	assert_int_equal((signed char)buf[0], -7);
	assert_int_equal(buf[1], 0x55);

	memset(buf, 0x55, sizeof buf);
	assert_int_equal(ppl_spawn(&t, NULL, ret_S, ">S"), 0);
	assert_int_equal(ppl_join_typed(t, buf), 0);
	unsigned short us;
	memcpy(&us, buf, sizeof us);
	assert_int_equal(us, 65535);
	assert_int_equal(buf[2], 0x55);

	int i = 0;
	assert_int_equal(ppl_spawn(&t, NULL, ret_i, ">i"), 0);
	assert_int_equal(ppl_join_typed(t, &i), 0);
	assert_int_equal(i, -123456);
	unsigned u = 0;
	assert_int_equal(ppl_spawn(&t, NULL, ret_I, ">I"), 0);
	assert_int_equal(ppl_join_typed(t, &u), 0);
	assert_true(u == 4000000000u);
	long double ld = 0;
	assert_int_equal(ppl_spawn(&t, NULL, ret_D, ">D"), 0);
	assert_int_equal(ppl_join_typed(t, &ld), 0);
	assert_true(ld == 2.0L / 3);
	void *p = NULL;
	assert_int_equal(ppl_spawn(&t, NULL, ret_p, ">p"), 0);
	assert_int_equal(ppl_join_typed(t, &p), 0);
	assert_ptr_equal(p, &ran_on_vp);
	int64_t q = 0;
	assert_int_equal(ppl_spawn(&t, NULL, ret_q, "q>q", INT64_C(1) << 50), 0);
	assert_int_equal(ppl_join_typed(t, &q), 0);
	assert_true(q == -3 * (INT64_C(1) << 50));
	/* Void, with and without "v"; ret may be NULL. */
	assert_int_equal(ppl_spawn(&t, NULL, ret_c, ">v"), 0);
	assert_int_equal(ppl_join_typed(t, NULL), 0);
	assert_int_equal(ppl_spawn(&t, NULL, ret_c, ""), 0);
	assert_int_equal(ppl_join_typed(t, buf), 0);
}

struct pt { double x, y; };
struct mix { char c; int i; struct { short s; float f; } in; double d; };
struct big { long a[5]; };

static struct pt add_pt(struct pt a, struct pt b, int k)
{
	return (struct pt){ (a.x + b.x) * k, (a.y + b.y) * k };
}

static struct mix mix_up(struct mix m, char tag)
{
	return (struct mix){ tag, m.i + 1, { (short)(m.in.s * 2), m.in.f / 2 }, m.d + m.c };
}

static struct big big_sum(struct big b, struct big c)
{
	struct big r;
	for (int i = 0; i < 5; i++)
		r.a[i] = b.a[i] * 10 + c.a[i];
	return r;
}

static void test_structs(void **state)
{
	(void)state;
	pthread_t t;
	struct pt a = { 1, 2 }, b = { 10, 20 }, r = { 0, 0 };
	assert_int_equal(ppl_spawn(&t, NULL, add_pt, "{dd}{dd}i>{dd}", &a, &b, 3), 0);
	assert_int_equal(ppl_join_typed(t, &r), 0);
	assert_true(r.x == 33 && r.y == 66);

	struct mix m = { 5, 41, { 300, 9.0f }, 0.5 }, mr;
	memset(&mr, 0, sizeof mr);
	assert_int_equal(ppl_spawn(&t, NULL, mix_up, "{ci{sf}d}c>{ci{sf}d}", &m, 'z'), 0);
	assert_int_equal(ppl_join_typed(t, &mr), 0);
	assert_true(mr.c == 'z' && mr.i == 42 && mr.in.s == 600 && mr.in.f == 4.5f &&
		    mr.d == 5.5);

	struct big x = { { 1, 2, 3, 4, 5 } }, y = { { 6, 7, 8, 9, 10 } }, z;
	assert_int_equal(ppl_spawn(&t, NULL, big_sum, "{lllll}{lllll}>{lllll}", &x, &y), 0);
	assert_int_equal(ppl_join_typed(t, &z), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(z.a[i], x.a[i] * 10 + y.a[i]);
}

/* More arguments than registers: the rest go on the stack. */
static double many(int a, double b, int c, double d, int e, double f, int g, double h, int i,
		   double j, int k, double l, int m, double n, int o, double p, int q, double r)
{
	return a + b * 2 + c * 3 + d * 4 + e * 5 + f * 6 + g * 7 + h * 8 + i * 9 + j * 10 +
	       k * 11 + l * 12 + m * 13 + n * 14 + o * 15 + p * 16 + q * 17 + r * 18;
}

static void test_many(void **state)
{
	(void)state;
	pthread_t t;
	assert_int_equal(ppl_spawn(&t, NULL, many, "ididididididididid>d", 1, 2.0, 3, 4.0, 5, 6.0,
				   7, 8.0, 9, 10.0, 11, 12.0, 13, 14.0, 15, 16.0, 17, 18.0), 0);
	double r = 0;
	assert_int_equal(ppl_join_typed(t, &r), 0);
	double want = 0;
	for (int i = 1; i <= 18; i++)
		want += (double)i * i;
	assert_true(r == want);
}

static void test_bad_signatures(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"x", "{", "}", "{}", "{dd", "dd}", "i>", ">", ">ii", "v", "iv", "i>v>", "i>>i",
		"i>vi", "{i}>{", "{{{{{{{{{i}}}}}}}}}", "d d", "i>{}",
	};
	pthread_t t;
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		print_message("signature \"%s\"\n", bad[i]);
		assert_int_equal(ppl_spawn(&t, NULL, ret_c, bad[i], 1, 2, 3), EINVAL);
	}
	assert_int_equal(ppl_spawn(&t, NULL, ret_c, NULL), EINVAL);
	assert_int_equal(ppl_spawn(&t, NULL, NULL, ">c"), EINVAL);
	assert_int_equal(ppl_spawn(NULL, NULL, ret_c, ">c"), EINVAL);
	/* Eight levels of nesting are allowed. */
	int n = 5;   /* laid out as eight nested structs around one int */
	int r = 0;
	assert_int_equal(ppl_spawn(&t, NULL, ret_i, "{{{{{{{{i}}}}}}}}>i", &n), 0);
	assert_int_equal(ppl_join_typed(t, &r), 0);
	assert_int_equal(r, -123456);
}

static void *plain(void *arg)
{
	return arg;
}

static void quit(int v)
{
	pthread_exit((void *)(intptr_t)v);
}

static sem_t done;

static void post(int *flag, int v)
{
	*flag = v;
	sem_post(&done);
}

static void test_join(void **state)
{
	(void)state;
	pthread_t t;
	/* Not made by ppl_spawn: EINVAL, and it is still joinable. */
	assert_int_equal(pthread_create(&t, NULL, plain, NULL), 0);
	assert_int_equal(ppl_join_typed(t, NULL), EINVAL);
	assert_int_equal(pthread_join(t, NULL), 0);
	/* fn did not return. */
	int r = 77;
	assert_int_equal(ppl_spawn(&t, NULL, quit, "i>i", 5), 0);
	assert_int_equal(ppl_join_typed(t, &r), ECANCELED);
	assert_int_equal(r, 77);
	/* Joined already: not ours any more. */
	assert_int_equal(ppl_spawn(&t, NULL, ret_i, ">i"), 0);
	assert_int_equal(ppl_join_typed(t, &r), 0);
	assert_int_equal(ppl_join_typed(t, &r), EINVAL);
	/* Detached: runs, frees itself. */
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sem_init(&done, 0, 0);
	int flag = 0;
	for (int i = 1; i <= 100; i++) {
		assert_int_equal(ppl_spawn(&t, &attr, post, "pi", &flag, i), 0);
		sem_wait(&done);
		assert_int_equal(flag, i);
	}
	pthread_attr_destroy(&attr);
}

static void test_cif(void **state)
{
	(void)state;
	ffi_cif cif;
	ffi_type *args[3] = { &ffi_type_double, &ffi_type_double, &ffi_type_sint };
	assert_int_equal(ffi_prep_cif(&cif, FFI_DEFAULT_ABI, 3, &ffi_type_double, args), FFI_OK);
	pthread_t t[8];
	for (int i = 0; i < 8; i++) {
		double a = i, b = 0.5;
		int k = i + 1;
		void *vals[3] = { &a, &b, &k };
		assert_int_equal(ppl_spawn_cif(&t[i], NULL, &cif, hyp, vals), 0);
		a = b = -1;   /* copied: the thread does not see these */
		k = 0;
	}
	for (int i = 0; i < 8; i++) {
		double r = 0;
		assert_int_equal(ppl_join_typed(t[i], &r), 0);
		assert_true(r == (i * i + 0.25) * (i + 1));
	}
	assert_int_equal(ppl_spawn_cif(&t[0], NULL, NULL, hyp, NULL), EINVAL);
}

/* Many at once, spread over the VPs. */
static void test_many_threads(void **state)
{
	(void)state;
	enum { N = 200 };
	static pthread_t t[N];
	for (int i = 0; i < N; i++)
		assert_int_equal(ppl_spawn(&t[i], NULL, ret_q, "q>q", (int64_t)i), 0);
	for (int i = 0; i < N; i++) {
		int64_t r = 0;
		assert_int_equal(ppl_join_typed(t[i], &r), 0);
		assert_true(r == -3 * (int64_t)i);
	}
}

static int add1(int x) { return x + 1; }

/* 1,000 typed threads joined with pthread_join, 1,000 detached with
 * pthread_detach (running or ended), 1,000 joined with ppl_join_typed. */
static void spawn_round(void)
{
	enum { N = 1000 };
	pthread_t t;
	for (int i = 0; i < N; i++) {
		assert_int_equal(ppl_spawn(&t, NULL, add1, "i>i", i), 0);
		assert_int_equal(pthread_join(t, NULL), 0);
	}
	for (int i = 0; i < N; i++) {
		assert_int_equal(ppl_spawn(&t, NULL, add1, "i>i", i), 0);
		if (i % 2)
			sched_yield();   /* some end before they are detached */
		assert_int_equal(pthread_detach(t), 0);
	}
	for (int i = 0; i < N; i++) {
		int r = 0;
		assert_int_equal(ppl_spawn(&t, NULL, add1, "i>i", i), 0);
		assert_int_equal(ppl_join_typed(t, &r), 0);
		assert_int_equal(r, i + 1);
	}
}

/* Their records are given back: a second round leaves the heap in use as
 * the first did (each record is about 190 bytes: 380 KB leaked per
 * round before the fix).  The first round fills libppl's pools. */
static void test_plain_join_detach_free(void **state)
{
	(void)state;
	spawn_round();
	usleep(20000);   /* the detached ones end */
	size_t before = mallinfo2().uordblks;
	spawn_round();
	usleep(20000);
	size_t after = mallinfo2().uordblks;
	if (after > before + 64 * 1024)
		fail_msg("heap grew by %zu bytes over 3,000 typed threads", after - before);
}

/* fork while another thread holds the table of typed threads: the child
 * can still spawn and join one (libppl-ffi's fork handlers).  Before them,
 * a child that inherited the table's lock held hung on its first spawn. */
static atomic_bool stop_churn;

static void *churn(void *arg)
{
	(void)arg;
	pthread_t t;
	while (!atomic_load(&stop_churn)) {
		int r = 0;
		if (ppl_spawn(&t, NULL, add1, "i>i", 1) != 0 || ppl_join_typed(t, &r) != 0 || r != 2)
			abort();
		/* Looks up a thread not in the table: the lock, a bucket's walk. */
		for (int i = 0; i < 50; i++)
			if (ppl_join_typed(pthread_self(), NULL) != EINVAL)
				abort();
	}
	return NULL;
}

static void test_fork(void **state)
{
	(void)state;
	enum { FORKS = 300, KEPT = 640 };
	/* Records the churn's lookups walk past (10 a bucket). */
	static pthread_t kept[KEPT];
	for (int i = 0; i < KEPT; i++)
		assert_int_equal(ppl_spawn(&kept[i], NULL, add1, "i>i", i), 0);
	atomic_store(&stop_churn, false);
	pthread_t churner[2];
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&churner[i], NULL, churn, NULL), 0);
	int hung = 0;
	for (int i = 0; i < FORKS; i++) {
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			alarm(5);
			pthread_t t;
			int r = 0;
			_exit(ppl_spawn(&t, NULL, add1, "i>i", 41) == 0 && ppl_join_typed(t, &r) == 0 &&
			      r == 42 ? 0 : 1);
		}
		int status;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			hung++;
	}
	atomic_store(&stop_churn, true);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(churner[i], NULL), 0);
	for (int i = 0; i < KEPT; i++) {
		int r = 0;
		assert_int_equal(ppl_join_typed(kept[i], &r), 0);
		assert_int_equal(r, i + 1);
	}
	if (hung)
		fail_msg("%d of %d children could not spawn and join a typed thread", hung, FORKS);
}

int main(void)
{
	alarm(60);
	/* An assertion that fails in a thread other than main's finds no
	 * running test in cmocka's thread-local state: it calls exit(-1) and
	 * drops the buffered message (silent deaths with status 255).  Abort
	 * with the message instead. */
	setenv("CMOCKA_TEST_ABORT", "1", 0);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ints),
		cmocka_unit_test(test_floating),
		cmocka_unit_test(test_returns),
		cmocka_unit_test(test_structs),
		cmocka_unit_test(test_many),
		cmocka_unit_test(test_bad_signatures),
		cmocka_unit_test(test_join),
		cmocka_unit_test(test_cif),
		cmocka_unit_test(test_many_threads),
		cmocka_unit_test(test_plain_join_detach_free),
		cmocka_unit_test(test_fork),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
