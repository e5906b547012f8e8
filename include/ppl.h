/* libppl's own extensions.  Plain POSIX programs never need them; they let a
 * program that knows it runs on libppl ask about the runtime. */
#ifndef PPL_H
#define PPL_H

#include <pthread.h>
#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Virtual processors running unbound user threads (0 before the first
 * pthread_create, when no VP has started yet). */
int ppl_vp_count(void);
/* Id of the VP the calling thread runs on, or -1 on a kernel thread that
 * libppl did not create (and before start-up). */
int ppl_current_vp(void);
/* Print the scheduler counters (as PPL_STATS=1 does at exit) to stderr. */
void ppl_stats_print(void);
/* A number that names th for its life (1, 2, ...: its sequence number), 0
 * once th has been released (joined, or ended detached): a later thread
 * that gets th's pthread_t has another.  th must be a pthread_t libppl gave
 * out (stale ones included). */
unsigned long ppl_thread_serial(pthread_t th);

/* ---- moving threads between VPs (docs/ppl-api.md) ---------------------------
 * vp is a VP id, 0 <= vp < ppl_vp_count().  Errors: EINVAL (no such VP, or
 * the runtime has not started), ESRCH (th has ended or is exiting), EPERM
 * (th cannot leave its kernel thread: a bound PTHREAD_SCOPE_SYSTEM thread,
 * a kernel thread libppl did not create, the main thread when TLS is shared
 * per VP).  A ready thread moves at once, a parked one when it is woken,
 * one running on another VP at its next switch; the caller itself returns
 * on vp (ppl_current_vp() == vp). */
/* Move th to vp: it runs there next, then may be stolen as any thread (a
 * pinned thread stays pinned, to vp). */
int ppl_migrate(pthread_t th, int vp);
/* Keep th on vp until ppl_unpin; over the VP its CPU affinity chose. */
int ppl_pin(pthread_t th, int vp);
/* Undo ppl_pin: th goes where its affinity says, or anywhere. */
int ppl_unpin(pthread_t th);
/* The VP th is pinned to (for a set: the VP of the set it is kept on now),
 * -1 if none, -ESRCH if th has ended. */
int ppl_pinned(pthread_t th);

/* A set of VP ids, as cpu_set_t is of CPUs (0 <= id < PPL_VPSET_SIZE). */
#define PPL_VPSET_SIZE 1024
typedef struct {
	unsigned long bits[PPL_VPSET_SIZE / (8 * sizeof(unsigned long))];
} ppl_vpset_t;
#define PPL_VPSET_WORD_(vp) ((unsigned)(vp) / (8 * sizeof(unsigned long)))
#define PPL_VPSET_BIT_(vp) (1UL << ((unsigned)(vp) % (8 * sizeof(unsigned long))))
static inline void ppl_vpset_zero(ppl_vpset_t *s)
{
	for (unsigned i = 0; i < sizeof s->bits / sizeof *s->bits; i++)
		s->bits[i] = 0;
}
static inline void ppl_vpset_add(ppl_vpset_t *s, int vp)
{
	if ((unsigned)vp < PPL_VPSET_SIZE)
		s->bits[PPL_VPSET_WORD_(vp)] |= PPL_VPSET_BIT_(vp);
}
static inline void ppl_vpset_del(ppl_vpset_t *s, int vp)
{
	if ((unsigned)vp < PPL_VPSET_SIZE)
		s->bits[PPL_VPSET_WORD_(vp)] &= ~PPL_VPSET_BIT_(vp);
}
static inline int ppl_vpset_has(const ppl_vpset_t *s, int vp)
{
	return (unsigned)vp < PPL_VPSET_SIZE && (s->bits[PPL_VPSET_WORD_(vp)] & PPL_VPSET_BIT_(vp)) != 0;
}
static inline int ppl_vpset_count(const ppl_vpset_t *s)
{
	int n = 0;
	for (unsigned i = 0; i < sizeof s->bits / sizeof *s->bits; i++)
		n += __builtin_popcountl(s->bits[i]);
	return n;
}
/* Keep th on the VPs of set (those that exist and take threads: EINVAL if
 * none does) until ppl_unpin: it runs on one of them, idle VPs of the set
 * may take it, the others leave it alone.  A set of one VP is ppl_pin.
 * ppl_migrate of th to a VP of its set moves it and keeps the set; to a
 * VP outside it pins th to that VP alone.  Errors as ppl_pin, and ENOMEM
 * (the first set of a thread is allocated). */
int ppl_pin_set(pthread_t th, const ppl_vpset_t *set);
/* th's pin as a set (empty: not pinned); 0 or ESRCH. */
int ppl_pinned_set(pthread_t th, ppl_vpset_t *set);

/* ---- pluggable schedulers (docs/ppl-api.md) ----------------------------------
 * A scheduler holds the ready threads of priority 0 (SCHED_OTHER and co.)
 * but bound ones; libppl's run queue keeps the others and runs them first.
 * steal must not return a thread that may not run on the thief (pinned,
 * kept by its affinity): check ppl_sched_allowed(t, thief).  Each up-call
 * runs with the run-queue lock of VP `vp` (or `victim`) held: it must not
 * block or call libppl, except ppl_pinned, ppl_sched_allowed,
 * ppl_sched_links and ppl_sched_getkey.  Built-ins "prio" and "timestamp"
 * keep one order for their whole group: a VP runs the group's best thread
 * that may run on it, wherever it was made ready. */
struct ppl_sched_ops {
	const char *name;
	/* t became ready on VP vp. */
	void (*put)(int vp, pthread_t t);
	/* The next thread put on vp, taken out, for vp to run; 0: none. */
	pthread_t (*next)(int vp);
	/* Optional: a thread put on victim, taken out, for the idle VP thief. */
	pthread_t (*steal)(int thief, int victim);
	/* Optional: take t (put on vp) out; nonzero if done (priority, key and
	 * placement changes requeue a thread through it). */
	int (*remove)(int vp, pthread_t t);
	/* Optional: t parked / exited (no lock held). */
	void (*blocked)(pthread_t t);
	void (*exited)(pthread_t t);
};
/* Install a scheduler before the first pthread_create: 0, EINVAL (no put
 * or next), EBUSY (threads exist already, or one is installed). */
int ppl_sched_install(const struct ppl_sched_ops *ops);
/* A built-in by name, as PPL_SCHED=name does: "fifo" (the default: per-VP
 * FIFO, idle VPs steal), "lifo" (newest first per VP, thieves take the
 * oldest), "prio" (highest key first), "timestamp" (lowest key first) --
 * these two across the VPs of their group.  EINVAL: unknown; EBUSY as
 * ppl_sched_install. */
int ppl_sched_use(const char *name);
/* The same for the VPs of vps only (a group: VP ids, those VPs need not
 * have started), before the first pthread_create; the default group
 * (ppl_sched_use, ppl_sched_install, PPL_SCHED) has the VPs no such call
 * named.  name "fifo" gives the group the FIFO run queues.  A thread runs
 * under the scheduler of the VP it is queued on (made ready on: the
 * waker's, or its home: ppl_migrate, ppl_pin, ppl_pin_set), keeping its
 * key; idle VPs steal only within their group.  EINVAL: unknown name, no
 * put/next, vps NULL or empty; EBUSY: threads exist, or a VP of vps has a
 * scheduler; EAGAIN: 8 schedulers are installed. */
int ppl_sched_use_vps(const char *name, const ppl_vpset_t *vps);
int ppl_sched_install_vps(const struct ppl_sched_ops *ops, const ppl_vpset_t *vps);
/* The scheduler's name ("fifo" when none is installed): the default
 * group's, and VP vp's (NULL: no such VP id). */
const char *ppl_sched_name(void);
const char *ppl_sched_name_vp(int vp);
/* Nonzero if th may run on VP vp (its pin, pin set, affinity or migration
 * allow it): what a steal up-call must check before it takes th for vp. */
int ppl_sched_allowed(pthread_t th, int vp);
/* th's key (a priority, a time stamp; 0 at first, then the creator's):
 * set, a ready th is queued again in its place; ESRCH if th has ended. */
int ppl_sched_setkey(pthread_t th, long long key);
int ppl_sched_getkey(pthread_t th, long long *key);
/* Two link words in th's TCB that a scheduler may use while it holds th. */
pthread_t *ppl_sched_links(pthread_t th);

/* BEGIN libppl-ffi: these are in libppl-ffi.so, not libppl.so */
/* ---- typed-argument threads (libppl-ffi: link with -lppl-ffi) ----------------
 * ppl_spawn starts a thread running fn with the arguments that follow sig,
 * and keeps fn's return value for ppl_join_typed.  sig lists the argument
 * types, then optionally '>' and the return type (none, or "v": void):
 *   c C  signed/unsigned char     s S  short        i I  int
 *   l L  long                     q Q  int64_t      z    size_t
 *   p    pointer                  f    float        d    double
 *   D    long double              {...} a struct of the types inside
 * A struct argument is passed as a pointer to it (its value is copied);
 * the others as the C expressions of their types.  Example:
 *   ppl_spawn(&t, NULL, hypot3, "ddi>d", 1.5, 2.5, 3);
 *   double r; ppl_join_typed(t, &r);
 * EINVAL: sig does not parse (or th, fn, sig NULL); else pthread_create's
 * errors.  A detached thread (attr) discards its return value. */
int ppl_spawn(pthread_t *th, const pthread_attr_t *attr, void *fn, const char *sig, ...);
int ppl_vspawn(pthread_t *th, const pthread_attr_t *attr, void *fn, const char *sig,
	       va_list ap);
/* Joins th, a joinable thread of ppl_spawn, storing fn's return value
 * (exactly its type's size) at *ret unless ret is NULL.  EINVAL: th was
 * not made by ppl_spawn (or is joined already); ECANCELED: fn did not
 * return (cancelled, pthread_exit), *ret untouched; else pthread_join's
 * errors (then th is still joinable here). */
int ppl_join_typed(pthread_t th, void *ret);
#ifdef LIBFFI_H
/* The same for a call interface the caller prepared (ffi_prep_cif), which
 * must stay valid until the thread is joined; args[i] points to the i-th
 * argument's value, copied before the call returns. */
int ppl_spawn_cif(pthread_t *th, const pthread_attr_t *attr, ffi_cif *cif, void *fn,
		  void **args);
#endif
/* END libppl-ffi */

#ifdef __cplusplus
}
#endif

#endif
