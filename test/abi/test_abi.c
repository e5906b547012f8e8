/* include/pthread.h against glibc's <pthread.h>.
 *
 * This file is compiled three ways (test/abi/meson.build):
 * - ABI_SIDE_OURS, with include/ on the path: builds the table of sizes,
 *   alignments, static-initialiser bytes, constants and "is a macro" facts
 *   as libppl's header gives them (abi_ours()).
 * - ABI_SIDE_SYSTEM, with the system header: builds the same table (static
 *   here) and the cmocka program comparing the two, entry by entry.
 * - ABI_SYNTAX_CHECK, with include/ on the path, as C (several -std) or as
 *   C++ (-x c++): only compiled, with -Wall -Wextra -pedantic -Werror.
 * In the first two, every function of src/vpindep/api.def is checked at
 * compile time to be declared with exactly the type api.def gives it, so
 * the header, api.def and glibc agree. */
#if defined ABI_SYNTAX_CHECK

#ifdef __cplusplus
#include <condition_variable>
#include <mutex>
#include <shared_mutex>
#include <thread>
#endif
#include <pthread.h>
#include <signal.h>
#ifndef __PPL_PTHREAD_H
#error "not libppl's pthread.h"
#endif

static void handler(void *arg)
{
	(void)arg;
}

int main(void)
{
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	static pthread_once_t o = PTHREAD_ONCE_INIT;
#if defined __USE_UNIX98 || defined __USE_XOPEN2K
	static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	(void)rw;
#endif
#ifdef __USE_GNU
	static pthread_mutex_t mr = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	static pthread_mutex_t me = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	static pthread_mutex_t ma = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
	static pthread_rwlock_t rww = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
	(void)mr, (void)me, (void)ma, (void)rww;
#endif
	(void)m, (void)c, (void)o;
	pthread_cleanup_push(handler, 0);
	pthread_cleanup_push(handler, 0);
	goto label;
label:
	pthread_cleanup_pop(0);
	pthread_cleanup_pop(1);
#ifdef __USE_GNU
	pthread_cleanup_push_defer_np(handler, 0);
	pthread_cleanup_pop_restore_np(1);
#endif
#ifdef __cplusplus
	std::mutex sm;
	std::recursive_mutex rm;
	std::shared_mutex shm;
	std::condition_variable cv;
	std::thread t([&] {
		std::lock_guard<std::mutex> g(sm);
		cv.notify_one();
	});
	t.join();
	std::lock_guard<std::recursive_mutex> g(rm);
	std::shared_lock<std::shared_mutex> sl(shm);
#endif
	return pthread_equal(pthread_self(), pthread_self()) ? 0 : 1;
}

#else /* ABI_SIDE_OURS or ABI_SIDE_SYSTEM */

#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/time.h>
#include <sys/times.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#if defined ABI_SIDE_OURS
#ifndef __PPL_PTHREAD_H
#error "ABI_SIDE_OURS must see libppl's include/pthread.h"
#endif
#define TABLE_FN abi_ours
#elif defined ABI_SIDE_SYSTEM
#ifdef __PPL_PTHREAD_H
#error "ABI_SIDE_SYSTEM must see the C library's pthread.h"
#endif
#define TABLE_FN abi_system
#else
#error "define ABI_SIDE_OURS, ABI_SIDE_SYSTEM or ABI_SYNTAX_CHECK"
#endif

/* Every entry point has the type api.def gives it (the preload layer
 * defines each with that type).  An assignment, not
 * __builtin_types_compatible_p, because GCC counts noreturn and const as
 * part of a function's type; a mismatch is made an error.  It sits inside
 * sizeof, so no reference to the function is emitted. */
#pragma GCC diagnostic error "-Wincompatible-pointer-types"
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#ifdef ABI_SIDE_SYSTEM
/* Exported by the C library (GLIBC_2.2.5) for old binaries; its header no
 * longer declares them. */
extern void _pthread_cleanup_push(struct _pthread_cleanup_buffer *, void (*)(void *), void *);
extern void _pthread_cleanup_pop(struct _pthread_cleanup_buffer *, int);
extern void _pthread_cleanup_push_defer(struct _pthread_cleanup_buffer *, void (*)(void *), void *);
extern void _pthread_cleanup_pop_restore(struct _pthread_cleanup_buffer *, int);
#endif
/* Defined by glibc for old X/Open programs; declared only for them. */
extern __sighandler_t bsd_signal(int, __sighandler_t);
/* Exported by glibc (GLIBC_2.1), declared in no header. */
extern int __libc_allocate_rtsig(int);
/* Exported by glibc (GLIBC_2.2.5), declared in no header. */
extern int __sigpause(int, int);
extern int __xpg_sigpause(int);
extern int __sigaction(int, const struct sigaction *, struct sigaction *);
extern int __sigsuspend(const sigset_t *);
#define PPL_FN(ret, name, params, args) \
	_Static_assert(sizeof(*(ret(**) params)0 = &name) != 0, #name);
#include "../../src/vpindep/api.def"
#undef PPL_FN

/* Declared by the header although implemented later or by the C library. */
#define CHECK_DECL(name, type) _Static_assert(sizeof(*(__typeof__(type) *)0 = &name) != 0, #name);
CHECK_DECL(pthread_cancel, int (*)(pthread_t))
CHECK_DECL(pthread_setcancelstate, int (*)(int, int *))
CHECK_DECL(pthread_setcanceltype, int (*)(int, int *))
CHECK_DECL(pthread_testcancel, void (*)(void))
CHECK_DECL(pthread_kill, int (*)(pthread_t, int))
CHECK_DECL(pthread_sigmask, int (*)(int, const sigset_t *, sigset_t *))
CHECK_DECL(pthread_atfork, int (*)(void (*)(void), void (*)(void), void (*)(void)))
CHECK_DECL(pthread_getcpuclockid, int (*)(pthread_t, clockid_t *))
CHECK_DECL(pthread_setaffinity_np, int (*)(pthread_t, size_t, const cpu_set_t *))
CHECK_DECL(pthread_getaffinity_np, int (*)(pthread_t, size_t, cpu_set_t *))
CHECK_DECL(pthread_mutex_consistent_np, int (*)(pthread_mutex_t *))
CHECK_DECL(pthread_mutexattr_getrobust_np, int (*)(pthread_mutexattr_t *, int *))
CHECK_DECL(pthread_mutexattr_setrobust_np, int (*)(pthread_mutexattr_t *, int))
#ifdef ABI_SIDE_OURS
CHECK_DECL(_pthread_cleanup_push,
	   void (*)(struct _pthread_cleanup_buffer *, void (*)(void *), void *))
CHECK_DECL(_pthread_cleanup_pop, void (*)(struct _pthread_cleanup_buffer *, int))
#endif

/* One row per fact.  Both sides fill the same rows in the same order. */
struct abi_row {
	const char *name;
	unsigned char bytes[64];
	size_t len;
};

#define MAX_ROWS 256

struct abi_table {
	struct abi_row row[MAX_ROWS];
	size_t n;
};

static void put(struct abi_table *t, const char *name, const void *p, size_t len)
{
	if (t->n >= MAX_ROWS || len > sizeof t->row[0].bytes) {
		fprintf(stderr, "abi table overflow at %s\n", name);
		abort();
	}
	struct abi_row *r = &t->row[t->n++];
	r->name = name;
	r->len = len;
	memcpy(r->bytes, p, len);
}

static void put_long(struct abi_table *t, const char *name, long v)
{
	put(t, name, &v, sizeof v);
}

#define TYPE(T)                                                  \
	do {                                                     \
		put_long(t, "sizeof " #T, (long)sizeof(T));       \
		put_long(t, "alignof " #T, (long)_Alignof(T));    \
	} while (0)

/* The bytes of a static object initialised with the macro: padding of a
 * static object is zero, so the comparison covers every byte. */
#define INIT(T, M)                                    \
	do {                                          \
		static const T obj_##M = M;           \
		put(t, #M, &obj_##M, sizeof obj_##M); \
	} while (0)

#define CONST(C) put_long(t, #C, (long)(C))

#define IS_MACRO(C, defined_flag) put_long(t, "#ifdef " #C, defined_flag)

void TABLE_FN(struct abi_table *t);
void TABLE_FN(struct abi_table *t)
{
	t->n = 0;
	TYPE(pthread_t);
	TYPE(pthread_attr_t);
	TYPE(pthread_mutex_t);
	TYPE(pthread_mutexattr_t);
	TYPE(pthread_cond_t);
	TYPE(pthread_condattr_t);
	TYPE(pthread_rwlock_t);
	TYPE(pthread_rwlockattr_t);
	TYPE(pthread_spinlock_t);
	TYPE(pthread_barrier_t);
	TYPE(pthread_barrierattr_t);
	TYPE(pthread_key_t);
	TYPE(pthread_once_t);
	TYPE(struct _pthread_cleanup_buffer);
	put_long(t, "offsetof __prev", (long)offsetof(struct _pthread_cleanup_buffer, __prev));
	put_long(t, "offsetof __canceltype",
		 (long)offsetof(struct _pthread_cleanup_buffer, __canceltype));
	TYPE(struct sched_param);
	TYPE(cpu_set_t);

	INIT(pthread_mutex_t, PTHREAD_MUTEX_INITIALIZER);
	INIT(pthread_mutex_t, PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP);
	INIT(pthread_mutex_t, PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP);
	INIT(pthread_mutex_t, PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP);
	INIT(pthread_cond_t, PTHREAD_COND_INITIALIZER);
	INIT(pthread_rwlock_t, PTHREAD_RWLOCK_INITIALIZER);
	INIT(pthread_rwlock_t, PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP);
	INIT(pthread_once_t, PTHREAD_ONCE_INIT);

	CONST(PTHREAD_CREATE_JOINABLE);
	CONST(PTHREAD_CREATE_DETACHED);
	CONST(PTHREAD_MUTEX_TIMED_NP);
	CONST(PTHREAD_MUTEX_RECURSIVE_NP);
	CONST(PTHREAD_MUTEX_ERRORCHECK_NP);
	CONST(PTHREAD_MUTEX_ADAPTIVE_NP);
	CONST(PTHREAD_MUTEX_NORMAL);
	CONST(PTHREAD_MUTEX_RECURSIVE);
	CONST(PTHREAD_MUTEX_ERRORCHECK);
	CONST(PTHREAD_MUTEX_DEFAULT);
	CONST(PTHREAD_MUTEX_FAST_NP);
	CONST(PTHREAD_MUTEX_STALLED);
	CONST(PTHREAD_MUTEX_STALLED_NP);
	CONST(PTHREAD_MUTEX_ROBUST);
	CONST(PTHREAD_MUTEX_ROBUST_NP);
	CONST(PTHREAD_PRIO_NONE);
	CONST(PTHREAD_PRIO_INHERIT);
	CONST(PTHREAD_PRIO_PROTECT);
	CONST(PTHREAD_RWLOCK_PREFER_READER_NP);
	CONST(PTHREAD_RWLOCK_PREFER_WRITER_NP);
	CONST(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	CONST(PTHREAD_RWLOCK_DEFAULT_NP);
	CONST(PTHREAD_INHERIT_SCHED);
	CONST(PTHREAD_EXPLICIT_SCHED);
	CONST(PTHREAD_SCOPE_SYSTEM);
	CONST(PTHREAD_SCOPE_PROCESS);
	CONST(PTHREAD_PROCESS_PRIVATE);
	CONST(PTHREAD_PROCESS_SHARED);
	CONST(PTHREAD_CANCEL_ENABLE);
	CONST(PTHREAD_CANCEL_DISABLE);
	CONST(PTHREAD_CANCEL_DEFERRED);
	CONST(PTHREAD_CANCEL_ASYNCHRONOUS);
	CONST((intptr_t)PTHREAD_CANCELED);
	CONST(PTHREAD_ONCE_INIT);
	CONST(PTHREAD_BARRIER_SERIAL_THREAD);
	CONST(PTHREAD_ATTR_NO_SIGMASK_NP);
	CONST(PTHREAD_STACK_MIN);

	/* The enumerators glibc also makes macros, and only those. */
#define FLAG(C) IS_MACRO(C, 1)
#ifdef PTHREAD_CREATE_JOINABLE
	FLAG(PTHREAD_CREATE_JOINABLE);
#endif
#ifdef PTHREAD_CREATE_DETACHED
	FLAG(PTHREAD_CREATE_DETACHED);
#endif
#ifdef PTHREAD_INHERIT_SCHED
	FLAG(PTHREAD_INHERIT_SCHED);
#endif
#ifdef PTHREAD_EXPLICIT_SCHED
	FLAG(PTHREAD_EXPLICIT_SCHED);
#endif
#ifdef PTHREAD_SCOPE_SYSTEM
	FLAG(PTHREAD_SCOPE_SYSTEM);
#endif
#ifdef PTHREAD_SCOPE_PROCESS
	FLAG(PTHREAD_SCOPE_PROCESS);
#endif
#ifdef PTHREAD_PROCESS_PRIVATE
	FLAG(PTHREAD_PROCESS_PRIVATE);
#endif
#ifdef PTHREAD_PROCESS_SHARED
	FLAG(PTHREAD_PROCESS_SHARED);
#endif
#ifdef PTHREAD_CANCEL_ENABLE
	FLAG(PTHREAD_CANCEL_ENABLE);
#endif
#ifdef PTHREAD_CANCEL_DISABLE
	FLAG(PTHREAD_CANCEL_DISABLE);
#endif
#ifdef PTHREAD_CANCEL_DEFERRED
	FLAG(PTHREAD_CANCEL_DEFERRED);
#endif
#ifdef PTHREAD_CANCEL_ASYNCHRONOUS
	FLAG(PTHREAD_CANCEL_ASYNCHRONOUS);
#endif
#ifdef PTHREAD_MUTEX_NORMAL
	FLAG(PTHREAD_MUTEX_NORMAL);
#endif
#ifdef PTHREAD_MUTEX_RECURSIVE
	FLAG(PTHREAD_MUTEX_RECURSIVE);
#endif
#ifdef PTHREAD_MUTEX_ROBUST
	FLAG(PTHREAD_MUTEX_ROBUST);
#endif
#ifdef PTHREAD_PRIO_INHERIT
	FLAG(PTHREAD_PRIO_INHERIT);
#endif
#ifdef PTHREAD_RWLOCK_PREFER_WRITER_NP
	FLAG(PTHREAD_RWLOCK_PREFER_WRITER_NP);
#endif
#ifdef pthread_cleanup_push
	FLAG(pthread_cleanup_push);
#endif
#ifdef pthread_cleanup_push_defer_np
	FLAG(pthread_cleanup_push_defer_np);
#endif
#undef FLAG
}

#ifdef ABI_SIDE_SYSTEM

#include <setjmp.h>

#include <cmocka.h>

void abi_ours(struct abi_table *t);

static struct abi_table ours, sys;

static int setup(void **state)
{
	(void)state;
	abi_ours(&ours);
	abi_system(&sys);
	return 0;
}

static void dump(const char *who, const struct abi_row *r)
{
	fprintf(stderr, "  %-6s %s:", who, r->name);
	for (size_t i = 0; i < r->len; i++)
		fprintf(stderr, " %02x", r->bytes[i]);
	fputc('\n', stderr);
}

static void test_same_rows(void **state)
{
	(void)state;
	assert_int_equal(ours.n, sys.n);
	assert_true(ours.n > 80);
}

static void test_every_fact_matches(void **state)
{
	(void)state;
	int bad = 0;
	for (size_t i = 0; i < sys.n; i++) {
		const struct abi_row *o = &ours.row[i], *s = &sys.row[i];
		if (strcmp(o->name, s->name) != 0 || o->len != s->len ||
		    memcmp(o->bytes, s->bytes, s->len) != 0) {
			fprintf(stderr, "mismatch:\n");
			dump("ours", o);
			dump("glibc", s);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

/* The table must not be trivially equal: spot-check known glibc facts. */
static void test_known_values(void **state)
{
	(void)state;
#if defined __x86_64__ && !defined __ILP32__
	assert_int_equal(sizeof(pthread_attr_t), 56);
	assert_int_equal(sizeof(pthread_mutex_t), 40);
	assert_int_equal(sizeof(pthread_cond_t), 48);
	assert_int_equal(sizeof(pthread_rwlock_t), 56);
	assert_int_equal(sizeof(pthread_barrier_t), 32);
#endif
	static const pthread_mutex_t rec = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	assert_int_equal(rec.__data.__kind, PTHREAD_MUTEX_RECURSIVE_NP);
	static const pthread_rwlock_t w = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
	assert_int_equal(w.__data.__flags, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_rows),
		cmocka_unit_test(test_every_fact_matches),
		cmocka_unit_test(test_known_values),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}

#endif /* ABI_SIDE_SYSTEM */
#endif
