/* libppl's public POSIX threads header, for programs relinked with -lppl.
 *
 * The types are glibc's own (bits/pthreadtypes.h, reached through
 * <sys/types.h> by every other C library header), so that an object is the
 * same bytes whether a program was built against this header or glibc's and
 * whether it runs relinked or under LD_PRELOAD.  Everything below that is
 * visible to a program -- constants, enumerators, static initialisers,
 * feature-test conditions, exception specifications -- follows glibc 2.36 so
 * that a program compiles and behaves the same against either header;
 * test/abi/test_abi.c compares the two.  docs/abi.md states the promises.
 *
 * The include guard is glibc's: whichever <pthread.h> comes first in a
 * translation unit wins, and glibc's <bits/sigthread.h> accepts _PTHREAD_H
 * as "included from a header that may include me". */
#ifndef _PTHREAD_H
#define _PTHREAD_H 1
#define __PPL_PTHREAD_H 1

#include <features.h>
#include <sched.h>
#include <time.h>

#include <bits/pthreadtypes.h>
#include <bits/types/__sigset_t.h>
#include <bits/types/struct_timespec.h>
#include <bits/setjmp.h>
#include <bits/wordsize.h>
#ifdef __USE_MISC
#include <bits/pthread_stack_min-dynamic.h>
#endif

/* ---- constants ----------------------------------------------------------
 * glibc makes some enumerators macros as well, so that "#ifdef NAME" works;
 * the same names, and only those, are macros here. */

enum {
	PTHREAD_CREATE_JOINABLE = 0,
#define PTHREAD_CREATE_JOINABLE PTHREAD_CREATE_JOINABLE
	PTHREAD_CREATE_DETACHED = 1
#define PTHREAD_CREATE_DETACHED PTHREAD_CREATE_DETACHED
};

enum {
	PTHREAD_MUTEX_TIMED_NP = 0,
	PTHREAD_MUTEX_RECURSIVE_NP = 1,
	PTHREAD_MUTEX_ERRORCHECK_NP = 2,
	PTHREAD_MUTEX_ADAPTIVE_NP = 3
#if defined __USE_UNIX98 || defined __USE_XOPEN2K8
	,
	PTHREAD_MUTEX_NORMAL = PTHREAD_MUTEX_TIMED_NP,
	PTHREAD_MUTEX_RECURSIVE = PTHREAD_MUTEX_RECURSIVE_NP,
	PTHREAD_MUTEX_ERRORCHECK = PTHREAD_MUTEX_ERRORCHECK_NP,
	PTHREAD_MUTEX_DEFAULT = PTHREAD_MUTEX_NORMAL
#endif
#ifdef __USE_GNU
	,
	PTHREAD_MUTEX_FAST_NP = PTHREAD_MUTEX_TIMED_NP
#endif
};

#ifdef __USE_XOPEN2K
enum {
	PTHREAD_MUTEX_STALLED = 0,
	PTHREAD_MUTEX_STALLED_NP = PTHREAD_MUTEX_STALLED,
	PTHREAD_MUTEX_ROBUST = 1,
	PTHREAD_MUTEX_ROBUST_NP = PTHREAD_MUTEX_ROBUST
};
#endif

#if defined __USE_POSIX199506 || defined __USE_UNIX98
enum {
	PTHREAD_PRIO_NONE = 0,
	PTHREAD_PRIO_INHERIT = 1,
	PTHREAD_PRIO_PROTECT = 2
};
#endif

#if defined __USE_UNIX98 || defined __USE_XOPEN2K
enum {
	PTHREAD_RWLOCK_PREFER_READER_NP = 0,
	PTHREAD_RWLOCK_PREFER_WRITER_NP = 1,
	PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP = 2,
	PTHREAD_RWLOCK_DEFAULT_NP = PTHREAD_RWLOCK_PREFER_READER_NP
};
#endif

enum {
	PTHREAD_INHERIT_SCHED = 0,
#define PTHREAD_INHERIT_SCHED PTHREAD_INHERIT_SCHED
	PTHREAD_EXPLICIT_SCHED = 1
#define PTHREAD_EXPLICIT_SCHED PTHREAD_EXPLICIT_SCHED
};

/* libppl's natural scope is PROCESS (threads multiplexed on the VPs);
 * SYSTEM gives a thread a VP of its own.  The values are glibc's. */
enum {
	PTHREAD_SCOPE_SYSTEM = 0,
#define PTHREAD_SCOPE_SYSTEM PTHREAD_SCOPE_SYSTEM
	PTHREAD_SCOPE_PROCESS = 1
#define PTHREAD_SCOPE_PROCESS PTHREAD_SCOPE_PROCESS
};

enum {
	PTHREAD_PROCESS_PRIVATE = 0,
#define PTHREAD_PROCESS_PRIVATE PTHREAD_PROCESS_PRIVATE
	PTHREAD_PROCESS_SHARED = 1
#define PTHREAD_PROCESS_SHARED PTHREAD_PROCESS_SHARED
};

enum {
	PTHREAD_CANCEL_ENABLE = 0,
#define PTHREAD_CANCEL_ENABLE PTHREAD_CANCEL_ENABLE
	PTHREAD_CANCEL_DISABLE = 1
#define PTHREAD_CANCEL_DISABLE PTHREAD_CANCEL_DISABLE
};

enum {
	PTHREAD_CANCEL_DEFERRED = 0,
#define PTHREAD_CANCEL_DEFERRED PTHREAD_CANCEL_DEFERRED
	PTHREAD_CANCEL_ASYNCHRONOUS = 1
#define PTHREAD_CANCEL_ASYNCHRONOUS PTHREAD_CANCEL_ASYNCHRONOUS
};

#define PTHREAD_CANCELED ((void *) -1)
#define PTHREAD_ONCE_INIT 0
#ifdef __USE_XOPEN2K
/* Distinct from 0 and from every errno value. */
#define PTHREAD_BARRIER_SERIAL_THREAD -1
#endif
#ifdef __USE_GNU
/* pthread_attr_getsigmask_np: the attribute carries no signal mask. */
#define PTHREAD_ATTR_NO_SIGMASK_NP (-1)
#endif

/* ---- static initialisers --------------------------------------------------
 * The bytes must be glibc's, since libppl's objects overlay the same storage
 * and an object initialised by one header may be used by a program built
 * with the other.  The mutex and rwlock layouts differ between
 * architectures, so their field lists come from the per-architecture macros
 * that glibc's <bits/struct_mutex.h> and <bits/struct_rwlock.h> (included by
 * <bits/pthreadtypes.h>) provide together with the types. */

#define PTHREAD_MUTEX_INITIALIZER \
	{ { __PTHREAD_MUTEX_INITIALIZER (PTHREAD_MUTEX_TIMED_NP) } }
#ifdef __USE_GNU
#define PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP \
	{ { __PTHREAD_MUTEX_INITIALIZER (PTHREAD_MUTEX_RECURSIVE_NP) } }
#define PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP \
	{ { __PTHREAD_MUTEX_INITIALIZER (PTHREAD_MUTEX_ERRORCHECK_NP) } }
#define PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP \
	{ { __PTHREAD_MUTEX_INITIALIZER (PTHREAD_MUTEX_ADAPTIVE_NP) } }
#endif

#if defined __USE_UNIX98 || defined __USE_XOPEN2K
#define PTHREAD_RWLOCK_INITIALIZER \
	{ { __PTHREAD_RWLOCK_INITIALIZER (PTHREAD_RWLOCK_DEFAULT_NP) } }
#ifdef __USE_GNU
#define PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP \
	{ { __PTHREAD_RWLOCK_INITIALIZER (PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP) } }
#endif
#endif

/* struct __pthread_cond_s is the same on every architecture: two 64-bit
 * wide counters, then nine unsigned words. */
#define PTHREAD_COND_INITIALIZER \
	{ { { 0 }, { 0 }, { 0, 0 }, { 0, 0 }, 0, 0, { 0, 0 } } }

/* ---- cleanup handlers -----------------------------------------------------
 * The buffer of the C-library-call form of pthread_cleanup_push; its layout
 * is the GLIBC_2.2.5 ABI of _pthread_cleanup_push/_pthread_cleanup_pop. */
struct _pthread_cleanup_buffer {
	void (*__routine) (void *);
	void *__arg;
	int __canceltype;                        /* saved by the _defer_np form */
	struct _pthread_cleanup_buffer *__prev;  /* the next older handler */
};

__BEGIN_DECLS

/* ---- threads ------------------------------------------------------------- */

/* Functions that may block, or that synchronise with other threads, are not
 * __THROW (which implies "leaf": it would let the compiler keep a static
 * variable in a register across the call).  Cancellation points are not
 * nothrow either, since cancellation unwinds through them. */
extern int pthread_create (pthread_t *__restrict __newthread,
			   const pthread_attr_t *__restrict __attr,
			   void *(*__start_routine) (void *),
			   void *__restrict __arg) __THROWNL __nonnull ((1, 3));
extern void pthread_exit (void *__retval) __attribute__ ((__noreturn__));
extern int pthread_join (pthread_t __th, void **__thread_return);
#ifdef __USE_GNU
extern int pthread_tryjoin_np (pthread_t __th, void **__thread_return) __THROW;
extern int pthread_timedjoin_np (pthread_t __th, void **__thread_return,
				 const struct timespec *__abstime);
extern int pthread_clockjoin_np (pthread_t __th, void **__thread_return,
				 clockid_t __clockid,
				 const struct timespec *__abstime);
#endif
extern int pthread_detach (pthread_t __th) __THROW;
/* A user thread keeps its identity when it migrates between VPs, so
 * "const" (same result for the whole life of the caller) holds. */
extern pthread_t pthread_self (void) __THROW __attribute__ ((__const__));
extern int pthread_equal (pthread_t __thread1, pthread_t __thread2)
	__THROW __attribute__ ((__const__));

/* ---- thread attributes ----------------------------------------------------- */

extern int pthread_attr_init (pthread_attr_t *__attr) __THROW __nonnull ((1));
extern int pthread_attr_destroy (pthread_attr_t *__attr) __THROW __nonnull ((1));
extern int pthread_attr_getdetachstate (const pthread_attr_t *__attr,
					int *__detachstate)
	__THROW __nonnull ((1, 2));
extern int pthread_attr_setdetachstate (pthread_attr_t *__attr, int __detachstate)
	__THROW __nonnull ((1));
extern int pthread_attr_getguardsize (const pthread_attr_t *__attr,
				      size_t *__guardsize)
	__THROW __nonnull ((1, 2));
extern int pthread_attr_setguardsize (pthread_attr_t *__attr, size_t __guardsize)
	__THROW __nonnull ((1));
extern int pthread_attr_getschedparam (const pthread_attr_t *__restrict __attr,
				       struct sched_param *__restrict __param)
	__THROW __nonnull ((1, 2));
extern int pthread_attr_setschedparam (pthread_attr_t *__restrict __attr,
				       const struct sched_param *__restrict __param)
	__THROW __nonnull ((1, 2));
extern int pthread_attr_getschedpolicy (const pthread_attr_t *__restrict __attr,
					int *__restrict __policy)
	__THROW __nonnull ((1, 2));
extern int pthread_attr_setschedpolicy (pthread_attr_t *__attr, int __policy)
	__THROW __nonnull ((1));
extern int pthread_attr_getinheritsched (const pthread_attr_t *__restrict __attr,
					 int *__restrict __inherit)
	__THROW __nonnull ((1, 2));
extern int pthread_attr_setinheritsched (pthread_attr_t *__attr, int __inherit)
	__THROW __nonnull ((1));
extern int pthread_attr_getscope (const pthread_attr_t *__restrict __attr,
				  int *__restrict __scope)
	__THROW __nonnull ((1, 2));
extern int pthread_attr_setscope (pthread_attr_t *__attr, int __scope)
	__THROW __nonnull ((1));
extern int pthread_attr_getstackaddr (const pthread_attr_t *__restrict __attr,
				      void **__restrict __stackaddr)
	__THROW __nonnull ((1, 2)) __attribute_deprecated__;
extern int pthread_attr_setstackaddr (pthread_attr_t *__attr, void *__stackaddr)
	__THROW __nonnull ((1)) __attribute_deprecated__;
extern int pthread_attr_getstacksize (const pthread_attr_t *__restrict __attr,
				      size_t *__restrict __stacksize)
	__THROW __nonnull ((1, 2));
extern int pthread_attr_setstacksize (pthread_attr_t *__attr, size_t __stacksize)
	__THROW __nonnull ((1));
#ifdef __USE_XOPEN2K
extern int pthread_attr_getstack (const pthread_attr_t *__restrict __attr,
				  void **__restrict __stackaddr,
				  size_t *__restrict __stacksize)
	__THROW __nonnull ((1, 2, 3));
extern int pthread_attr_setstack (pthread_attr_t *__attr, void *__stackaddr,
				  size_t __stacksize)
	__THROW __nonnull ((1));
#endif
#ifdef __USE_GNU
extern int pthread_attr_setaffinity_np (pthread_attr_t *__attr, size_t __cpusetsize,
					const cpu_set_t *__cpuset)
	__THROW __nonnull ((1, 3));
extern int pthread_attr_getaffinity_np (const pthread_attr_t *__attr,
					size_t __cpusetsize, cpu_set_t *__cpuset)
	__THROW __nonnull ((1, 3));
extern int pthread_attr_setsigmask_np (pthread_attr_t *__attr,
				       const __sigset_t *__sigmask);
extern int pthread_attr_getsigmask_np (const pthread_attr_t *__attr,
				       __sigset_t *__sigmask);
extern int pthread_getattr_default_np (pthread_attr_t *__attr)
	__THROW __nonnull ((1));
extern int pthread_setattr_default_np (const pthread_attr_t *__attr)
	__THROW __nonnull ((1));
extern int pthread_getattr_np (pthread_t __th, pthread_attr_t *__attr)
	__THROW __nonnull ((2));
#endif

/* ---- scheduling, names, concurrency, affinity ---------------------------------- */

extern int pthread_setschedparam (pthread_t __target_thread, int __policy,
				  const struct sched_param *__param)
	__THROW __nonnull ((3));
extern int pthread_getschedparam (pthread_t __target_thread,
				  int *__restrict __policy,
				  struct sched_param *__restrict __param)
	__THROW __nonnull ((2, 3));
extern int pthread_setschedprio (pthread_t __target_thread, int __prio) __THROW;
#ifdef __USE_GNU
extern int pthread_getname_np (pthread_t __target_thread, char *__buf,
			       size_t __buflen)
	__THROW __nonnull ((2));
extern int pthread_setname_np (pthread_t __target_thread, const char *__name)
	__THROW __nonnull ((2));
#endif
#ifdef __USE_UNIX98
extern int pthread_getconcurrency (void) __THROW;
extern int pthread_setconcurrency (int __level) __THROW;
#endif
#ifdef __USE_GNU
/* libppl exports pthread_yield itself (glibc redirects it to sched_yield;
 * both are libppl's here, so a plain declaration behaves the same). */
extern int pthread_yield (void) __THROW
	__attribute_deprecated_msg__ ("pthread_yield is deprecated, use sched_yield instead");
extern int pthread_setaffinity_np (pthread_t __th, size_t __cpusetsize,
				   const cpu_set_t *__cpuset)
	__THROW __nonnull ((3));
extern int pthread_getaffinity_np (pthread_t __th, size_t __cpusetsize,
				   cpu_set_t *__cpuset)
	__THROW __nonnull ((3));
#endif

/* ---- once, cancellation, signals, fork, clocks ------------------------------- */

/* Not __THROW: the routine may throw, and it runs in this translation unit. */
extern int pthread_once (pthread_once_t *__once_control,
			 void (*__init_routine) (void)) __nonnull ((1, 2));

extern int pthread_setcancelstate (int __state, int *__oldstate);
extern int pthread_setcanceltype (int __type, int *__oldtype);
extern int pthread_cancel (pthread_t __th);
extern void pthread_testcancel (void);

/* Declared exactly as <signal.h> declares them (<bits/sigthread.h>), so the
 * two declarations agree, including the C++ exception specification. */
extern int pthread_sigmask (int __how, const __sigset_t *__restrict __newmask,
			    __sigset_t *__restrict __oldmask) __THROW;
extern int pthread_kill (pthread_t __threadid, int __signo) __THROW;

extern int pthread_atfork (void (*__prepare) (void), void (*__parent) (void),
			   void (*__child) (void)) __THROW;

#ifdef __USE_XOPEN2K
extern int pthread_getcpuclockid (pthread_t __thread_id, clockid_t *__clock_id)
	__THROW __nonnull ((2));
#endif

/* ---- mutexes -------------------------------------------------------------------- */

extern int pthread_mutex_init (pthread_mutex_t *__mutex,
			       const pthread_mutexattr_t *__mutexattr)
	__THROW __nonnull ((1));
extern int pthread_mutex_destroy (pthread_mutex_t *__mutex) __THROW __nonnull ((1));
extern int pthread_mutex_trylock (pthread_mutex_t *__mutex) __THROWNL __nonnull ((1));
extern int pthread_mutex_lock (pthread_mutex_t *__mutex) __THROWNL __nonnull ((1));
#ifdef __USE_XOPEN2K
extern int pthread_mutex_timedlock (pthread_mutex_t *__restrict __mutex,
				    const struct timespec *__restrict __abstime)
	__THROWNL __nonnull ((1, 2));
#endif
#ifdef __USE_GNU
extern int pthread_mutex_clocklock (pthread_mutex_t *__restrict __mutex,
				    clockid_t __clockid,
				    const struct timespec *__restrict __abstime)
	__THROWNL __nonnull ((1, 3));
#endif
extern int pthread_mutex_unlock (pthread_mutex_t *__mutex) __THROWNL __nonnull ((1));
extern int pthread_mutex_getprioceiling (const pthread_mutex_t *__restrict __mutex,
					 int *__restrict __prioceiling)
	__THROW __nonnull ((1, 2));
extern int pthread_mutex_setprioceiling (pthread_mutex_t *__restrict __mutex,
					 int __prioceiling,
					 int *__restrict __old_ceiling)
	__THROW __nonnull ((1, 3));
#ifdef __USE_XOPEN2K8
extern int pthread_mutex_consistent (pthread_mutex_t *__mutex) __THROW __nonnull ((1));
#ifdef __USE_GNU
#ifdef __REDIRECT_NTH
extern int __REDIRECT_NTH (pthread_mutex_consistent_np, (pthread_mutex_t *),
			   pthread_mutex_consistent) __nonnull ((1))
	__attribute_deprecated_msg__ ("pthread_mutex_consistent_np is deprecated, use pthread_mutex_consistent");
#else
#define pthread_mutex_consistent_np pthread_mutex_consistent
#endif
#endif
#endif

extern int pthread_mutexattr_init (pthread_mutexattr_t *__attr) __THROW __nonnull ((1));
extern int pthread_mutexattr_destroy (pthread_mutexattr_t *__attr) __THROW __nonnull ((1));
extern int pthread_mutexattr_getpshared (const pthread_mutexattr_t *__restrict __attr,
					 int *__restrict __pshared)
	__THROW __nonnull ((1, 2));
extern int pthread_mutexattr_setpshared (pthread_mutexattr_t *__attr, int __pshared)
	__THROW __nonnull ((1));
#if defined __USE_UNIX98 || defined __USE_XOPEN2K8
extern int pthread_mutexattr_gettype (const pthread_mutexattr_t *__restrict __attr,
				      int *__restrict __kind)
	__THROW __nonnull ((1, 2));
extern int pthread_mutexattr_settype (pthread_mutexattr_t *__attr, int __kind)
	__THROW __nonnull ((1));
#endif
extern int pthread_mutexattr_getprotocol (const pthread_mutexattr_t *__restrict __attr,
					  int *__restrict __protocol)
	__THROW __nonnull ((1, 2));
extern int pthread_mutexattr_setprotocol (pthread_mutexattr_t *__attr, int __protocol)
	__THROW __nonnull ((1));
extern int pthread_mutexattr_getprioceiling (const pthread_mutexattr_t *__restrict __attr,
					     int *__restrict __prioceiling)
	__THROW __nonnull ((1, 2));
extern int pthread_mutexattr_setprioceiling (pthread_mutexattr_t *__attr,
					     int __prioceiling)
	__THROW __nonnull ((1));
#ifdef __USE_XOPEN2K
extern int pthread_mutexattr_getrobust (const pthread_mutexattr_t *__attr,
					int *__robustness)
	__THROW __nonnull ((1, 2));
extern int pthread_mutexattr_setrobust (pthread_mutexattr_t *__attr, int __robustness)
	__THROW __nonnull ((1));
#ifdef __USE_GNU
#ifdef __REDIRECT_NTH
extern int __REDIRECT_NTH (pthread_mutexattr_getrobust_np,
			   (pthread_mutexattr_t *, int *),
			   pthread_mutexattr_getrobust) __nonnull ((1))
	__attribute_deprecated_msg__ ("pthread_mutexattr_getrobust_np is deprecated, use pthread_mutexattr_getrobust");
extern int __REDIRECT_NTH (pthread_mutexattr_setrobust_np,
			   (pthread_mutexattr_t *, int),
			   pthread_mutexattr_setrobust) __nonnull ((1))
	__attribute_deprecated_msg__ ("pthread_mutexattr_setrobust_np is deprecated, use pthread_mutexattr_setrobust");
#else
#define pthread_mutexattr_getrobust_np pthread_mutexattr_getrobust
#define pthread_mutexattr_setrobust_np pthread_mutexattr_setrobust
#endif
#endif
#endif

/* ---- read-write locks ---------------------------------------------------------------- */

#if defined __USE_UNIX98 || defined __USE_XOPEN2K
extern int pthread_rwlock_init (pthread_rwlock_t *__restrict __rwlock,
				const pthread_rwlockattr_t *__restrict __attr)
	__THROW __nonnull ((1));
extern int pthread_rwlock_destroy (pthread_rwlock_t *__rwlock) __THROW __nonnull ((1));
extern int pthread_rwlock_rdlock (pthread_rwlock_t *__rwlock) __THROWNL __nonnull ((1));
extern int pthread_rwlock_tryrdlock (pthread_rwlock_t *__rwlock) __THROWNL __nonnull ((1));
#ifdef __USE_XOPEN2K
extern int pthread_rwlock_timedrdlock (pthread_rwlock_t *__restrict __rwlock,
				       const struct timespec *__restrict __abstime)
	__THROWNL __nonnull ((1, 2));
#endif
#ifdef __USE_GNU
extern int pthread_rwlock_clockrdlock (pthread_rwlock_t *__restrict __rwlock,
				       clockid_t __clockid,
				       const struct timespec *__restrict __abstime)
	__THROWNL __nonnull ((1, 3));
#endif
extern int pthread_rwlock_wrlock (pthread_rwlock_t *__rwlock) __THROWNL __nonnull ((1));
extern int pthread_rwlock_trywrlock (pthread_rwlock_t *__rwlock) __THROWNL __nonnull ((1));
#ifdef __USE_XOPEN2K
extern int pthread_rwlock_timedwrlock (pthread_rwlock_t *__restrict __rwlock,
				       const struct timespec *__restrict __abstime)
	__THROWNL __nonnull ((1, 2));
#endif
#ifdef __USE_GNU
extern int pthread_rwlock_clockwrlock (pthread_rwlock_t *__restrict __rwlock,
				       clockid_t __clockid,
				       const struct timespec *__restrict __abstime)
	__THROWNL __nonnull ((1, 3));
#endif
extern int pthread_rwlock_unlock (pthread_rwlock_t *__rwlock) __THROWNL __nonnull ((1));

extern int pthread_rwlockattr_init (pthread_rwlockattr_t *__attr) __THROW __nonnull ((1));
extern int pthread_rwlockattr_destroy (pthread_rwlockattr_t *__attr) __THROW __nonnull ((1));
extern int pthread_rwlockattr_getpshared (const pthread_rwlockattr_t *__restrict __attr,
					  int *__restrict __pshared)
	__THROW __nonnull ((1, 2));
extern int pthread_rwlockattr_setpshared (pthread_rwlockattr_t *__attr, int __pshared)
	__THROW __nonnull ((1));
extern int pthread_rwlockattr_getkind_np (const pthread_rwlockattr_t *__restrict __attr,
					  int *__restrict __pref)
	__THROW __nonnull ((1, 2));
extern int pthread_rwlockattr_setkind_np (pthread_rwlockattr_t *__attr, int __pref)
	__THROW __nonnull ((1));
#endif

/* ---- condition variables ---------------------------------------------------------------- */

extern int pthread_cond_init (pthread_cond_t *__restrict __cond,
			      const pthread_condattr_t *__restrict __cond_attr)
	__THROW __nonnull ((1));
extern int pthread_cond_destroy (pthread_cond_t *__cond) __THROW __nonnull ((1));
extern int pthread_cond_signal (pthread_cond_t *__cond) __THROWNL __nonnull ((1));
extern int pthread_cond_broadcast (pthread_cond_t *__cond) __THROWNL __nonnull ((1));
extern int pthread_cond_wait (pthread_cond_t *__restrict __cond,
			      pthread_mutex_t *__restrict __mutex)
	__nonnull ((1, 2));
extern int pthread_cond_timedwait (pthread_cond_t *__restrict __cond,
				   pthread_mutex_t *__restrict __mutex,
				   const struct timespec *__restrict __abstime)
	__nonnull ((1, 2, 3));
#ifdef __USE_GNU
extern int pthread_cond_clockwait (pthread_cond_t *__restrict __cond,
				   pthread_mutex_t *__restrict __mutex,
				   __clockid_t __clock_id,
				   const struct timespec *__restrict __abstime)
	__nonnull ((1, 2, 4));
#endif

extern int pthread_condattr_init (pthread_condattr_t *__attr) __THROW __nonnull ((1));
extern int pthread_condattr_destroy (pthread_condattr_t *__attr) __THROW __nonnull ((1));
extern int pthread_condattr_getpshared (const pthread_condattr_t *__restrict __attr,
					int *__restrict __pshared)
	__THROW __nonnull ((1, 2));
extern int pthread_condattr_setpshared (pthread_condattr_t *__attr, int __pshared)
	__THROW __nonnull ((1));
#ifdef __USE_XOPEN2K
extern int pthread_condattr_getclock (const pthread_condattr_t *__restrict __attr,
				      __clockid_t *__restrict __clock_id)
	__THROW __nonnull ((1, 2));
extern int pthread_condattr_setclock (pthread_condattr_t *__attr, __clockid_t __clock_id)
	__THROW __nonnull ((1));
#endif

/* ---- spin locks and barriers ---------------------------------------------------------------- */

#ifdef __USE_XOPEN2K
extern int pthread_spin_init (pthread_spinlock_t *__lock, int __pshared)
	__THROW __nonnull ((1));
extern int pthread_spin_destroy (pthread_spinlock_t *__lock) __THROW __nonnull ((1));
extern int pthread_spin_lock (pthread_spinlock_t *__lock) __THROWNL __nonnull ((1));
extern int pthread_spin_trylock (pthread_spinlock_t *__lock) __THROWNL __nonnull ((1));
extern int pthread_spin_unlock (pthread_spinlock_t *__lock) __THROWNL __nonnull ((1));

extern int pthread_barrier_init (pthread_barrier_t *__restrict __barrier,
				 const pthread_barrierattr_t *__restrict __attr,
				 unsigned int __count)
	__THROW __nonnull ((1));
extern int pthread_barrier_destroy (pthread_barrier_t *__barrier) __THROW __nonnull ((1));
extern int pthread_barrier_wait (pthread_barrier_t *__barrier) __THROWNL __nonnull ((1));

extern int pthread_barrierattr_init (pthread_barrierattr_t *__attr) __THROW __nonnull ((1));
extern int pthread_barrierattr_destroy (pthread_barrierattr_t *__attr) __THROW __nonnull ((1));
extern int pthread_barrierattr_getpshared (const pthread_barrierattr_t *__restrict __attr,
					   int *__restrict __pshared)
	__THROW __nonnull ((1, 2));
extern int pthread_barrierattr_setpshared (pthread_barrierattr_t *__attr, int __pshared)
	__THROW __nonnull ((1));
#endif

/* ---- thread-specific data ----------------------------------------------------------------- */

extern int pthread_key_create (pthread_key_t *__key, void (*__destr_function) (void *))
	__THROW __nonnull ((1));
extern int pthread_key_delete (pthread_key_t __key) __THROW;
extern void *pthread_getspecific (pthread_key_t __key) __THROW;
/* No access attribute: libppl's own forwarding definition passes the
 * pointer on, which GCC would then report as a read of unset memory. */
extern int pthread_setspecific (pthread_key_t __key, const void *__pointer) __THROW;

/* ---- cleanup handlers --------------------------------------------------------------------------
 * pthread_cleanup_push and _pop are macros that open and close a block, so
 * they must appear as a pair in the same scope.  C++ with exceptions uses a
 * destructor and C with -fexceptions a cleanup attribute: both run when the
 * frame is left normally or by the unwinder (cancellation, pthread_exit),
 * in order with the frame's other destructors, and need no library call.
 * Everywhere else the handler is registered with _pthread_cleanup_push/
 * _pthread_cleanup_pop, the C library's own ABI for this, and run by the
 * unwinder once it has left the frame. */

extern void _pthread_cleanup_push (struct _pthread_cleanup_buffer *__buffer,
				   void (*__routine) (void *), void *__arg) __THROW;
/* Not __THROW: with a nonzero __execute it calls the handler. */
extern void _pthread_cleanup_pop (struct _pthread_cleanup_buffer *__buffer,
				  int __execute);
/* The same, also saving the cancel type in __buffer and making it deferred,
 * and restoring it (the C library's GLIBC_2.2.5 ABI). */
extern void _pthread_cleanup_push_defer (struct _pthread_cleanup_buffer *__buffer,
					 void (*__routine) (void *), void *__arg) __THROW;
extern void _pthread_cleanup_pop_restore (struct _pthread_cleanup_buffer *__buffer,
					  int __execute);

/* glibc's cleanup ABI of C without exceptions, for binaries built with the
 * C library's <pthread.h>: a setjmp buffer the unwinder jumps back to, and
 * private words (layout as glibc's, so such binaries run preloaded). */
struct __cancel_jmp_buf_tag {
	__jmp_buf __cancel_jmp_buf;
	int __mask_was_saved;
};

typedef struct {
	struct __cancel_jmp_buf_tag __cancel_jmp_buf[1];
	void *__pad[4];
} __pthread_unwind_buf_t __attribute__ ((__aligned__));

extern void __pthread_register_cancel (__pthread_unwind_buf_t *__buf);
extern void __pthread_unregister_cancel (__pthread_unwind_buf_t *__buf);
extern void __pthread_register_cancel_defer (__pthread_unwind_buf_t *__buf);
extern void __pthread_unregister_cancel_restore (__pthread_unwind_buf_t *__buf);
extern void __pthread_unwind_next (__pthread_unwind_buf_t *__buf)
	__attribute__ ((__noreturn__));

__END_DECLS

#if defined __cplusplus && defined __EXCEPTIONS
class __ppl_cleanup_frame {
	void (*__routine) (void *);
	void *__arg;
	int __do_it;
	int __saved_type;

public:
	__ppl_cleanup_frame (void (*__fct) (void *), void *__a)
		: __routine (__fct), __arg (__a), __do_it (1), __saved_type (0) {}
	~__ppl_cleanup_frame () { if (__do_it) __routine (__arg); }
	void __set_do_it (int __v) { __do_it = __v; }
	void __defer () { pthread_setcanceltype (PTHREAD_CANCEL_DEFERRED, &__saved_type); }
	void __restore () const { pthread_setcanceltype (__saved_type, 0); }
};

#define pthread_cleanup_push(routine, arg) \
	do { \
		__ppl_cleanup_frame __ppl_clframe ((routine), (arg))
#define pthread_cleanup_pop(execute) \
		__ppl_clframe.__set_do_it (execute); \
	} while (0)
#ifdef __USE_GNU
#define pthread_cleanup_push_defer_np(routine, arg) \
	do { \
		__ppl_cleanup_frame __ppl_clframe ((routine), (arg)); \
		__ppl_clframe.__defer ()
#define pthread_cleanup_pop_restore_np(execute) \
		__ppl_clframe.__restore (); \
		__ppl_clframe.__set_do_it (execute); \
	} while (0)
#endif

#elif defined __GNUC__ && defined __EXCEPTIONS
/* C with -fexceptions: a cleanup attribute, which the unwinder runs in
 * its frame, in order with the frame's other cleanups (as glibc does). */
struct __ppl_cleanup_frame {
	void (*__routine) (void *);
	void *__arg;
	int __do_it;
	int __saved_type;
};

static __inline__ void
__ppl_cleanup_run (struct __ppl_cleanup_frame *__f)
{
	if (__f->__do_it)
		__f->__routine (__f->__arg);
}

#define pthread_cleanup_push(routine, arg) \
	do { \
		struct __ppl_cleanup_frame __ppl_clframe \
			__attribute__ ((__cleanup__ (__ppl_cleanup_run))) \
			= { (routine), (arg), 1, 0 };
#define pthread_cleanup_pop(execute) \
		__ppl_clframe.__do_it = (execute); \
	} while (0)
#ifdef __USE_GNU
#define pthread_cleanup_push_defer_np(routine, arg) \
	do { \
		struct __ppl_cleanup_frame __ppl_clframe \
			__attribute__ ((__cleanup__ (__ppl_cleanup_run))) \
			= { (routine), (arg), 1, 0 }; \
		(void) pthread_setcanceltype (PTHREAD_CANCEL_DEFERRED, &__ppl_clframe.__saved_type)
#define pthread_cleanup_pop_restore_np(execute) \
		(void) pthread_setcanceltype (__ppl_clframe.__saved_type, (int *) 0); \
		__ppl_clframe.__do_it = (execute); \
	} while (0)
#endif

#else /* C, or C++ without exceptions */

/* The empty statement before the inner block's end lets a label precede
 * pthread_cleanup_pop, as it may in glibc. */
#define pthread_cleanup_push(routine, arg) \
	do { \
		struct _pthread_cleanup_buffer __ppl_clbuf; \
		_pthread_cleanup_push (&__ppl_clbuf, (routine), (arg)); \
		do {
#define pthread_cleanup_pop(execute) \
			do { } while (0); \
		} while (0); \
		_pthread_cleanup_pop (&__ppl_clbuf, (execute)); \
	} while (0)
#ifdef __USE_GNU
/* The saved type goes in the buffer's __canceltype, which
 * _pthread_cleanup_push leaves alone.  The type is restored after the
 * handler has run, so the handler runs with deferred cancellation. */
#define pthread_cleanup_push_defer_np(routine, arg) \
	do { \
		struct _pthread_cleanup_buffer __ppl_clbuf; \
		_pthread_cleanup_push (&__ppl_clbuf, (routine), (arg)); \
		pthread_setcanceltype (PTHREAD_CANCEL_DEFERRED, &__ppl_clbuf.__canceltype); \
		do {
#define pthread_cleanup_pop_restore_np(execute) \
			do { } while (0); \
		} while (0); \
		_pthread_cleanup_pop (&__ppl_clbuf, (execute)); \
		pthread_setcanceltype (__ppl_clbuf.__canceltype, (int *) 0); \
	} while (0)
#endif

#endif

/* pthread_t is the TCB's address in libppl too, so equality is identity. */
#ifdef __USE_EXTERN_INLINES
__extern_inline int
__NTH (pthread_equal (pthread_t __thread1, pthread_t __thread2))
{
	return __thread1 == __thread2;
}
#endif

#endif
