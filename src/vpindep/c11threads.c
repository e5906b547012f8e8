/* C11 threads (<threads.h>) on top of the ppl_pthread_* functions.
 *
 * Since glibc 2.34 thrd_*, mtx_*, cnd_*, tss_* and call_once live in
 * libc.so and call its internal pthread code directly, so interposing the
 * pthread names is not enough: each C11 name is defined here.  The C11
 * objects are glibc's pthread objects under other names (mtx_t is a
 * pthread_mutex_t, cnd_t a pthread_cond_t, tss_t a pthread_key_t, once_flag
 * a pthread_once_t, thrd_t a pthread_t), and the error codes are mapped as
 * glibc's thrd_priv.h maps them. */
#include <stdint.h>
#include <stdlib.h>
#include <threads.h>

#include "scheduler.h"

_Static_assert(sizeof(mtx_t) == sizeof(pthread_mutex_t), "mtx_t is a pthread_mutex_t");
_Static_assert(sizeof(cnd_t) == sizeof(pthread_cond_t), "cnd_t is a pthread_cond_t");
_Static_assert(sizeof(once_flag) == sizeof(pthread_once_t), "once_flag is a pthread_once_t");
_Static_assert(sizeof(tss_t) == sizeof(pthread_key_t), "tss_t is a pthread_key_t");
_Static_assert(sizeof(thrd_t) == sizeof(pthread_t), "thrd_t is a pthread_t");

static int map_err(int err)
{
	switch (err) {
	case 0:
		return thrd_success;
	case ENOMEM:
		return thrd_nomem;
	case ETIMEDOUT:
		return thrd_timedout;
	case EBUSY:
		return thrd_busy;
	default:
		return thrd_error;
	}
}

/* ---- threads ------------------------------------------------------------- */

/* A C11 thread returns int: start it through a trampoline rather than
 * calling an int function through a void * function pointer. */
struct c11_start {
	thrd_start_t fn;
	void *arg;
};

static void *c11_entry(void *p)
{
	struct c11_start st = *(struct c11_start *)p;
	free(p);
	return (void *)(intptr_t)st.fn(st.arg);
}

int ppl_thrd_create(thrd_t *thr, thrd_start_t fn, void *arg)
{
	struct c11_start *st = malloc(sizeof *st);
	if (st == NULL)
		return thrd_nomem;
	st->fn = fn;
	st->arg = arg;
	pthread_t t;
	int err = ppl_pthread_create(&t, NULL, c11_entry, st);
	if (err) {
		free(st);
		/* glibc maps EAGAIN (no resources) to thrd_error, ENOMEM to nomem. */
		return map_err(err);
	}
	*thr = (thrd_t)t;
	return thrd_success;
}

int ppl_thrd_equal(thrd_t a, thrd_t b)
{
	return ppl_pthread_equal((pthread_t)a, (pthread_t)b);
}

thrd_t ppl_thrd_current(void)
{
	return (thrd_t)ppl_pthread_self();
}

int ppl_thrd_sleep(const struct timespec *req, struct timespec *rem)
{
	/* C11: -1 if interrupted by a signal, another negative value on error
	 * (EINVAL, EFAULT: ppl_clock_nanosleep checks req). */
	int err = ppl_clock_nanosleep(CLOCK_REALTIME, 0, req, rem);
	if (err == 0)
		return 0;
	return err == EINTR ? -1 : -2;
}

void ppl_thrd_exit(int res)
{
	ppl_pthread_exit((void *)(intptr_t)res);
}

int ppl_thrd_detach(thrd_t thr)
{
	return map_err(ppl_pthread_detach((pthread_t)thr));
}

int ppl_thrd_join(thrd_t thr, int *res)
{
	void *r;
	int err = ppl_pthread_join((pthread_t)thr, &r);
	if (err == 0 && res)
		*res = (int)(intptr_t)r;
	return map_err(err);
}

void ppl_thrd_yield(void)
{
	sched_yield_user();
}

/* ---- mutexes ------------------------------------------------------------- */

int ppl_mtx_init(mtx_t *m, int type)
{
	pthread_mutexattr_t a;
	ppl_pthread_mutexattr_init(&a);
	/* mtx_timed adds nothing: every pthread mutex can be timed. */
	int kind = PTHREAD_MUTEX_NORMAL;
	if (type == (mtx_plain | mtx_recursive) || type == (mtx_timed | mtx_recursive))
		kind = PTHREAD_MUTEX_RECURSIVE;
	ppl_pthread_mutexattr_settype(&a, kind);
	int err = ppl_pthread_mutex_init((pthread_mutex_t *)m, &a);
	ppl_pthread_mutexattr_destroy(&a);
	return map_err(err);
}

int ppl_mtx_lock(mtx_t *m)
{
	return map_err(ppl_pthread_mutex_lock((pthread_mutex_t *)m));
}

int ppl_mtx_timedlock(mtx_t *restrict m, const struct timespec *restrict ts)
{
	return map_err(ppl_pthread_mutex_timedlock((pthread_mutex_t *)m, ts));
}

int ppl_mtx_trylock(mtx_t *m)
{
	return map_err(ppl_pthread_mutex_trylock((pthread_mutex_t *)m));
}

int ppl_mtx_unlock(mtx_t *m)
{
	return map_err(ppl_pthread_mutex_unlock((pthread_mutex_t *)m));
}

void ppl_mtx_destroy(mtx_t *m)
{
	(void)ppl_pthread_mutex_destroy((pthread_mutex_t *)m);
}

/* ---- condition variables ------------------------------------------------- */

int ppl_cnd_init(cnd_t *c)
{
	return map_err(ppl_pthread_cond_init((pthread_cond_t *)c, NULL));
}

int ppl_cnd_signal(cnd_t *c)
{
	return map_err(ppl_pthread_cond_signal((pthread_cond_t *)c));
}

int ppl_cnd_broadcast(cnd_t *c)
{
	return map_err(ppl_pthread_cond_broadcast((pthread_cond_t *)c));
}

int ppl_cnd_wait(cnd_t *c, mtx_t *m)
{
	return map_err(ppl_pthread_cond_wait((pthread_cond_t *)c, (pthread_mutex_t *)m));
}

int ppl_cnd_timedwait(cnd_t *restrict c, mtx_t *restrict m, const struct timespec *restrict ts)
{
	return map_err(ppl_pthread_cond_timedwait((pthread_cond_t *)c, (pthread_mutex_t *)m, ts));
}

void ppl_cnd_destroy(cnd_t *c)
{
	(void)ppl_pthread_cond_destroy((pthread_cond_t *)c);
}

/* ---- thread-specific storage and once ------------------------------------ */

int ppl_tss_create(tss_t *k, tss_dtor_t dtor)
{
	return map_err(ppl_pthread_key_create((pthread_key_t *)k, dtor));
}

void *ppl_tss_get(tss_t k)
{
	return ppl_pthread_getspecific((pthread_key_t)k);
}

int ppl_tss_set(tss_t k, void *v)
{
	return map_err(ppl_pthread_setspecific((pthread_key_t)k, v));
}

void ppl_tss_delete(tss_t k)
{
	(void)ppl_pthread_key_delete((pthread_key_t)k);
}

void ppl_call_once(once_flag *flag, void (*fn)(void))
{
	(void)ppl_pthread_once((pthread_once_t *)flag, fn);
}
