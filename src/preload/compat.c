/* The older symbol versions whose interface differs from the current one
 * (symver.def has those that differ only in the library that defined them).
 * Binaries linked before the change reference these; the C library's own
 * copies would work on libppl's objects with glibc's internals.  Each does
 * what glibc's compatibility function does, on libppl's implementation:
 *
 * - pthread_cond_*@GLIBC_2.2.5: the condition variable before glibc 2.3.2,
 *   whose object is one word, a pointer to the real condition variable,
 *   allocated on first use (process-shared ones are not supported).
 * - timer_*@GLIBC_2.2.5: a timer id is an int, an index into a table of
 *   the real timer_t values (256 of them).
 * - *affinity*@GLIBC_2.3.3: the CPU set has no size argument; it is 128
 *   bytes (1024 CPUs).
 * - pthread_yield, _pthread_cleanup_push_defer, _pthread_cleanup_pop_restore
 *   @GLIBC_2.2.5: the same interface, but the C library has only this old
 *   version, and libppl's default is its own PPL_1.0 (<pthread.h> declares
 *   them); an alias of the export would take the export's name with it. */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "../vpindep/vpindep.h"

#define PPL_OLD __attribute__((visibility("default")))
#define PPL_OLD_VERSION(fn, name, v) __asm__(".symver " #fn ", " #name "@" v);

/* ---- condition variables before GLIBC_2.3.2 ----------------------------------------------- */

typedef struct {
	pthread_cond_t *cond;
} old_cond_t;

/* The real condition variable, made on first use; NULL if out of memory. */
static pthread_cond_t *real_cond(old_cond_t *c)
{
	pthread_cond_t *r = __atomic_load_n(&c->cond, __ATOMIC_ACQUIRE);
	if (r != NULL)
		return r;
	pthread_cond_t *n = calloc(1, sizeof *n);   /* all zero: PTHREAD_COND_INITIALIZER */
	if (n == NULL)
		return NULL;
	if (!__atomic_compare_exchange_n(&c->cond, &r, n, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		free(n);   /* another thread made it first: r is that one */
		return r;
	}
	return n;
}

PPL_OLD int old_cond_init(old_cond_t *c, const pthread_condattr_t *a);
int old_cond_init(old_cond_t *c, const pthread_condattr_t *a)
{
	c->cond = NULL;
	int shared = PTHREAD_PROCESS_PRIVATE;
	if (a != NULL && ppl_pthread_condattr_getpshared(a, &shared) == 0 &&
	    shared == PTHREAD_PROCESS_SHARED)
		return ENOTSUP;
	return 0;
}

PPL_OLD int old_cond_destroy(old_cond_t *c);
int old_cond_destroy(old_cond_t *c)
{
	free(c->cond);
	return 0;
}

PPL_OLD int old_cond_wait(old_cond_t *c, pthread_mutex_t *m);
int old_cond_wait(old_cond_t *c, pthread_mutex_t *m)
{
	pthread_cond_t *r = real_cond(c);
	return r == NULL ? ENOMEM : ppl_pthread_cond_wait(r, m);
}

PPL_OLD int old_cond_timedwait(old_cond_t *c, pthread_mutex_t *m, const struct timespec *t);
int old_cond_timedwait(old_cond_t *c, pthread_mutex_t *m, const struct timespec *t)
{
	pthread_cond_t *r = real_cond(c);
	return r == NULL ? ENOMEM : ppl_pthread_cond_timedwait(r, m, t);
}

PPL_OLD int old_cond_signal(old_cond_t *c);
int old_cond_signal(old_cond_t *c)
{
	pthread_cond_t *r = real_cond(c);
	return r == NULL ? ENOMEM : ppl_pthread_cond_signal(r);
}

PPL_OLD int old_cond_broadcast(old_cond_t *c);
int old_cond_broadcast(old_cond_t *c)
{
	pthread_cond_t *r = real_cond(c);
	return r == NULL ? ENOMEM : ppl_pthread_cond_broadcast(r);
}

PPL_OLD_VERSION(old_cond_init, pthread_cond_init, "GLIBC_2.2.5")
PPL_OLD_VERSION(old_cond_destroy, pthread_cond_destroy, "GLIBC_2.2.5")
PPL_OLD_VERSION(old_cond_wait, pthread_cond_wait, "GLIBC_2.2.5")
PPL_OLD_VERSION(old_cond_timedwait, pthread_cond_timedwait, "GLIBC_2.2.5")
PPL_OLD_VERSION(old_cond_signal, pthread_cond_signal, "GLIBC_2.2.5")
PPL_OLD_VERSION(old_cond_broadcast, pthread_cond_broadcast, "GLIBC_2.2.5")

/* ---- timers before GLIBC_2.3.3 ------------------------------------------------------------ */

#define OLD_TIMER_MAX 256
/* A used flag of its own: the kernel's first timer id is 0, a null timer_t. */
static struct {
	_Atomic bool used;
	timer_t id;
} old_timers[OLD_TIMER_MAX];

/* The real id of old id i, or NULL (errno EINVAL) if i names none. */
static timer_t *old_timer(int i)
{
	if (i < 0 || i >= OLD_TIMER_MAX || !atomic_load_explicit(&old_timers[i].used, memory_order_acquire)) {
		errno = EINVAL;
		return NULL;
	}
	return &old_timers[i].id;
}

PPL_OLD int old_timer_create(clockid_t clk, struct sigevent *ev, int *id);
int old_timer_create(clockid_t clk, struct sigevent *ev, int *id)
{
	timer_t t;
	if (ppl_timer_create(clk, ev, &t) != 0)
		return -1;
	for (int i = 0; i < OLD_TIMER_MAX; i++) {
		bool used = false;
		if (atomic_compare_exchange_strong(&old_timers[i].used, &used, true)) {
			old_timers[i].id = t;   /* its id is known to the caller only */
			*id = i;
			return 0;
		}
	}
	ppl_timer_delete(t);
	errno = EINVAL;   /* glibc's answer when the table is full */
	return -1;
}

PPL_OLD int old_timer_delete(int id);
int old_timer_delete(int id)
{
	timer_t *t = old_timer(id);
	if (t == NULL || ppl_timer_delete(*t) != 0)
		return -1;
	atomic_store_explicit(&old_timers[id].used, false, memory_order_release);
	return 0;
}

PPL_OLD int old_timer_settime(int id, int flags, const struct itimerspec *v, struct itimerspec *old);
int old_timer_settime(int id, int flags, const struct itimerspec *v, struct itimerspec *old)
{
	timer_t *t = old_timer(id);
	return t == NULL ? -1 : ppl_timer_settime(*t, flags, v, old);
}

PPL_OLD int old_timer_gettime(int id, struct itimerspec *v);
int old_timer_gettime(int id, struct itimerspec *v)
{
	timer_t *t = old_timer(id);
	return t == NULL ? -1 : ppl_timer_gettime(*t, v);
}

PPL_OLD int old_timer_getoverrun(int id);
int old_timer_getoverrun(int id)
{
	timer_t *t = old_timer(id);
	return t == NULL ? -1 : ppl_timer_getoverrun(*t);
}

PPL_OLD_VERSION(old_timer_create, timer_create, "GLIBC_2.2.5")
PPL_OLD_VERSION(old_timer_delete, timer_delete, "GLIBC_2.2.5")
PPL_OLD_VERSION(old_timer_settime, timer_settime, "GLIBC_2.2.5")
PPL_OLD_VERSION(old_timer_gettime, timer_gettime, "GLIBC_2.2.5")
PPL_OLD_VERSION(old_timer_getoverrun, timer_getoverrun, "GLIBC_2.2.5")

/* ---- posix_spawn before GLIBC_2.15 (an exec failure is the child's exit 127) ----------------- */

/* fork.c (fork.h): the C library's function of that version, on VP 0. */
int spawn_initial(void *_Atomic *next, const char *name, const char *version, pid_t *restrict pid,
		  const char *restrict path, const posix_spawn_file_actions_t *fa,
		  const posix_spawnattr_t *restrict a, char *const argv[], char *const envp[]);

PPL_OLD int old_posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			    const posix_spawnattr_t *a, char *const argv[], char *const envp[]);
int old_posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		    const posix_spawnattr_t *a, char *const argv[], char *const envp[])
{
	static void *_Atomic next;
	return spawn_initial(&next, "posix_spawn", "GLIBC_2.2.5", pid, path, fa, a, argv, envp);
}

PPL_OLD int old_posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			     const posix_spawnattr_t *a, char *const argv[], char *const envp[]);
int old_posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
		     const posix_spawnattr_t *a, char *const argv[], char *const envp[])
{
	static void *_Atomic next;
	return spawn_initial(&next, "posix_spawnp", "GLIBC_2.2.5", pid, file, fa, a, argv, envp);
}

PPL_OLD_VERSION(old_posix_spawn, posix_spawn, "GLIBC_2.2.5")
PPL_OLD_VERSION(old_posix_spawnp, posix_spawnp, "GLIBC_2.2.5")

/* ---- CPU affinity before GLIBC_2.3.4 ------------------------------------------------------ */

#define OLD_CPUSET 128

PPL_OLD int old_sched_setaffinity(pid_t pid, const cpu_set_t *s);
int old_sched_setaffinity(pid_t pid, const cpu_set_t *s)
{
	return ppl_sched_setaffinity(pid, OLD_CPUSET, s);
}

PPL_OLD int old_sched_getaffinity(pid_t pid, cpu_set_t *s);
int old_sched_getaffinity(pid_t pid, cpu_set_t *s)
{
	return ppl_sched_getaffinity(pid, OLD_CPUSET, s);
}

PPL_OLD int old_pthread_setaffinity_np(pthread_t t, const cpu_set_t *s);
int old_pthread_setaffinity_np(pthread_t t, const cpu_set_t *s)
{
	return ppl_pthread_setaffinity_np(t, OLD_CPUSET, s);
}

PPL_OLD int old_pthread_getaffinity_np(pthread_t t, cpu_set_t *s);
int old_pthread_getaffinity_np(pthread_t t, cpu_set_t *s)
{
	return ppl_pthread_getaffinity_np(t, OLD_CPUSET, s);
}

PPL_OLD int old_pthread_attr_setaffinity_np(pthread_attr_t *a, const cpu_set_t *s);
int old_pthread_attr_setaffinity_np(pthread_attr_t *a, const cpu_set_t *s)
{
	return ppl_pthread_attr_setaffinity_np(a, OLD_CPUSET, s);
}

PPL_OLD int old_pthread_attr_getaffinity_np(const pthread_attr_t *a, cpu_set_t *s);
int old_pthread_attr_getaffinity_np(const pthread_attr_t *a, cpu_set_t *s)
{
	return ppl_pthread_attr_getaffinity_np(a, OLD_CPUSET, s);
}

PPL_OLD_VERSION(old_sched_setaffinity, sched_setaffinity, "GLIBC_2.3.3")
PPL_OLD_VERSION(old_sched_getaffinity, sched_getaffinity, "GLIBC_2.3.3")
PPL_OLD_VERSION(old_pthread_setaffinity_np, pthread_setaffinity_np, "GLIBC_2.3.3")
PPL_OLD_VERSION(old_pthread_getaffinity_np, pthread_getaffinity_np, "GLIBC_2.3.3")
PPL_OLD_VERSION(old_pthread_attr_setaffinity_np, pthread_attr_setaffinity_np, "GLIBC_2.3.3")
PPL_OLD_VERSION(old_pthread_attr_getaffinity_np, pthread_attr_getaffinity_np, "GLIBC_2.3.3")

/* ---- names the C library keeps only in GLIBC_2.2.5 ---------------------------------------- */

PPL_OLD int old_pthread_yield(void);
int old_pthread_yield(void)
{
	return ppl_pthread_yield();
}

PPL_OLD void old_cleanup_push_defer(struct _pthread_cleanup_buffer *b, void (*f)(void *), void *arg);
void old_cleanup_push_defer(struct _pthread_cleanup_buffer *b, void (*f)(void *), void *arg)
{
	ppl__pthread_cleanup_push_defer(b, f, arg);
}

PPL_OLD void old_cleanup_pop_restore(struct _pthread_cleanup_buffer *b, int ex);
void old_cleanup_pop_restore(struct _pthread_cleanup_buffer *b, int ex)
{
	ppl__pthread_cleanup_pop_restore(b, ex);
}

PPL_OLD_VERSION(old_pthread_yield, pthread_yield, "GLIBC_2.2.5")
PPL_OLD_VERSION(old_cleanup_push_defer, _pthread_cleanup_push_defer, "GLIBC_2.2.5")
PPL_OLD_VERSION(old_cleanup_pop_restore, _pthread_cleanup_pop_restore, "GLIBC_2.2.5")
