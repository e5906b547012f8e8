/* The "kthread" VP backend: each VP is a detached kernel thread made by the
 * C library's pthread_create.
 *
 * libppl itself exports pthread_create and the pthread_attr_* functions, with
 * its own object layouts, so every C library thread function used here is
 * the next definition after ours, looked up by vp_libc_fn.  A plain
 * call would create a user-level thread (or recurse).  The lookups run on
 * first use, not in a constructor: a VP is first created long after the
 * dynamic loader is done, and a foreign thread may need vp_kthread_stack
 * before libppl's initialisation ran. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <signal.h>

#include "glibcabi_kthread.h"
#include "vp_backend.h"
#include "vpdep.h"

_Static_assert(sizeof(pthread_t) == sizeof(uintptr_t), "vp->handle holds a pthread_t");

/* The C library's functions, in the order of `names`. */
enum {
	REAL_CREATE,
	REAL_EXIT,
	REAL_SELF,
	REAL_GETATTR_NP,
	REAL_ATTR_INIT,
	REAL_ATTR_SETDETACHSTATE,
	REAL_ATTR_SETSTACKSIZE,
	REAL_ATTR_GETSTACK,
	REAL_ATTR_DESTROY,
	REAL_COUNT
};

static const char *const names[REAL_COUNT] = {
	"pthread_create",     "pthread_exit",        "pthread_self",
	"pthread_getattr_np", "pthread_attr_init",   "pthread_attr_setdetachstate",
	"pthread_attr_setstacksize", "pthread_attr_getstack", "pthread_attr_destroy",
};

static void *_Atomic real[REAL_COUNT];

/* Without the C library's threads there is no kernel thread to run on:
 * a missing one is fatal (vp_libc_fn). */
static void *resolve(int i)
{
	return vp_libc_fn(&real[i], names[i], NULL);
}

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
typedef void (*exit_fn)(void *);
typedef pthread_t (*self_fn)(void);
typedef int (*getattr_fn)(pthread_t, pthread_attr_t *);
typedef int (*attr_fn)(pthread_attr_t *);
typedef int (*setdetach_fn)(pthread_attr_t *, int);
typedef int (*setstacksize_fn)(pthread_attr_t *, size_t);
typedef int (*getstack_fn)(const pthread_attr_t *, void **, size_t *);

/* The stack of every kernel thread libppl makes (VPs, spares, the
 * monitor).  User threads run on stacks of their own; a kernel thread's
 * own stack holds only libppl's scheduler and monitor loops, which use a
 * few KiB, and the signal handlers that land while it is idle (the
 * application's too, as on any thread of a process that has not blocked
 * them).  The C library's default, RLIMIT_STACK (8 MiB), cost one hand-off
 * to a spare 8 MiB of address space: under `ulimit -v` of 1 GiB a hundred
 * threads blocked in read() used it all.  256 KiB leaves a handler as much
 * as PTHREAD_STACK_MIN sixteen times over; the C library adds its guard
 * page below it. */
#define KTHREAD_STACK_SIZE (256u << 10)

/* Detached attributes with libppl's kernel-thread stack size. */
static int kthread_attr(pthread_attr_t *a)
{
	int err = ((attr_fn)resolve(REAL_ATTR_INIT))(a);
	if (err)
		return err;
	/* Detached: nobody joins a VP; its resources go when it ends. */
	err = ((setdetach_fn)resolve(REAL_ATTR_SETDETACHSTATE))(a, PTHREAD_CREATE_DETACHED);
	if (err == 0)
		err = ((setstacksize_fn)resolve(REAL_ATTR_SETSTACKSIZE))(a, KTHREAD_STACK_SIZE);
	if (err)
		((attr_fn)resolve(REAL_ATTR_DESTROY))(a);
	return err;
}

/* A sanitizer's run time (libtsan, libasan) placed ahead of libppl wraps
 * pthread_create to set up its state for each new kernel thread; a kernel
 * thread it has not seen crashes it at its first intercepted call (TSan's
 * malloc).  So libppl's own kernel threads are made through that wrapper,
 * whose call of the next pthread_create (libppl's) passes straight on to
 * the C library's while vp_creating_kthread_flag is set. */
__thread bool vp_creating_kthread_flag;
static void *_Atomic interposer;   /* the wrapper, or the C library's */

int vp_real_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
	return ((create_fn)resolve(REAL_CREATE))(t, a, fn, arg);
}

static int create_kthread(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
	void *c = atomic_load_explicit(&interposer, memory_order_acquire);
	if (c == NULL) {
		/* The first definition in the global scope, if it belongs to
		 * neither libppl nor the C library. */
		Dl_info first, ours, libc;
		c = dlsym(RTLD_DEFAULT, "pthread_create");
		if (c == NULL || !dladdr(c, &first) || !dladdr((void *)&create_kthread, &ours) ||
		    !dladdr(resolve(REAL_CREATE), &libc) || first.dli_fbase == ours.dli_fbase ||
		    first.dli_fbase == libc.dli_fbase)
			c = resolve(REAL_CREATE);
		atomic_store_explicit(&interposer, c, memory_order_release);
	}
	if (c == resolve(REAL_CREATE))
		return ((create_fn)c)(t, a, fn, arg);
	vp_creating_kthread_flag = true;
	int err = ((create_fn)c)(t, a, fn, arg);
	vp_creating_kthread_flag = false;
	return err;
}

/* A VP's kernel thread ends by returning from kthread_main, not with
 * pthread_exit: glibc's pthread_exit unwinds the stack, for which it first
 * loads libgcc_s with dlopen, whose malloc gives the ending thread a malloc
 * arena of its own, and the arena and libgcc_s stay, to be locked and
 * copied at every later fork (docs/benchmarks.md, fork).  Set while
 * kthread_main runs, with the frame it returns to. */
static __thread jmp_buf *kthread_end;
static __thread uintptr_t kthread_end_frame;

static void *kthread_main(void *p)
{
	struct vp *vp = p;
	jmp_buf end;
	if (_setjmp(end) != 0)
		return NULL;   /* kthread_terminate */
	kthread_end = &end;
	kthread_end_frame = (uintptr_t)__builtin_frame_address(0);
	vp_enter(vp);
	vp->main(vp);
	/* main returned instead of calling vp_terminate: the same ending. */
	vp_leave(vp);
	kthread_end = NULL;
	return NULL;
}

static int kthread_create(struct vp *vp)
{
	pthread_attr_t a;
	int err = kthread_attr(&a);
	if (err)
		return err;
	/* The C library stores the handle before the thread starts, so the
	 * new VP may read vp->handle at once. */
	err = create_kthread((pthread_t *)&vp->handle, &a, kthread_main, vp);
	((attr_fn)resolve(REAL_ATTR_DESTROY))(&a);
	return err;
}

struct helper_start {
	void (*fn)(void *);
	void *arg;
};

/* The start records of helpers being started.  Not malloc's: a free() on
 * the new kernel thread would give it a malloc arena of its own (glibc
 * makes one for each thread that first calls malloc or free), which every
 * fork then locks, copies and unlocks in both processes (docs/benchmarks.md,
 * fork).  Helpers start rarely and copy the record at once. */
#define HELPER_SLOTS 8
static struct helper_start helper_slot[HELPER_SLOTS];
static _Atomic bool helper_slot_used[HELPER_SLOTS];

/* A free slot, else malloc's record: more than eight helpers starting at
 * once, or slots a fork's child inherited taken by helpers that were
 * starting on the parent's other kernel threads and never will here. */
static struct helper_start *helper_start_new(void)
{
	for (int i = 0; i < HELPER_SLOTS; i++)
		if (!atomic_load_explicit(&helper_slot_used[i], memory_order_relaxed) &&
		    !atomic_exchange_explicit(&helper_slot_used[i], true, memory_order_acquire))
			return &helper_slot[i];
	return malloc(sizeof(struct helper_start));
}

static void helper_start_free(struct helper_start *h)
{
	if (h >= helper_slot && h < helper_slot + HELPER_SLOTS)
		atomic_store_explicit(&helper_slot_used[h - helper_slot], false, memory_order_release);
	else
		free(h);
}

static void *helper_main(void *p)
{
	struct helper_start h = *(struct helper_start *)p;
	helper_start_free(p);
	/* The process backend's own helpers too (its manager, reaper and
	 * forwarder), which vpindep never sees. */
	if (glibcabi_kthread_keep_dtv != NULL)
		glibcabi_kthread_keep_dtv();
	vp_helper_sigmask();
	h.fn(h.arg);
	return NULL;
}

/* Detached, with kthread_attr's stack; vp_enter is not called, so
 * vp_current() stays NULL there. */
static int kthread_helper(void (*fn)(void *), void *arg)
{
	struct helper_start *h = helper_start_new();
	if (h == NULL)
		return EAGAIN;
	h->fn = fn;
	h->arg = arg;
	pthread_attr_t a;
	int err = kthread_attr(&a);
	if (err)
		goto fail;
	pthread_t t;
	err = create_kthread(&t, &a, helper_main, h);
	((attr_fn)resolve(REAL_ATTR_DESTROY))(&a);
	if (err)
		goto fail;
	return 0;

fail:
	helper_start_free(h);
	return err;
}

static _Noreturn void kthread_terminate(void)
{
	/* Only from deeper on the same stack (the VP's scheduler loop, whose
	 * retirement ends it): called on a user thread's stack, or on a
	 * helper, pthread_exit's unwinder finds the thread's start. */
	jmp_buf *end = kthread_end;
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	if (end != NULL && here < kthread_end_frame && kthread_end_frame - here < KTHREAD_STACK_SIZE) {
		kthread_end = NULL;
		_longjmp(*end, 1);
	}
	((exit_fn)resolve(REAL_EXIT))(NULL);
	abort();
}

static void kthread_adopt(struct vp *vp)
{
	vp->handle = (uintptr_t)((self_fn)resolve(REAL_SELF))();
}

const struct vp_backend vp_kthread_backend = {
	.name = "kthread",
	.create = kthread_create,
	.terminate = kthread_terminate,
	.adopt = kthread_adopt,
	.helper = kthread_helper,
	VP_TGROUP_OPS,
};

uintptr_t vp_kthread_handle(void)
{
	return (uintptr_t)((self_fn)resolve(REAL_SELF))();
}

int vp_kthread_stack(uintptr_t handle, void **lo, size_t *size)
{
	pthread_attr_t a;
	pthread_t t = handle ? (pthread_t)handle : ((self_fn)resolve(REAL_SELF))();
	/* For the main thread this parses /proc/self/maps and RLIMIT_STACK. */
	int err = ((getattr_fn)resolve(REAL_GETATTR_NP))(t, &a);
	if (err)
		return err;
	err = ((getstack_fn)resolve(REAL_ATTR_GETSTACK))(&a, lo, size);
	((attr_fn)resolve(REAL_ATTR_DESTROY))(&a);
	return err;
}

_Noreturn void vp_kthread_exit(void *result)
{
	((exit_fn)resolve(REAL_EXIT))(result);
	abort();
}
