/* ppl_migrate, ppl_pin, ppl_unpin, ppl_pinned: threads move between VPs
 * in every state, the caller returns on its destination, pinned threads
 * stay, and threads that cannot move get their error codes.  Run with 4
 * VPs (meson.build). */
#include <dlfcn.h>
#include <errno.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "ppl.h"

static int nvps;

static void *start_runtime(void *arg)
{
	return arg;
}

static int setup(void **state)
{
	(void)state;
	/* Before the first pthread_create there is no VP to go to. */
	if (ppl_migrate(pthread_self(), 0) != EINVAL || ppl_pin(pthread_self(), 0) != EINVAL)
		return -1;
	pthread_t t;
	pthread_create(&t, NULL, start_runtime, NULL);
	pthread_join(t, NULL);
	nvps = ppl_vp_count();
	return nvps == 4 ? 0 : -1;
}

/* ---- 10,000 migrations while threads block and are woken ------------------ */

enum { RING = 16, TOKENS = 12, ROUNDS = 625 };   /* 16 x 625 = 10,000 migrations */
enum { BLOCKERS = 8, BTOKENS = 4, BROUNDS = 500 };
static sem_t ring[RING], bring[BLOCKERS];
static atomic_int passes, bpasses, wrong;
static atomic_bool stop_mover;
static pthread_t workers[RING], blockers[BLOCKERS];

/* Takes a token, migrates itself to a random VP, checks it is there, and
 * passes the token on: each token parks and wakes a worker per pass. */
static void *ring_worker(void *arg)
{
	int me = (int)(intptr_t)arg;
	unsigned seed = (unsigned)me * 7919u + 1;
	for (int i = 0; i < ROUNDS; i++) {
		while (sem_wait(&ring[me]) != 0)
			;
		int to = (int)(rand_r(&seed) % (unsigned)nvps);
		if (ppl_migrate(pthread_self(), to) != 0 || ppl_current_vp() != to)
			atomic_fetch_add(&wrong, 1);
		atomic_fetch_add(&passes, 1);
		sem_post(&ring[(me + 1) % RING]);
	}
	return NULL;
}

/* The same without migrating itself: the mover moves these. */
static void *blocker(void *arg)
{
	int me = (int)(intptr_t)arg;
	for (int i = 0; i < BROUNDS; i++) {
		while (sem_wait(&bring[me]) != 0)
			;
		if (i % 16 == 0)
			usleep(50);
		atomic_fetch_add(&bpasses, 1);
		sem_post(&bring[(me + 1) % BLOCKERS]);
	}
	return NULL;
}

/* Migrates the blockers (parked, ready or running) and pins and unpins
 * them meanwhile. */
static void *mover(void *arg)
{
	(void)arg;
	unsigned seed = 4242;
	long n = 0;
	while (!atomic_load(&stop_mover)) {
		pthread_t w = blockers[rand_r(&seed) % BLOCKERS];
		int to = (int)(rand_r(&seed) % (unsigned)nvps);
		int err = rand_r(&seed) % 8 == 0 ? ppl_pin(w, to) : ppl_migrate(w, to);
		if (err != 0 && err != ESRCH)   /* ESRCH: it has finished */
			atomic_fetch_add(&wrong, 1);
		if (rand_r(&seed) % 8 == 0 && (err = ppl_unpin(w)) != 0 && err != ESRCH)
			atomic_fetch_add(&wrong, 1);
		if (++n % 4 == 0)
			usleep(100);
	}
	return (void *)n;
}

static int tokens(sem_t *s, int n)
{
	int left = 0;
	for (int i = 0; i < n; i++) {
		int v;
		sem_getvalue(&s[i], &v);
		left += v;
	}
	return left;
}

static void test_ring(void **state)
{
	(void)state;
	for (int i = 0; i < RING; i++)
		sem_init(&ring[i], 0, 0);
	for (int i = 0; i < BLOCKERS; i++)
		sem_init(&bring[i], 0, 0);
	for (int i = 0; i < RING; i++)
		assert_int_equal(pthread_create(&workers[i], NULL, ring_worker, (void *)(intptr_t)i), 0);
	for (int i = 0; i < BLOCKERS; i++)
		assert_int_equal(pthread_create(&blockers[i], NULL, blocker, (void *)(intptr_t)i), 0);
	pthread_t mv;
	atomic_store(&stop_mover, false);
	assert_int_equal(pthread_create(&mv, NULL, mover, NULL), 0);
	for (int k = 0; k < TOKENS; k++)
		sem_post(&ring[k * RING / TOKENS]);
	for (int k = 0; k < BTOKENS; k++)
		sem_post(&bring[k * BLOCKERS / BTOKENS]);
	for (int i = 0; i < RING; i++)
		assert_int_equal(pthread_join(workers[i], NULL), 0);
	for (int i = 0; i < BLOCKERS; i++)
		assert_int_equal(pthread_join(blockers[i], NULL), 0);
	atomic_store(&stop_mover, true);
	void *moves;
	assert_int_equal(pthread_join(mv, &moves), 0);
	print_message("%d self-migrations, %ld of parked, ready and running threads by another\n",
		      atomic_load(&passes), (long)(intptr_t)moves);
	assert_int_equal(atomic_load(&passes), RING * ROUNDS);
	assert_int_equal(atomic_load(&bpasses), BLOCKERS * BROUNDS);
	assert_int_equal(atomic_load(&wrong), 0);
	/* Nothing lost: every token still sits on a semaphore. */
	assert_int_equal(tokens(ring, RING), TOKENS);
	assert_int_equal(tokens(bring, BLOCKERS), BTOKENS);
}

/* ---- each state ------------------------------------------------------------ */

static sem_t go;
static atomic_int spin_flag;
static atomic_int seen_vp;

/* A thread that waits in pthread_cond_wait until released.  The caller
 * knows it is parked once it holds park_m after park_state 1: the waiter
 * released park_m inside the wait, and a wait's queue lock is held until
 * its switch has saved it, so the release wakes it only from there.  The
 * semaphore hand-off this replaces (sem_post, a 1 ms sleep, then the
 * move) lost to a loaded machine: a waiter still running on another VP
 * found its semaphore posted and never switched, so a move meant for its
 * next switch came too late (test_ready, seen VP 1 for 2; the silent
 * deaths of test_states). */
static pthread_mutex_t park_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cv = PTHREAD_COND_INITIALIZER;
static int park_state;   /* 0 starting, 1 waiting, 2 released */

static void *parked(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&park_m);
	park_state = 1;
	pthread_cond_broadcast(&park_cv);
	while (park_state != 2)
		pthread_cond_wait(&park_cv, &park_m);   /* migrated while parked here */
	atomic_store(&seen_vp, ppl_current_vp());
	pthread_mutex_unlock(&park_m);
	return NULL;
}

/* Starts parked() and returns with park_m held once it waits. */
static pthread_t start_parked(void)
{
	pthread_t t;
	park_state = 0;
	assert_int_equal(pthread_create(&t, NULL, parked, NULL), 0);
	pthread_mutex_lock(&park_m);
	while (park_state != 1)
		pthread_cond_wait(&park_cv, &park_m);
	return t;
}

static void *running(void *arg)
{
	(void)arg;
	atomic_store(&spin_flag, 1);
	while (atomic_load(&spin_flag) == 1)
		;   /* migrated while running: it moves at its next switch */
	sched_yield();
	atomic_store(&seen_vp, ppl_current_vp());
	return NULL;
}

static void states(void)
{
	for (int to = 0; to < nvps; to++) {
		pthread_t t;
		atomic_store(&seen_vp, -1);
		t = start_parked();
		assert_int_equal(ppl_migrate(t, to), 0);
		/* Unlocked first: woken, it must not park again on park_m,
		 * since the move holds only until it arrives. */
		park_state = 2;
		pthread_mutex_unlock(&park_m);
		pthread_cond_broadcast(&park_cv);
		assert_int_equal(pthread_join(t, NULL), 0);
		assert_int_equal(atomic_load(&seen_vp), to);

		/* Running on another VP (the caller is pinned away from it). */
		int mine = (to + 1) % nvps;
		assert_int_equal(ppl_pin(pthread_self(), mine), 0);
		atomic_store(&spin_flag, 0);
		atomic_store(&seen_vp, -1);
		assert_int_equal(pthread_create(&t, NULL, running, NULL), 0);
		while (atomic_load(&spin_flag) == 0)
			sched_yield();
		assert_int_equal(ppl_migrate(t, to), 0);
		atomic_store(&spin_flag, 2);
		assert_int_equal(pthread_join(t, NULL), 0);
		assert_int_equal(atomic_load(&seen_vp), to);
		assert_int_equal(ppl_unpin(pthread_self()), 0);
	}
}

/* Ready: pinned to the caller's VP while parked, then woken by the caller,
 * it waits on that VP's queue (nobody may steal it, the caller does not
 * yield); migrating it moves its pin and it runs on its destination.
 * park_m stays held across the move: should the broadcast's preemption
 * point yield VP 0 to it, it waits for park_m there, pinned, and still
 * moves. */
static void ready(void)
{
	assert_int_equal(ppl_pin(pthread_self(), 0), 0);
	for (int to = 0; to < nvps; to++) {
		pthread_t t;
		atomic_store(&seen_vp, -1);
		t = start_parked();
		assert_int_equal(ppl_pin(t, 0), 0);
		park_state = 2;
		pthread_cond_broadcast(&park_cv);   /* ready on VP 0's queue */
		assert_int_equal(ppl_migrate(t, to), 0);
		assert_int_equal(ppl_pinned(t), to);
		pthread_mutex_unlock(&park_m);
		assert_int_equal(pthread_join(t, NULL), 0);
		assert_int_equal(atomic_load(&seen_vp), to);
	}
	assert_int_equal(ppl_unpin(pthread_self()), 0);
}

/* ---- pinning ------------------------------------------------------------------ */

static void *pinned_loop(void *arg)
{
	int vp = (int)(intptr_t)arg;
	assert_int_equal(ppl_pin(pthread_self(), vp), 0);
	int bad = ppl_current_vp() != vp;
	for (int i = 0; i < 300; i++) {
		if (i % 3 == 0)
			usleep(100);
		else
			sched_yield();
		bad += ppl_current_vp() != vp;
	}
	bad += ppl_pinned(pthread_self()) != vp;
	assert_int_equal(ppl_unpin(pthread_self()), 0);
	bad += ppl_pinned(pthread_self()) != -1;
	return (void *)(intptr_t)bad;
}

static void test_pin(void **state)
{
	(void)state;
	pthread_t t[8];
	for (int i = 0; i < 8; i++)
		assert_int_equal(pthread_create(&t[i], NULL, pinned_loop, (void *)(intptr_t)(i % nvps)), 0);
	for (int i = 0; i < 8; i++) {
		void *bad;
		assert_int_equal(pthread_join(t[i], &bad), 0);
		assert_int_equal((int)(intptr_t)bad, 0);
	}
	/* The main thread too (per-thread TLS lets it move; with TLS shared
	 * per VP it keeps VP 0's), and a migrate of a pinned thread moves the
	 * pin. */
	const char *tls = getenv("PPL_TLS");
	if (tls && strcmp(tls, "shared") == 0) {
		assert_int_equal(ppl_pin(pthread_self(), 3), EPERM);
		assert_int_equal(ppl_migrate(pthread_self(), 1), EPERM);
		assert_int_equal(ppl_current_vp(), 0);
		return;
	}
	assert_int_equal(ppl_pin(pthread_self(), 3), 0);
	assert_int_equal(ppl_current_vp(), 3);
	assert_int_equal(ppl_migrate(pthread_self(), 1), 0);
	assert_int_equal(ppl_current_vp(), 1);
	assert_int_equal(ppl_pinned(pthread_self()), 1);
	assert_int_equal(ppl_unpin(pthread_self()), 0);
	assert_int_equal(ppl_pinned(pthread_self()), -1);
	for (int i = 0; i < 100; i++) {
		assert_int_equal(ppl_migrate(pthread_self(), i % nvps), 0);
		assert_int_equal(ppl_current_vp(), i % nvps);
	}
}

/* ---- pinning to a set of VPs ------------------------------------------------------ */

static ppl_vpset_t set12;
static atomic_int used[4];

static ppl_vpset_t vpset(int a, int b)
{
	ppl_vpset_t s;
	ppl_vpset_zero(&s);
	ppl_vpset_add(&s, a);
	ppl_vpset_add(&s, b);
	return s;
}

/* Pins itself to VPs 1 and 2 from VP `arg`, where the set's pin keeps it
 * (it is one of the set's), then blocks and yields: always on one of
 * them.  Where the first switch takes it depends on which VP of the set
 * looks first (a loaded machine once left VP 2 none of the 2,400 samples):
 * the sample before it is the one that makes both VPs used. */
static void *set_loop(void *arg)
{
	int from = (int)(intptr_t)arg;
	int bad = 0;
	assert_int_equal(ppl_pin(pthread_self(), from), 0);
	assert_int_equal(ppl_pin_set(pthread_self(), &set12), 0);
	bad += ppl_current_vp() != from;
	atomic_fetch_add(&used[from], 1);
	for (int i = 0; i < 300; i++) {
		if (i % 3 == 0)
			usleep(100);
		else
			sched_yield();
		int vp = ppl_current_vp();
		bad += !ppl_vpset_has(&set12, vp);
		if (vp >= 0 && vp < 4)
			atomic_fetch_add(&used[vp], 1);
	}
	int p = ppl_pinned(pthread_self());
	bad += p != 1 && p != 2;
	ppl_vpset_t got;
	assert_int_equal(ppl_pinned_set(pthread_self(), &got), 0);
	bad += memcmp(&got, &set12, sizeof got) != 0;
	return (void *)(intptr_t)bad;
}

static void test_pin_set(void **state)
{
	(void)state;
	set12 = vpset(1, 2);
	pthread_t t[8];
	for (int i = 0; i < 8; i++)
		assert_int_equal(pthread_create(&t[i], NULL, set_loop, (void *)(intptr_t)(1 + i % 2)), 0);
	for (int i = 0; i < 8; i++) {
		void *bad;
		assert_int_equal(pthread_join(t[i], &bad), 0);
		assert_int_equal((int)(intptr_t)bad, 0);
	}
	/* Both VPs of the set ran them, the others none. */
	assert_int_equal(atomic_load(&used[0]) + atomic_load(&used[3]), 0);
	assert_true(atomic_load(&used[1]) > 0 && atomic_load(&used[2]) > 0);

	ppl_vpset_t s03 = vpset(0, 3), got, empty;
	ppl_vpset_zero(&empty);
	/* Pinned by another thread while it waits, then woken: runs in its
	 * set (parked(): certainly parked, not "most likely" after 2 ms). */
	atomic_store(&seen_vp, -1);
	t[0] = start_parked();
	assert_int_equal(ppl_pin_set(t[0], &s03), 0);
	park_state = 2;
	pthread_mutex_unlock(&park_m);
	pthread_cond_broadcast(&park_cv);
	assert_int_equal(pthread_join(t[0], NULL), 0);
	int vp = atomic_load(&seen_vp);
	assert_true(vp == 0 || vp == 3);

	/* Errors: no set, an empty one, one of VPs that do not exist. */
	pthread_t self = pthread_self();
	assert_int_equal(ppl_pin_set(self, NULL), EINVAL);
	assert_int_equal(ppl_pin_set(self, &empty), EINVAL);
	ppl_vpset_t none = vpset(nvps, 1000);
	assert_int_equal(ppl_pin_set(self, &none), EINVAL);
	assert_int_equal(ppl_pinned_set(self, NULL), EINVAL);

	const char *tls = getenv("PPL_TLS");
	if (tls && strcmp(tls, "shared") == 0) {
		assert_int_equal(ppl_pin_set(self, &s03), EPERM);
		return;
	}
	/* The caller: on a VP of the set when the call returns; a migration
	 * inside the set keeps it, one outside pins to that VP alone. */
	ppl_vpset_t s23 = vpset(2, 3);
	assert_int_equal(ppl_pin_set(self, &s23), 0);
	assert_true(ppl_vpset_has(&s23, ppl_current_vp()));
	assert_int_equal(ppl_pinned(self), ppl_current_vp());
	assert_int_equal(ppl_pinned_set(self, &got), 0);
	assert_memory_equal(&got, &s23, sizeof got);
	for (int i = 0; i < 20; i++) {
		assert_int_equal(ppl_migrate(self, 2 + i % 2), 0);
		assert_int_equal(ppl_current_vp(), 2 + i % 2);
		sched_yield();
		assert_true(ppl_vpset_has(&s23, ppl_current_vp()));
	}
	assert_int_equal(ppl_pinned_set(self, &got), 0);
	assert_memory_equal(&got, &s23, sizeof got);
	assert_int_equal(ppl_migrate(self, 0), 0);
	assert_int_equal(ppl_current_vp(), 0);
	assert_int_equal(ppl_pinned(self), 0);
	assert_int_equal(ppl_pinned_set(self, &got), 0);
	assert_int_equal(ppl_vpset_count(&got), 1);
	assert_true(ppl_vpset_has(&got, 0));
	assert_int_equal(ppl_unpin(self), 0);
	assert_int_equal(ppl_pinned(self), -1);
	assert_int_equal(ppl_pinned_set(self, &got), 0);
	assert_int_equal(ppl_vpset_count(&got), 0);
}

/* ---- errors --------------------------------------------------------------------- */

static atomic_int done_flag;

static void *quick(void *arg)
{
	atomic_store(&done_flag, 1);
	return arg;
}

static int foreign_result;

static void *foreign_try(void *arg)
{
	(void)arg;
	foreign_result = ppl_migrate(pthread_self(), 0);
	return NULL;
}

static void *bound_body(void *arg)
{
	sem_wait(&go);
	return arg;
}

static void errors(void)
{
	pthread_t self = pthread_self();
	assert_int_equal(ppl_migrate(self, -1), EINVAL);
	assert_int_equal(ppl_migrate(self, nvps), EINVAL);
	assert_int_equal(ppl_pin(self, 100000), EINVAL);
	/* Ended, not joined (a zombie): ESRCH. */
	pthread_t t;
	atomic_store(&done_flag, 0);
	assert_int_equal(pthread_create(&t, NULL, quick, NULL), 0);
	while (!atomic_load(&done_flag))
		usleep(100);
	usleep(20000);
	assert_int_equal(ppl_migrate(t, 0), ESRCH);
	assert_int_equal(ppl_pin(t, 0), ESRCH);
	assert_int_equal(ppl_unpin(t), ESRCH);
	assert_int_equal(pthread_join(t, NULL), 0);
	/* A kernel thread libppl did not create: EPERM. */
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	assert_non_null(libc);
	int (*real_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
		(int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
			dlsym(libc, "pthread_create");
	int (*real_join)(pthread_t, void **) =
		(int (*)(pthread_t, void **))dlsym(libc, "pthread_join");
	foreign_result = -1;
	assert_int_equal(real_create(&t, NULL, foreign_try, NULL), 0);
	assert_int_equal(real_join(t, NULL), 0);
	assert_int_equal(foreign_result, EPERM);
	/* PTHREAD_SCOPE_SYSTEM: bound (EPERM) only with PPL_SYSTEM_SCOPE=bound. */
	const char *scope = getenv("PPL_SYSTEM_SCOPE");
	int want = scope && strcmp(scope, "bound") == 0 ? EPERM : 0;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setscope(&a, PTHREAD_SCOPE_SYSTEM);
	sem_init(&go, 0, 0);
	assert_int_equal(pthread_create(&t, &a, bound_body, NULL), 0);
	assert_int_equal(ppl_migrate(t, 1), want);
	assert_int_equal(ppl_pin(t, 1), want);
	sem_post(&go);
	assert_int_equal(pthread_join(t, NULL), 0);
	pthread_attr_destroy(&a);
}

/* A pinned thread forks: the child's only VP is VP 0, so its pin (to a
 * VP the child does not have) is dropped, and it runs on. */
static void *child_thread(void *arg)
{
	return arg;
}

static void forked(void)
{
	assert_int_equal(ppl_pin(pthread_self(), 2), 0);
	assert_int_equal(ppl_current_vp(), 2);
	pid_t p = fork();
	assert_true(p >= 0);
	if (p == 0) {
		pthread_t t;
		int bad = ppl_pinned(pthread_self()) != -1;
		bad |= pthread_create(&t, NULL, child_thread, NULL) != 0;
		bad |= pthread_join(t, NULL) != 0;
		for (int i = 0; i < 10; i++)
			sched_yield();
		bad |= ppl_migrate(pthread_self(), 0) != 0;
		_exit(bad ? 3 : 0);
	}
	int st = -1;
	assert_int_equal(waitpid(p, &st, 0), p);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(ppl_unpin(pthread_self()), 0);
}

/* The caller pins itself: not the main thread, which cannot move when TLS
 * is shared per VP. */
static void *body(void *fn)
{
	((void (*)(void))fn)();
	return NULL;
}

static void in_thread(void (*fn)(void))
{
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, body, (void *)fn), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
}

static void test_states(void **state)
{
	(void)state;
	in_thread(states);
}

static void test_ready(void **state)
{
	(void)state;
	in_thread(ready);
}

static void test_errors(void **state)
{
	(void)state;
	in_thread(errors);
}

static void test_fork(void **state)
{
	(void)state;
	in_thread(forked);
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
		cmocka_unit_test(test_ring),
		cmocka_unit_test(test_states),
		cmocka_unit_test(test_ready),
		cmocka_unit_test(test_pin),
		cmocka_unit_test(test_pin_set),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_fork),
	};
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	return cmocka_run_group_tests(tests, setup, NULL);
}
