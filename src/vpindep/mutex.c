/* pthread_mutex_* and pthread_mutexattr_*.
 *
 * The state word is a "futex mutex" (0 free, 1 locked, 2 locked and maybe
 * waiters); the slow path adds a spin lock and a wait queue of ULTs.
 *
 * Invariants
 *  - Uncontended lock is one CAS 0->1, uncontended unlock one CAS 1->0: no
 *    spin lock, no call into the scheduler.  That path is mutex_fast.h's,
 *    inline in the exports; ppl_mutex_{lock,trylock,unlock}_slow do the rest.
 *  - A thread parks only after setting state to 2 with an exchange made
 *    under m->lock, and only if that exchange did not return 0 (in which case
 *    it owns the mutex).  An unlocker that finds 2 takes m->lock, sets 0,
 *    pops one waiter and drops the lock before sched_wake: so a waiter is
 *    either seen by that unlocker or sees the 0 itself (no lost wake-up).
 *  - The woken thread is not handed the mutex: it competes again, setting 2
 *    (there may be more waiters), and parks again at the tail if it loses.
 *  - An unlocker touches the mutex only while it holds m->lock once the
 *    state is 0; pthread_mutex_destroy takes and drops m->lock, so a mutex
 *    may be freed as soon as destroy returns.
 *  - `owner` and `count` are written only by the owner.  owner holds a
 *    token of the thread (never compared by pointer with a thread that may
 *    have been recycled); others compare it only with their own token.
 *  - Process-shared mutexes never use the wait queue: they wait on the state
 *    word with a shared kernel futex (parklot.c).
 *  - `kind` is glibc's __kind at offset 16, with glibc's meaning, so
 *    PTHREAD_*_MUTEX_INITIALIZER_NP objects of unmodified binaries work.
 *  - Robust kinds are mutex_robust.c's (glibc's layout and lock word);
 *    here they are only dispatched, initialised and destroyed. */
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "config.h"
#include "mutex.h"
#include "mutex_prio.h"
#include "mutex_robust.h"
#include "parklot.h"
#include "preempt.h"
#include "runtime.h"
#include "schedhooks.h"
#include "scheduler.h"
#include "ult.h"
#include "vproc.h"
#include "waitq.h"

/* __kind bits, as glibc's pthreadP.h defines them */
#define MK_TYPE      3u            /* PTHREAD_MUTEX_{TIMED,RECURSIVE,ERRORCHECK,ADAPTIVE}_NP */
#define MK_ROBUST    16u
#define MK_PI        32u
#define MK_PP        64u
#define MK_PSHARED   128u
#define MK_ELISION   (256u | 512u) /* lock-elision hints: ignored */
#define MK_CEIL_SHIFT 19           /* priority ceiling of a PP mutex (glibc keeps it in __lock) */
#define MK_CEIL_MASK 0xfff80000u
#define MK_VALID     (MK_TYPE | MK_ROBUST | MK_PI | MK_PP | MK_PSHARED | MK_ELISION | MK_CEIL_MASK)
#define MK_DESTROYED (-1)

/* pthread_mutexattr_t: glibc's `mutexkind` word */
#define MA_PROTO_SHIFT 28
#define MA_PROTO_MASK  0x30000000u
#define MA_CEIL_SHIFT  12
#define MA_CEIL_MASK   0x00fff000u
#define MA_ROBUST      0x40000000u
#define MA_PSHARED     0x80000000u
#define MA_FLAGS       (MA_ROBUST | MA_PSHARED | MA_PROTO_MASK | MA_CEIL_MASK)

/* Polls of a held mutex before parking, with another VP (the owner may
 * run there).  A plain lock parks at once, as NPTL's futex lock does: a
 * spinner that wins when the owner lets go for a moment makes the two VPs
 * take turns with the mutex, a cache-line transfer per lock (bench_mutex
 * 16 ran at the speed of NPTL's 2 threads), where a parked waiter leaves
 * the owner's VP to run on alone.  A cond waiter's relock spins: it was
 * woken by a thread that is about to unlock.  ADAPTIVE asks for spinning. */
#define SPINS_RELOCK   100
#define ADAPTIVE_SPINS 1000

struct mutex {
	_Atomic uint32_t state;    /* 0 free, 1 locked, 2 locked and maybe waiters */
	uint32_t count;            /* recursive: depth; written by the owner only */
	_Atomic uint32_t owner;    /* owner's token, 0 if none; owner-tracking kinds only */
	_Atomic uint32_t nusers;   /* threads inside pthread_cond_*wait with it (glibc
				    * counts them in __nusers, and destroy says EBUSY) */
	_Atomic int kind;          /* glibc __kind (offset 16); set at init */
	spin_t lock;               /* protects q */
	union {
		struct waitq q;    /* parked waiters, private mutexes only */
		_Atomic int owner_pid; /* process-shared: the owner's process */
	};
};

_Static_assert(sizeof(struct mutex) == sizeof(pthread_mutex_t), "mutex overlay size");
_Static_assert(_Alignof(struct mutex) <= _Alignof(pthread_mutex_t), "mutex overlay alignment");
_Static_assert(offsetof(struct mutex, kind) == 16, "__kind must stay at glibc's offset");
/* Not required, but kept: debuggers and tests read the depth as __count. */
_Static_assert(offsetof(struct mutex, count) == 4, "recursion depth at glibc's __count");
_Static_assert(offsetof(struct mutex, nusers) == 12, "__nusers at glibc's offset");

struct mutexattr {
	uint32_t mutexkind;        /* type | MA_* flags, glibc's encoding */
};

_Static_assert(sizeof(struct mutexattr) == sizeof(pthread_mutexattr_t), "mutexattr size");
_Static_assert(_Alignof(struct mutexattr) <= _Alignof(pthread_mutexattr_t), "mutexattr align");

static inline struct mutex *M(pthread_mutex_t *m)
{
	return (struct mutex *)m;
}

/* Kinds whose owner must be known: for EDEADLK, EPERM and recursion. */
static inline bool tracks_owner(int kind)
{
	unsigned type = (unsigned)kind & MK_TYPE;
	return PPL_DEBUG_CHECKS || type == PTHREAD_MUTEX_RECURSIVE_NP ||
	       type == PTHREAD_MUTEX_ERRORCHECK_NP || ((unsigned)kind & (MK_ROBUST | MK_PI));
}

/* The calling thread's identity for `owner`: the low 32 bits of its id
 * (unique within a process until 2^32 threads have been made), never 0.
 * A process-shared mutex also records the owner's pid in owner_pid. */
static inline uint32_t owner_token(void)
{
	uint32_t tok = (uint32_t)ult_self()->id;
	return tok ? tok : 0x80000000u;
}

static bool owned_by_me(struct mutex *m, int kind)
{
	if (atomic_load_explicit(&m->owner, memory_order_relaxed) != owner_token())
		return false;
	return ((unsigned)kind & MK_PSHARED) == 0 ||
	       atomic_load_explicit(&m->owner_pid, memory_order_relaxed) == vp_process_id();
}

static inline void set_owner(struct mutex *m, int kind)
{
	if ((unsigned)kind & MK_PSHARED)
		atomic_store_explicit(&m->owner_pid, vp_process_id(), memory_order_relaxed);
	atomic_store_explicit(&m->owner, owner_token(), memory_order_relaxed);
}

static inline bool valid_nsec(const struct timespec *ts)
{
	return ts->tv_nsec >= 0 && ts->tv_nsec < 1000000000L;
}

static int fifo_prio_min(void)
{
	return sched_get_priority_min(SCHED_FIFO);
}

static int fifo_prio_max(void)
{
	return sched_get_priority_max(SCHED_FIFO);
}

/* ---- waiting ------------------------------------------------------------- */

static int wait_pshared(struct mutex *m, const struct timespec *abstime, clockid_t clk)
{
	while (atomic_exchange_explicit(&m->state, 2, memory_order_acquire) != 0) {
		if (pshared_wait(&m->state, 2, abstime, clk) == ETIMEDOUT)
			return ETIMEDOUT;
	}
	return 0;
}

static inline int spins_for(int kind, bool relock)
{
	if (((unsigned)kind & MK_TYPE) == PTHREAD_MUTEX_ADAPTIVE_NP)
		return ADAPTIVE_SPINS;
	return relock ? SPINS_RELOCK : 0;
}

/* One of PPL_STATS's mutex counters, on the calling thread's VP (none for
 * a foreign thread).  Slow paths only. */
#define COUNT(field)                                                         \
	do {                                                                 \
		struct vproc *v_ = (struct vproc *)vp_current();             \
		if (v_)                                                      \
			v_->stats.field++;                                   \
	} while (0)

/* The mutex was seen held: spin `spins` polls, then park.  0, ETIMEDOUT or
 * EINVAL.  Out of line, like the other slow paths below, so that the
 * uncontended lock and unlock save no registers. */
static __attribute__((noinline)) int acquire_slow(struct mutex *m, int kind, int spins,
						 const struct timespec *abstime, clockid_t clk)
{
	COUNT(mutex_waits);
	/* The owner can be running only if there is another VP. */
	if (ppl_rt.nvps > 1) {
		for (int i = 0; i < spins; i++) {
			uint32_t s = atomic_load_explicit(&m->state, memory_order_relaxed);
			if (s == 0 && atomic_compare_exchange_weak_explicit(&m->state, &s, 1,
					memory_order_acquire, memory_order_relaxed))
				return 0;
			cpu_relax();
		}
	}
	if (abstime) {
		/* As glibc: the time is checked only once the caller must wait. */
		if (ppl_unlikely(!valid_nsec(abstime)))
			return EINVAL;
		if (abstime->tv_sec < 0)
			return ETIMEDOUT;
	}
	if ((unsigned)kind & MK_PSHARED)
		return wait_pshared(m, abstime, clk);

	struct ult *self = ult_self();
	bool pi = ((unsigned)kind & MK_PI) != 0;
	for (;;) {
		/* Priority inheritance: the owner chain runs at our priority
		 * while we wait (mutex_prio.c). */
		if (pi)
			prio_block((pthread_mutex_t *)m);
		spin_lock(&m->lock);
		if (atomic_exchange_explicit(&m->state, 2, memory_order_acquire) == 0) {
			spin_unlock(&m->lock);
			if (pi)
				prio_unblock((pthread_mutex_t *)m);
			return 0;
		}
		waitq_push(&m->q, self);
		/* A signal ends the park but not the wait: contend again. */
		int err = sched_park_flags(&m->lock, &m->q, abstime, clk, PARK_INTR);
		if (err != 0 && err != EINTR) {
			if (pi)
				prio_unblock((pthread_mutex_t *)m);
			return err;
		}
	}
}

int mutex_top_waiter(pthread_mutex_t *pm)
{
	struct mutex *m = M(pm);
	spin_lock(&m->lock);
	int p = waitq_empty(&m->q) ? -1 : m->q.head->prio;
	spin_unlock(&m->lock);
	return p;
}

static inline int ceiling_of(int kind)
{
	return (int)(((unsigned)kind & MK_CEIL_MASK) >> MK_CEIL_SHIFT);
}

/* The PI and PP protocols apply (at user level: private mutexes only). */
static inline bool prio_protocol(int kind)
{
	return ((unsigned)kind & (MK_PI | MK_PP)) != 0 && ((unsigned)kind & MK_PSHARED) == 0;
}

/* State was 2: release and wake one waiter. */
static __attribute__((noinline)) void release_slow(struct mutex *m, int kind)
{
	if ((unsigned)kind & MK_PSHARED) {
		atomic_store_explicit(&m->state, 0, memory_order_release);
		pshared_wake(&m->state, 1);
		return;
	}
	spin_lock(&m->lock);
	atomic_store_explicit(&m->state, 0, memory_order_release);
	struct ult *t = waitq_pop(&m->q);
	spin_unlock(&m->lock);
	/* From here on m may already be destroyed and freed. */
	if (t) {
		COUNT(mutex_wakes);
		sched_wake(t);
	}
}

/* glibc's own flag (glibcabi.h): true until a second kernel thread exists
 * (libppl clears it when it starts its VPs).  While it holds, nobody can
 * observe a private mutex between our load and store, so glibc's x86 lock
 * skips the bus lock; so do we, or a single-threaded program would pay
 * 2-3x for every lock. */
static inline bool single_threaded(void)
{
	return glibcabi_single_threaded();
}

static inline void release(struct mutex *m, int kind)
{
	if (single_threaded() &&
	    atomic_load_explicit(&m->state, memory_order_relaxed) == 1) {
		atomic_store_explicit(&m->state, 0, memory_order_relaxed);
		return;
	}
	uint32_t one = 1;
	if (ppl_likely(atomic_compare_exchange_strong_explicit(&m->state, &one, 0,
			memory_order_release, memory_order_relaxed)))
		return;
	if (one == 2)
		release_slow(m, kind);
	/* one == 0: unlocking an unlocked mutex; glibc ignores it as well. */
}

/* ---- lock and unlock ----------------------------------------------------- */

/* Every kind but the uncontended default: mode 0 lock, 1 trylock, 2 timed,
 * 3 a cond waiter's relock. */
static __attribute__((noinline)) int lock_common(struct mutex *m, int kind, int mode,
						const struct timespec *abstime,
		       clockid_t clk)
{
	if (ppl_unlikely(((unsigned)kind & ~MK_VALID) != 0 || kind == MK_DESTROYED))
		return EINVAL;
	if ((unsigned)kind & MK_ROBUST)
		return robust_lock((pthread_mutex_t *)m, kind, mode == 3 ? 0 : mode, abstime, clk);
	unsigned type = (unsigned)kind & MK_TYPE;
	bool track = tracks_owner(kind);
	if (track) {
		if (owned_by_me(m, kind)) {
			if (type == PTHREAD_MUTEX_RECURSIVE_NP) {
				if (m->count == UINT32_MAX)
					return EAGAIN;
				m->count++;
				return 0;
			}
			if (type == PTHREAD_MUTEX_ERRORCHECK_NP)
				return mode == 1 ? EBUSY : EDEADLK;
			/* other kinds deadlock (or time out) like glibc's */
		}
	}
	/* As glibc: a caller above the ceiling may not lock a PP mutex. */
	if (((unsigned)kind & MK_PP) && prio_current() > ceiling_of(kind))
		return EINVAL;
	uint32_t zero = 0;
	if (!atomic_compare_exchange_strong_explicit(&m->state, &zero, 1, memory_order_acquire,
						     memory_order_relaxed)) {
		if (mode == 1)
			return EBUSY;
		int err = acquire_slow(m, kind, spins_for(kind, mode == 3), abstime, clk);
		if (err != 0)
			return err;
	}
	if (track) {
		set_owner(m, kind);
		m->count = 1;
	}
	if (prio_protocol(kind))
		prio_locked((pthread_mutex_t *)m, (unsigned)kind & MK_PP ? ceiling_of(kind) : -1);
	return 0;
}

/* Everything but mutex_fast.h's inline fast path (which this repeats:
 * it is not taken when a hook is on). */
static int lock_slow(pthread_mutex_t *pm, bool relock)
{
	sched_point();
	struct mutex *m = M(pm);
	int kind = atomic_load_explicit(&m->kind, memory_order_relaxed);
	if (ppl_likely((kind == PTHREAD_MUTEX_TIMED_NP || kind == PTHREAD_MUTEX_ADAPTIVE_NP) &&
		       !PPL_DEBUG_CHECKS)) {
		if (single_threaded() &&
		    atomic_load_explicit(&m->state, memory_order_relaxed) == 0) {
			atomic_store_explicit(&m->state, 1, memory_order_relaxed);
			return 0;
		}
		uint32_t zero = 0;
		if (ppl_likely(atomic_compare_exchange_strong_explicit(&m->state, &zero, 1,
				memory_order_acquire, memory_order_relaxed)))
			return 0;
		return acquire_slow(m, kind, spins_for(kind, relock), NULL, CLOCK_REALTIME);
	}
	return lock_common(m, kind, relock ? 3 : 0, NULL, CLOCK_REALTIME);
}

int ppl_mutex_lock_slow(pthread_mutex_t *pm)
{
	return lock_slow(pm, false);
}

int mutex_cond_relock(pthread_mutex_t *pm)
{
	return mutex_lock_fast(pm) ? 0 : lock_slow(pm, true);
}

int ppl_mutex_trylock_slow(pthread_mutex_t *pm)
{
	sched_point();
	struct mutex *m = M(pm);
	return lock_common(m, atomic_load_explicit(&m->kind, memory_order_relaxed), 1, NULL,
			   CLOCK_REALTIME);
}

int ppl_pthread_mutex_clocklock(pthread_mutex_t *pm, clockid_t clk, const struct timespec *ts)
{
	sched_point();
	if (clk != CLOCK_REALTIME && clk != CLOCK_MONOTONIC)
		return EINVAL;
	struct mutex *m = M(pm);
	return lock_common(m, atomic_load_explicit(&m->kind, memory_order_relaxed), 2, ts, clk);
}

int ppl_pthread_mutex_timedlock(pthread_mutex_t *pm, const struct timespec *ts)
{
	return ppl_pthread_mutex_clocklock(pm, CLOCK_REALTIME, ts);
}

static int unlock_checked(struct mutex *m, int kind);

int ppl_mutex_unlock_slow(pthread_mutex_t *pm)
{
	sched_point();
	struct mutex *m = M(pm);
	int kind = atomic_load_explicit(&m->kind, memory_order_relaxed);
	if (ppl_likely((kind == PTHREAD_MUTEX_TIMED_NP || kind == PTHREAD_MUTEX_ADAPTIVE_NP) &&
		       !PPL_DEBUG_CHECKS)) {
		release(m, kind);
		preempt_point();
		return 0;
	}
	return unlock_checked(m, kind);
}

/* Every kind that checks its owner or is invalid. */
static __attribute__((noinline)) int unlock_checked(struct mutex *m, int kind)
{
	if (ppl_unlikely(((unsigned)kind & ~MK_VALID) != 0 || kind == MK_DESTROYED))
		return EINVAL;
	if ((unsigned)kind & MK_ROBUST)
		return robust_unlock((pthread_mutex_t *)m, kind);
	if (tracks_owner(kind)) {
		unsigned type = (unsigned)kind & MK_TYPE;
		bool checked = type == PTHREAD_MUTEX_RECURSIVE_NP || type == PTHREAD_MUTEX_ERRORCHECK_NP ||
			       ((unsigned)kind & MK_PI);
		if (!owned_by_me(m, kind)) {
			if (checked)
				return EPERM;
			ppl_fatal("pthread_mutex_unlock: mutex %p is not locked by the caller", (void *)m);
		}
		if (type == PTHREAD_MUTEX_RECURSIVE_NP && --m->count != 0)
			return 0;
		atomic_store_explicit(&m->owner, 0, memory_order_relaxed);
	}
	release(m, kind);
	if (prio_protocol(kind))
		prio_unlocked((pthread_mutex_t *)m);
	preempt_point();
	return 0;
}

/* ---- life cycle ------------------------------------------------------------ */

int ppl_pthread_mutex_init(pthread_mutex_t *pm, const pthread_mutexattr_t *pa)
{
	uint32_t ak = pa ? ((const struct mutexattr *)pa)->mutexkind : PTHREAD_MUTEX_NORMAL;
	unsigned proto = (ak & MA_PROTO_MASK) >> MA_PROTO_SHIFT;
	/* glibc does not support robust priority-protected mutexes */
	if (proto == PTHREAD_PRIO_PROTECT && (ak & MA_ROBUST))
		return ENOTSUP;

	int kind = (int)(ak & ~MA_FLAGS);
	if (ak & MA_ROBUST)
		kind |= MK_ROBUST;
	if (proto == PTHREAD_PRIO_INHERIT)
		kind |= MK_PI;
	if (proto == PTHREAD_PRIO_PROTECT) {
		int ceiling = (int)((ak & MA_CEIL_MASK) >> MA_CEIL_SHIFT);
		if (ceiling < fifo_prio_min())
			ceiling = fifo_prio_min();
		kind |= (int)(MK_PP | ((unsigned)ceiling << MK_CEIL_SHIFT));
	}
	/* Robust kinds wait with shared futexes whatever this says
	 * (mutex_robust.c), as glibc's do. */
	if (ak & MA_PSHARED)
		kind |= MK_PSHARED;

	memset(pm, 0, sizeof *pm);
	atomic_store_explicit(&M(pm)->kind, kind, memory_order_relaxed);
	return 0;
}

int ppl_pthread_mutex_destroy(pthread_mutex_t *pm)
{
	struct mutex *m = M(pm);
	int kind = atomic_load_explicit(&m->kind, memory_order_relaxed);
	/* glibc: EBUSY while __nusers counts a holder or a thread waiting in
	 * pthread_cond_*wait with it; never for a robust kind. */
	if (((unsigned)kind & MK_ROBUST) == 0 &&
	    (atomic_load_explicit(&m->state, memory_order_relaxed) != 0 ||
	     atomic_load_explicit(&m->nusers, memory_order_relaxed) != 0))
		return EBUSY;
	/* Wait out an unlocker still inside release_slow.  Not for a robust
	 * kind: it has no such lock, and the same word holds its holder's
	 * token, left there by an owner that died holding it (a thread, a
	 * forked child), so waiting for it hung (glibc's tst-robust-fork). */
	if (((unsigned)kind & MK_ROBUST) == 0) {
		spin_lock(&m->lock);
		spin_unlock(&m->lock);
	}
	atomic_store_explicit(&m->kind, MK_DESTROYED, memory_order_relaxed);
	return 0;
}

/* As glibc: EINVAL unless robust and inconsistent (owner died). */
int ppl_pthread_mutex_consistent(pthread_mutex_t *pm)
{
	int kind = atomic_load_explicit(&M(pm)->kind, memory_order_relaxed);
	if (((unsigned)kind & MK_ROBUST) == 0)
		return EINVAL;
	return robust_consistent(pm);
}

/* pthread_cond_*wait: the caller, holding m, is about to release it and
 * wait; counted until it has it again (mutex_cond_leave), as glibc's
 * __nusers does, so that destroy says EBUSY meanwhile. */
void mutex_cond_enter(pthread_mutex_t *pm)
{
	struct mutex *m = M(pm);
	if (((unsigned)atomic_load_explicit(&m->kind, memory_order_relaxed) & MK_ROBUST) == 0)
		atomic_fetch_add_explicit(&m->nusers, 1, memory_order_relaxed);
}

void mutex_cond_leave(pthread_mutex_t *pm)
{
	struct mutex *m = M(pm);
	if (((unsigned)atomic_load_explicit(&m->kind, memory_order_relaxed) & MK_ROBUST) == 0)
		atomic_fetch_sub_explicit(&m->nusers, 1, memory_order_relaxed);
}

int ppl_pthread_mutex_getprioceiling(const pthread_mutex_t *pm, int *prioceiling)
{
	int kind = atomic_load_explicit(&((struct mutex *)pm)->kind, memory_order_relaxed);
	if (((unsigned)kind & MK_PP) == 0 || kind == MK_DESTROYED)
		return EINVAL;
	*prioceiling = ceiling_of(kind);
	return 0;
}

int ppl_pthread_mutex_setprioceiling(pthread_mutex_t *pm, int prioceiling, int *old)
{
	struct mutex *m = M(pm);
	int kind = atomic_load_explicit(&m->kind, memory_order_relaxed);
	if (((unsigned)kind & MK_PP) == 0 || kind == MK_DESTROYED)
		return EINVAL;
	if (prioceiling < fifo_prio_min() || prioceiling > fifo_prio_max() ||
	    (((unsigned)prioceiling << MK_CEIL_SHIFT) >> MK_CEIL_SHIFT) != (unsigned)prioceiling)
		return EINVAL;
	/* As glibc: the ceiling is changed with the mutex held. */
	bool held = tracks_owner(kind) && owned_by_me(m, kind);
	if (!held) {
		int err = ppl_pthread_mutex_lock(pm);
		if (err != 0)
			return err;
	}
	if (old)
		*old = (int)(((unsigned)kind & MK_CEIL_MASK) >> MK_CEIL_SHIFT);
	kind = (int)(((unsigned)kind & ~MK_CEIL_MASK) | ((unsigned)prioceiling << MK_CEIL_SHIFT));
	atomic_store_explicit(&m->kind, kind, memory_order_relaxed);
	if (!held)
		return ppl_pthread_mutex_unlock(pm);
	return 0;
}

/* ---- attributes ------------------------------------------------------------ */

static inline struct mutexattr *A(pthread_mutexattr_t *a)
{
	return (struct mutexattr *)a;
}

static inline const struct mutexattr *CA(const pthread_mutexattr_t *a)
{
	return (const struct mutexattr *)a;
}

int ppl_pthread_mutexattr_init(pthread_mutexattr_t *a)
{
	A(a)->mutexkind = PTHREAD_MUTEX_NORMAL;
	return 0;
}

int ppl_pthread_mutexattr_destroy(pthread_mutexattr_t *a)
{
	(void)a;
	return 0;
}

int ppl_pthread_mutexattr_settype(pthread_mutexattr_t *a, int type)
{
	if (type < PTHREAD_MUTEX_NORMAL || type > PTHREAD_MUTEX_ADAPTIVE_NP)
		return EINVAL;
	A(a)->mutexkind = (A(a)->mutexkind & MA_FLAGS) | (uint32_t)type;
	return 0;
}

int ppl_pthread_mutexattr_gettype(const pthread_mutexattr_t *a, int *type)
{
	*type = (int)(CA(a)->mutexkind & ~MA_FLAGS & ~MK_ELISION);
	return 0;
}

int ppl_pthread_mutexattr_setpshared(pthread_mutexattr_t *a, int pshared)
{
	if (pshared != PTHREAD_PROCESS_PRIVATE && pshared != PTHREAD_PROCESS_SHARED)
		return EINVAL;
	if (pshared == PTHREAD_PROCESS_SHARED)
		A(a)->mutexkind |= MA_PSHARED;
	else
		A(a)->mutexkind &= ~MA_PSHARED;
	return 0;
}

int ppl_pthread_mutexattr_getpshared(const pthread_mutexattr_t *a, int *pshared)
{
	*pshared = (CA(a)->mutexkind & MA_PSHARED) ? PTHREAD_PROCESS_SHARED : PTHREAD_PROCESS_PRIVATE;
	return 0;
}

int ppl_pthread_mutexattr_setprotocol(pthread_mutexattr_t *a, int protocol)
{
	if (protocol != PTHREAD_PRIO_NONE && protocol != PTHREAD_PRIO_INHERIT &&
	    protocol != PTHREAD_PRIO_PROTECT)
		return EINVAL;
	A(a)->mutexkind = (A(a)->mutexkind & ~MA_PROTO_MASK) | ((uint32_t)protocol << MA_PROTO_SHIFT);
	return 0;
}

int ppl_pthread_mutexattr_getprotocol(const pthread_mutexattr_t *a, int *protocol)
{
	*protocol = (int)((CA(a)->mutexkind & MA_PROTO_MASK) >> MA_PROTO_SHIFT);
	return 0;
}

int ppl_pthread_mutexattr_setprioceiling(pthread_mutexattr_t *a, int prioceiling)
{
	if (prioceiling < fifo_prio_min() || prioceiling > fifo_prio_max() ||
	    (prioceiling & (int)(MA_CEIL_MASK >> MA_CEIL_SHIFT)) != prioceiling)
		return EINVAL;
	A(a)->mutexkind = (A(a)->mutexkind & ~MA_CEIL_MASK) | ((uint32_t)prioceiling << MA_CEIL_SHIFT);
	return 0;
}

int ppl_pthread_mutexattr_getprioceiling(const pthread_mutexattr_t *a, int *prioceiling)
{
	int ceiling = (int)((CA(a)->mutexkind & MA_CEIL_MASK) >> MA_CEIL_SHIFT);
	if (ceiling == 0)
		ceiling = fifo_prio_min();
	*prioceiling = ceiling;
	return 0;
}

int ppl_pthread_mutexattr_setrobust(pthread_mutexattr_t *a, int robust)
{
	if (robust != PTHREAD_MUTEX_STALLED && robust != PTHREAD_MUTEX_ROBUST)
		return EINVAL;
	if (robust == PTHREAD_MUTEX_ROBUST)
		A(a)->mutexkind |= MA_ROBUST;
	else
		A(a)->mutexkind &= ~MA_ROBUST;
	return 0;
}

int ppl_pthread_mutexattr_getrobust(const pthread_mutexattr_t *a, int *robust)
{
	*robust = (CA(a)->mutexkind & MA_ROBUST) ? PTHREAD_MUTEX_ROBUST : PTHREAD_MUTEX_STALLED;
	return 0;
}
