/* Thread attributes: the pthread_attr_* functions over a 56-byte overlay of
 * pthread_attr_t, the process-wide default attributes
 * (pthread_{get,set}attr_default_np), and attr_read/attr_write, the decoded
 * form thread.c works with.
 *
 * Error codes and corner cases follow glibc 2.36 (nptl/pthread_attr_*.c);
 * the deliberate differences (scope) are listed in docs/abi.md.
 *
 * An all-zero pthread_attr_t decodes as a default one (joinable, PROCESS
 * scope, inherited scheduling, default stack, one guard page), although
 * POSIX requires pthread_attr_init before use. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attr.h"
#include "stack.h"

/* glibc checks stack sizes against the architecture's fixed minimum, not the
 * (possibly larger) sysconf(_SC_THREAD_STACK_MIN) that _GNU_SOURCE makes
 * PTHREAD_STACK_MIN expand to: take the fixed value, as it does. */
#undef PTHREAD_STACK_MIN
#include <bits/pthread_stack_min.h>
static const size_t stack_min = PTHREAD_STACK_MIN;
#undef PTHREAD_STACK_MIN

enum {
	ATTR_DETACHED = 0x001,       /* PTHREAD_CREATE_DETACHED */
	ATTR_EXPLICIT_SCHED = 0x002, /* PTHREAD_EXPLICIT_SCHED */
	ATTR_STACKADDR = 0x008,      /* a user stack: stacktop is valid */
	ATTR_SCOPE_SYSTEM = 0x100,   /* PTHREAD_SCOPE_SYSTEM: a VP of its own */
	ATTR_GUARD_SET = 0x200,      /* guardsize holds a value (possibly 0) */
};

/* Storage for the GNU extensions; allocated by the first setter that needs
 * it and freed by pthread_attr_destroy. */
struct attr_ext {
	void *cpuset;                /* cpusetsize bytes, or NULL: no affinity */
	size_t cpusetsize;
	sigset_t sigmask;
	bool sigmask_set;
};

/* The overlay.  Fields sit where glibc keeps the same information, and the
 * flag bits glibc also has carry its values; libppl's own bits are chosen so
 * that zero is the default (glibc's zero scope is SYSTEM, libppl's is
 * PROCESS; glibc stores the guard size eagerly).  Nothing depends on the
 * correspondence, but it costs nothing and keeps a memory dump readable. */
struct attr {
	struct sched_param param;
	int policy;
	unsigned flags;              /* ATTR_* */
	size_t guardsize;            /* meaningful with ATTR_GUARD_SET */
	void *stacktop;              /* with ATTR_STACKADDR: highest address + 1 */
	size_t stacksize;            /* 0: the process default */
	struct attr_ext *ext;        /* NULL until an extension is set */
	void *unused;
};

_Static_assert(sizeof(struct attr) == sizeof(pthread_attr_t), "pthread_attr_t overlay size");
_Static_assert(_Alignof(struct attr) <= _Alignof(pthread_attr_t),
	       "pthread_attr_t overlay alignment");
_Static_assert(sizeof(pthread_attr_t) == 56 && _Alignof(pthread_attr_t) == 8,
	       "glibc's x86_64 pthread_attr_t");

static inline struct attr *A(pthread_attr_t *a)
{
	return (struct attr *)a;
}

static inline const struct attr *CA(const pthread_attr_t *a)
{
	return (const struct attr *)a;
}

/* The process default, the starting point of pthread_create(NULL) and the
 * source of the stack size of every attribute that leaves it 0.  All zero:
 * a default attribute object.  Its ext is owned here. */
static struct attr default_attr;
static unsigned long default_gen;  /* bumped by every setattr_default_np */
static spin_t default_lock;        /* protects default_attr and default_gen */

static size_t page_size(void)
{
	return stack_page_size();   /* cached: a sysconf was 50 instructions a create */
}

static size_t guard_of(const struct attr *at)
{
	if ((at->flags & ATTR_GUARD_SET) || at->guardsize)
		return at->guardsize;
	return page_size();
}

/* The stack size a thread created from `at` gets: its own, else the process
 * default's, else 0 ("the runtime default", stack_default_size()). */
static size_t stacksize_of(const struct attr *at)
{
	if (at->stacksize)
		return at->stacksize;
	spin_lock(&default_lock);
	size_t size = default_attr.stacksize;
	spin_unlock(&default_lock);
	return size;
}

static int check_policy(int policy)
{
	if (policy != SCHED_OTHER && policy != SCHED_FIFO && policy != SCHED_RR)
		return EINVAL;
	return 0;
}

static int check_priority(int prio, int policy)
{
	int lo = sched_get_priority_min(policy);
	int hi = sched_get_priority_max(policy);
	if (lo < 0 || hi < 0 || prio < lo || prio > hi)
		return EINVAL;
	return 0;
}

static int ext_get(struct attr *at)
{
	if (at->ext)
		return 0;
	at->ext = calloc(1, sizeof *at->ext);
	return at->ext ? 0 : ENOMEM;
}

static void ext_free(struct attr *at)
{
	if (at->ext == NULL)
		return;
	free(at->ext->cpuset);
	free(at->ext);
	at->ext = NULL;
}

/* glibc reserves the first two real-time signals (SIGCANCEL, SIGSETXID) for
 * itself, and it still drives the VPs' kernel threads: a thread must never
 * block them.  sigdelset refuses to touch them, so clear the bits directly. */
static void clear_internal_signals(sigset_t *s)
{
	const size_t bits = 8 * sizeof s->__val[0];
	for (int sig = __SIGRTMIN; sig <= __SIGRTMIN + 1; sig++)
		s->__val[(size_t)(sig - 1) / bits] &= ~(1UL << ((size_t)(sig - 1) % bits));
}

/* A deep copy of src's extensions into dst (whose ext must be NULL). */
static int ext_copy(struct attr *dst, const struct attr *src)
{
	const struct attr_ext *e = src->ext;
	if (e == NULL || (e->cpuset == NULL && !e->sigmask_set))
		return 0;
	int err = ext_get(dst);
	if (err)
		return err;
	if (e->cpuset) {
		dst->ext->cpuset = malloc(e->cpusetsize);
		if (dst->ext->cpuset == NULL) {
			ext_free(dst);
			return ENOMEM;
		}
		memcpy(dst->ext->cpuset, e->cpuset, e->cpusetsize);
		dst->ext->cpusetsize = e->cpusetsize;
	}
	dst->ext->sigmask = e->sigmask;
	dst->ext->sigmask_set = e->sigmask_set;
	return 0;
}

/* ---- init, destroy ---------------------------------------------------------- */

int ppl_pthread_attr_init(pthread_attr_t *a)
{
	struct attr *at = A(a);
	memset(a, 0, sizeof *a);
	at->guardsize = page_size();
	at->flags = ATTR_GUARD_SET;
	return 0;
}

int ppl_pthread_attr_destroy(pthread_attr_t *a)
{
	ext_free(A(a));
	return 0;
}

/* ---- detach state, scope, scheduling ----------------------------------------- */

int ppl_pthread_attr_setdetachstate(pthread_attr_t *a, int v)
{
	struct attr *at = A(a);
	if (v == PTHREAD_CREATE_DETACHED)
		at->flags |= ATTR_DETACHED;
	else if (v == PTHREAD_CREATE_JOINABLE)
		at->flags &= ~(unsigned)ATTR_DETACHED;
	else
		return EINVAL;
	return 0;
}

int ppl_pthread_attr_getdetachstate(const pthread_attr_t *a, int *v)
{
	*v = CA(a)->flags & ATTR_DETACHED ? PTHREAD_CREATE_DETACHED : PTHREAD_CREATE_JOINABLE;
	return 0;
}

/* Both scopes are supported (glibc refuses PROCESS with ENOTSUP): PROCESS is
 * the M:N default, SYSTEM binds the thread to a VP of its own. */
int ppl_pthread_attr_setscope(pthread_attr_t *a, int v)
{
	struct attr *at = A(a);
	if (v == PTHREAD_SCOPE_SYSTEM)
		at->flags |= ATTR_SCOPE_SYSTEM;
	else if (v == PTHREAD_SCOPE_PROCESS)
		at->flags &= ~(unsigned)ATTR_SCOPE_SYSTEM;
	else
		return EINVAL;
	return 0;
}

int ppl_pthread_attr_getscope(const pthread_attr_t *a, int *v)
{
	*v = CA(a)->flags & ATTR_SCOPE_SYSTEM ? PTHREAD_SCOPE_SYSTEM : PTHREAD_SCOPE_PROCESS;
	return 0;
}

int ppl_pthread_attr_setinheritsched(pthread_attr_t *a, int v)
{
	struct attr *at = A(a);
	if (v == PTHREAD_EXPLICIT_SCHED)
		at->flags |= ATTR_EXPLICIT_SCHED;
	else if (v == PTHREAD_INHERIT_SCHED)
		at->flags &= ~(unsigned)ATTR_EXPLICIT_SCHED;
	else
		return EINVAL;
	return 0;
}

int ppl_pthread_attr_getinheritsched(const pthread_attr_t *a, int *v)
{
	*v = CA(a)->flags & ATTR_EXPLICIT_SCHED ? PTHREAD_EXPLICIT_SCHED : PTHREAD_INHERIT_SCHED;
	return 0;
}

/* Like glibc, the policy is not checked against the priority already stored:
 * a program sets the policy first, then a priority valid for it. */
int ppl_pthread_attr_setschedpolicy(pthread_attr_t *a, int v)
{
	int err = check_policy(v);
	if (err)
		return err;
	A(a)->policy = v;
	return 0;
}

int ppl_pthread_attr_getschedpolicy(const pthread_attr_t *a, int *v)
{
	*v = CA(a)->policy;
	return 0;
}

int ppl_pthread_attr_setschedparam(pthread_attr_t *a, const struct sched_param *v)
{
	struct attr *at = A(a);
	int err = check_priority(v->sched_priority, at->policy);
	if (err)
		return err;
	at->param = *v;
	return 0;
}

int ppl_pthread_attr_getschedparam(const pthread_attr_t *a, struct sched_param *v)
{
	*v = CA(a)->param;
	return 0;
}

/* ---- stack ------------------------------------------------------------------------- */

int ppl_pthread_attr_setstacksize(pthread_attr_t *a, size_t v)
{
	if (v < stack_min)
		return EINVAL;
	A(a)->stacksize = v;
	return 0;
}

/* An unset size reads as the size a thread would get, as in glibc. */
int ppl_pthread_attr_getstacksize(const pthread_attr_t *a, size_t *v)
{
	size_t size = stacksize_of(CA(a));
	*v = size ? size : stack_default_size();
	return 0;
}

/* The obsolete interface: the address is the stack's top on a machine whose
 * stack grows down, and the size comes from setstacksize (or the default). */
int ppl_pthread_attr_setstackaddr(pthread_attr_t *a, void *v)
{
	struct attr *at = A(a);
	at->stacktop = v;
	at->flags |= ATTR_STACKADDR;
	return 0;
}

int ppl_pthread_attr_getstackaddr(const pthread_attr_t *a, void **v)
{
	*v = CA(a)->stacktop;
	return 0;
}

/* Like glibc: the size must be at least PTHREAD_STACK_MIN and the address
 * may have any alignment (ctx_make aligns the initial frame down).  A region
 * that wraps around the address space cannot be a stack. */
int ppl_pthread_attr_setstack(pthread_attr_t *a, void *p, size_t s)
{
	struct attr *at = A(a);
	if (s < stack_min)
		return EINVAL;
	if ((uintptr_t)p + s < (uintptr_t)p)
		return EINVAL;
	at->stacksize = s;
	at->stacktop = (char *)p + s;
	at->flags |= ATTR_STACKADDR;
	return 0;
}

/* Reports what was set: (NULL, 0) on a fresh object, as in glibc. */
int ppl_pthread_attr_getstack(const pthread_attr_t *a, void **p, size_t *s)
{
	const struct attr *at = CA(a);
	*p = (char *)at->stacktop - at->stacksize;
	*s = at->stacksize;
	return 0;
}

int ppl_pthread_attr_setguardsize(pthread_attr_t *a, size_t v)
{
	struct attr *at = A(a);
	at->guardsize = v;
	at->flags |= ATTR_GUARD_SET;
	return 0;
}

int ppl_pthread_attr_getguardsize(const pthread_attr_t *a, size_t *v)
{
	*v = guard_of(CA(a));
	return 0;
}

/* ---- GNU extensions: affinity, signal mask ------------------------------------------ */

/* Applied by pthread_create as pthread_setaffinity_np would (schedparam.c):
 * a user thread keeps to one VP, a SCOPE_SYSTEM thread's kernel thread
 * takes the set. */
int ppl_pthread_attr_setaffinity_np(pthread_attr_t *a, size_t n, const cpu_set_t *s)
{
	struct attr *at = A(a);
	if (s == NULL || n == 0) {
		if (at->ext) {
			free(at->ext->cpuset);
			at->ext->cpuset = NULL;
			at->ext->cpusetsize = 0;
		}
		return 0;
	}
	int err = ext_get(at);
	if (err)
		return err;
	if (at->ext->cpusetsize != n) {
		void *p = realloc(at->ext->cpuset, n);
		if (p == NULL)
			return ENOMEM;
		at->ext->cpuset = p;
		at->ext->cpusetsize = n;
	}
	memcpy(at->ext->cpuset, s, n);
	return 0;
}

/* A set larger than the caller's buffer must have no CPU beyond it (EINVAL);
 * no stored set reads as "all CPUs", as in glibc. */
int ppl_pthread_attr_getaffinity_np(const pthread_attr_t *a, size_t n, cpu_set_t *s)
{
	const struct attr_ext *e = CA(a)->ext;
	if (e == NULL || e->cpuset == NULL) {
		memset(s, 0xff, n);
		return 0;
	}
	const unsigned char *src = e->cpuset;
	for (size_t i = n; i < e->cpusetsize; i++)
		if (src[i] != 0)
			return EINVAL;
	size_t copy = n < e->cpusetsize ? n : e->cpusetsize;
	memcpy(s, src, copy);
	memset((unsigned char *)s + copy, 0, n - copy);
	return 0;
}

int ppl_pthread_attr_setsigmask_np(pthread_attr_t *a, const sigset_t *s)
{
	struct attr *at = A(a);
	if (s == NULL) {
		if (at->ext)
			at->ext->sigmask_set = false;
		return 0;
	}
	int err = ext_get(at);
	if (err)
		return err;
	at->ext->sigmask = *s;
	clear_internal_signals(&at->ext->sigmask);
	at->ext->sigmask_set = true;
	return 0;
}

/* Returns PTHREAD_ATTR_NO_SIGMASK_NP (-1, not an errno) when none is set. */
int ppl_pthread_attr_getsigmask_np(const pthread_attr_t *a, sigset_t *s)
{
	const struct attr_ext *e = CA(a)->ext;
	if (e == NULL || !e->sigmask_set) {
		sigemptyset(s);
		return PTHREAD_ATTR_NO_SIGMASK_NP;
	}
	*s = e->sigmask;
	return 0;
}

/* ---- the process default ------------------------------------------------------------- */

/* Memory is allocated outside default_lock, a spin lock held only to copy a
 * few words: size the copy from a snapshot, then fill it under the lock if
 * no setter replaced the default meanwhile (default_gen), else start over. */
int ppl_pthread_getattr_default_np(pthread_attr_t *out)
{
	struct attr copy;
	for (;;) {
		spin_lock(&default_lock);
		unsigned long gen = default_gen;
		const struct attr_ext *e = default_attr.ext;
		bool want = e && (e->cpuset || e->sigmask_set);
		size_t setsize = e && e->cpuset ? e->cpusetsize : 0;
		spin_unlock(&default_lock);

		struct attr_ext *ext = NULL;
		void *set = NULL;
		if (want && (ext = calloc(1, sizeof *ext)) == NULL)
			return ENOMEM;
		if (setsize && (set = malloc(setsize)) == NULL) {
			free(ext);
			return ENOMEM;
		}

		spin_lock(&default_lock);
		if (gen != default_gen) {
			spin_unlock(&default_lock);
			free(set);
			free(ext);
			continue;
		}
		copy = default_attr;
		if (ext) {
			e = default_attr.ext;
			if (set)
				memcpy(set, e->cpuset, setsize);
			ext->cpuset = set;
			ext->cpusetsize = setsize;
			ext->sigmask = e->sigmask;
			ext->sigmask_set = e->sigmask_set;
		}
		spin_unlock(&default_lock);
		copy.ext = ext;
		break;
	}
	/* Report the values a thread gets, never "unset" (glibc's default
	 * object always holds them). */
	if (copy.stacksize == 0)
		copy.stacksize = stack_default_size();
	copy.guardsize = guard_of(&copy);
	copy.flags |= ATTR_GUARD_SET;
	memcpy(out, &copy, sizeof copy);
	return 0;
}

int ppl_pthread_setattr_default_np(const pthread_attr_t *a)
{
	const struct attr *in = CA(a);
	int err = check_policy(in->policy);
	if (err)
		return err;
	if (in->param.sched_priority > 0) {
		err = check_priority(in->param.sched_priority, in->policy);
		if (err)
			return err;
	}
	if (in->stacksize != 0 && in->stacksize < stack_min)
		return EINVAL;
	if (in->flags & ATTR_STACKADDR)   /* one stack cannot serve every thread */
		return EINVAL;

	struct attr next = *in;
	next.ext = NULL;
	err = ext_copy(&next, in);
	if (err)
		return err;
	next.guardsize = guard_of(in);
	next.flags |= ATTR_GUARD_SET;

	spin_lock(&default_lock);
	if (next.stacksize == 0)   /* 0 keeps the current default size */
		next.stacksize = default_attr.stacksize;
	struct attr old = default_attr;
	default_attr = next;
	default_gen++;
	spin_unlock(&default_lock);
	ext_free(&old);
	return 0;
}

/* ---- the decoded form, for thread.c ------------------------------------------------------- */

static void decode(const struct attr *at, size_t size, struct thread_attrs *out)
{
	/* Field by field: a compound literal would clear the two 128-byte
	 * copies too, a third of a create's attribute work (callgrind). */
	out->stacksize = size;
	out->stackaddr = NULL;
	out->guardsize = guard_of(at);
	out->detachstate = at->flags & ATTR_DETACHED ? PTHREAD_CREATE_DETACHED
						     : PTHREAD_CREATE_JOINABLE;
	out->scope = at->flags & ATTR_SCOPE_SYSTEM ? PTHREAD_SCOPE_SYSTEM : PTHREAD_SCOPE_PROCESS;
	out->inheritsched = at->flags & ATTR_EXPLICIT_SCHED ? PTHREAD_EXPLICIT_SCHED
							    : PTHREAD_INHERIT_SCHED;
	out->policy = at->policy;
	out->param = at->param;
	out->cpuset = NULL;
	out->cpusetsize = 0;
	out->sigmask = NULL;
	if (at->flags & ATTR_STACKADDR) {
		/* A user stack needs a definite size to find its low end. */
		if (out->stacksize == 0)
			out->stacksize = stack_default_size();
		out->stackaddr = (char *)at->stacktop - out->stacksize;
	}
}

/* The process default decoded, for default_gen (under default_lock): most
 * creates pass no attribute, and decoding it each time was a third of
 * their attribute work (callgrind). */
static struct thread_attrs default_decoded;
static unsigned long default_decoded_gen = ~0UL;

/* The default with extensions (an affinity or a signal mask). */
static __attribute__((noinline)) void read_default_ext(struct thread_attrs *out)
{
	/* The default's extensions are copied under the lock: a later
	 * pthread_setattr_default_np frees them. */
	struct attr copy;
	cpu_set_t set;
	sigset_t mask;
	bool has_set = false, has_mask = false;
	spin_lock(&default_lock);
	copy = default_attr;
	const struct attr_ext *e = copy.ext;
	if (e != NULL && e->cpuset != NULL) {
		/* CPUs past CPU_SETSIZE are not kept (glibc's cpu_set_t) */
		memset(&set, 0, sizeof set);
		memcpy(&set, e->cpuset, e->cpusetsize < sizeof set ? e->cpusetsize : sizeof set);
		has_set = true;
	}
	if (e != NULL && e->sigmask_set) {
		mask = e->sigmask;
		has_mask = true;
	}
	spin_unlock(&default_lock);
	decode(&copy, copy.stacksize, out);
	if (has_set) {
		out->default_cpuset = set;
		out->cpuset = &out->default_cpuset;
		out->cpusetsize = sizeof set;
	}
	if (has_mask) {
		out->default_sigmask = mask;
		out->sigmask = &out->default_sigmask;
	}
}

void attr_read(const pthread_attr_t *a, struct thread_attrs *out)
{
	if (a == NULL) {
		spin_lock(&default_lock);
		if (ppl_unlikely(default_attr.ext != NULL)) {
			spin_unlock(&default_lock);
			read_default_ext(out);
			return;
		}
		if (ppl_unlikely(default_decoded_gen != default_gen)) {
			decode(&default_attr, default_attr.stacksize, &default_decoded);
			default_decoded_gen = default_gen;
		}
		/* Field by field: not the two 128-byte copies (no extensions). */
		const struct thread_attrs *d = &default_decoded;
		out->stacksize = d->stacksize;
		out->stackaddr = NULL;
		out->guardsize = d->guardsize;
		out->detachstate = d->detachstate;
		out->scope = d->scope;
		out->inheritsched = d->inheritsched;
		out->policy = d->policy;
		out->param = d->param;
		spin_unlock(&default_lock);
		out->cpuset = NULL;
		out->cpusetsize = 0;
		out->sigmask = NULL;
		return;
	}
	const struct attr *at = CA(a);
	decode(at, stacksize_of(at), out);
	if (at->ext != NULL) {
		out->cpuset = at->ext->cpuset;
		out->cpusetsize = at->ext->cpuset ? at->ext->cpusetsize : 0;
		out->sigmask = at->ext->sigmask_set ? &at->ext->sigmask : NULL;
	}
}

int attr_write(pthread_attr_t *a, const struct thread_attrs *in)
{
	ppl_pthread_attr_init(a);
	struct attr *at = A(a);
	at->param = in->param;
	at->policy = in->policy;
	at->guardsize = in->guardsize;
	at->stacksize = in->stacksize;
	if (in->detachstate == PTHREAD_CREATE_DETACHED)
		at->flags |= ATTR_DETACHED;
	if (in->scope == PTHREAD_SCOPE_SYSTEM)
		at->flags |= ATTR_SCOPE_SYSTEM;
	if (in->inheritsched == PTHREAD_EXPLICIT_SCHED)
		at->flags |= ATTR_EXPLICIT_SCHED;
	if (in->stackaddr) {
		at->stacktop = (char *)in->stackaddr + in->stacksize;
		at->flags |= ATTR_STACKADDR;
	}
	if (in->cpuset) {
		int err = ppl_pthread_attr_setaffinity_np(a, in->cpusetsize, in->cpuset);
		if (err) {
			ppl_pthread_attr_destroy(a);
			return err;
		}
	}
	return 0;
}
