/* The "clone" VP backend: each VP (and each helper) is a kernel thread of
 * the process made with the raw clone system call, on a stack libppl maps
 * itself (stackmem.c), with a TLS block and thread descriptor that libppl
 * builds (glibcabi_kthread.h).  The C library never hears of these
 * threads: no entry in its thread list, no stack cache, no set_robust_list
 * or rseq registration.  What glibc does for its threads that a program
 * could observe is done here or elsewhere in libppl:
 *  - the process turns multi-threaded for the C library (stdio and the
 *    initial thread's malloc lock) before the first clone;
 *  - the new thread starts with its creator's signal mask, all signals
 *    blocked until its TLS is set up;
 *  - credential changes reach it: setxid.c signals every task of
 *    /proc/self/task, which lists these threads too;
 *  - exit and fatal signals end it with the thread group;
 *  - in fork's child, the slots of the threads that did not survive are
 *    free again (clone_fork_child) and the VPs are made anew.
 *
 * A slot is a stack with its TLS block.  Slots are never freed: the block
 * holds the C library's per-thread malloc state (tls_glibc.c).  A thread
 * ends with SYS_exit; the kernel then clears the descriptor's tid
 * (CLONE_CHILD_CLEARTID) and wakes its futex, after which nothing runs on
 * the stack and the slot may carry the next thread (glibc's stack cache
 * waits for the same word). */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clone_raw.h"
#include "futex.h"
#include "glibcabi_kthread.h"
#include "spinlock.h"
#include "vp_backend.h"
#include "vpdep.h"

#define CLONE_FLAGS                                                                           \
	(CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |   \
	 CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID)

/* As the kthread backend's (vp_kthread.c says why), plus a guard page. */
#define CLONE_STACK_SIZE (256u << 10)

enum { SLOT_FREE, SLOT_LIVE, SLOT_DEAD };

struct slot {
	struct slot *next;     /* every slot ever made (slots) */
	_Atomic int state;
	bool used;             /* the block has carried a thread already */
	void *tp;              /* its TLS block's thread pointer */
	pid_t *tid;            /* the descriptor's tid: 0 once the thread is gone */
	char *stack;           /* the mapping, guard page at the bottom */
	size_t stack_size;
	/* what the thread runs: a VP, or a helper's fn(arg) */
	struct vp *vp;
	void (*fn)(void *);
	void *arg;
	uint64_t mask;         /* the creator's signal mask */
};

static spin_t slots_lock;
static struct slot *slots;

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* A slot whose thread is gone, or a new one; NULL with errno value *err. */
static struct slot *slot_get(int *err)
{
	spin_lock(&slots_lock);
	for (struct slot *s = slots; s != NULL; s = s->next) {
		int st = atomic_load_explicit(&s->state, memory_order_acquire);
		if (st == SLOT_FREE ||
		    (st == SLOT_DEAD && __atomic_load_n(s->tid, __ATOMIC_ACQUIRE) == 0)) {
			atomic_store_explicit(&s->state, SLOT_LIVE, memory_order_relaxed);
			spin_unlock(&slots_lock);
			return s;
		}
	}
	spin_unlock(&slots_lock);

	void *tp = vp_backend_tls_block("clone", err);
	if (tp == NULL)
		return NULL;
	struct slot *s = calloc(1, sizeof *s);
	size_t guard = page_size();
	char *stack = vp_stack_map(CLONE_STACK_SIZE + guard);
	/* A PROT_NONE guard, not vp_stack_guard's madvise: the protection
	 * ends the mapping where the stack ends, as glibc's guard does, and
	 * tools that take a thread's stack to be the mapping around its
	 * first stack pointer (valgrind) would otherwise take in the
	 * neighbouring user-thread stacks too. */
	if (s == NULL || stack == NULL || mprotect(stack, guard, PROT_NONE) != 0) {
		/* The block is pooled with nothing: it stays reachable from the
		 * glibc-ABI code's list, unused. */
		if (stack != NULL)
			vp_stack_unmap(stack, CLONE_STACK_SIZE + guard);
		free(s);
		*err = EAGAIN;
		return NULL;
	}
	s->tp = tp;
	s->tid = glibcabi_kthread_tid(tp);
	s->stack = stack;
	s->stack_size = CLONE_STACK_SIZE + guard;
	atomic_init(&s->state, SLOT_LIVE);
	spin_lock(&slots_lock);
	s->next = slots;
	slots = s;
	spin_unlock(&slots_lock);
	return s;
}

static _Noreturn void clone_exit(void)
{
	pid_t me = (pid_t)vp_syscall(SYS_gettid);
	/* The caller's slot, by the kernel thread's id: the thread pointer may
	 * be a user thread's block (vp_terminate on a user-thread stack). */
	spin_lock(&slots_lock);
	for (struct slot *s = slots; s != NULL; s = s->next)
		if (atomic_load_explicit(&s->state, memory_order_relaxed) == SLOT_LIVE &&
		    __atomic_load_n(s->tid, __ATOMIC_RELAXED) == me) {
			atomic_store_explicit(&s->state, SLOT_DEAD, memory_order_release);
			break;
		}
	spin_unlock(&slots_lock);
	/* Signals blocked: no handler may run on the stack once it is DEAD
	 * (the kernel thread is not gone before the tid word is cleared). */
	uint64_t all = ~0ULL;
	vp_syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, sizeof all);
	for (;;)
		vp_syscall(SYS_exit, 0);
}

/* The new kernel thread, on its stack with its block as thread pointer and
 * every signal blocked. */
static _Noreturn void clone_main(void *p)
{
	struct slot *s = p;
	glibcabi_kthread_start(s->used);
	s->used = true;
	if (s->vp != NULL) {
		vp_syscall(SYS_rt_sigprocmask, SIG_SETMASK, &s->mask, NULL, sizeof s->mask);
		struct vp *vp = s->vp;
		vp_enter(vp);
		vp->main(vp);
		vp_leave(vp);   /* main returned: as vp_terminate */
	} else {
		vp_helper_sigmask();
		s->fn(s->arg);
	}
	clone_exit();
}

static int clone_start(struct vp *vp, void (*fn)(void *), void *arg)
{
	int err = 0;
	glibcabi_process_threaded();
	struct slot *s = slot_get(&err);
	if (s == NULL)
		return err;
	if (s->used)
		glibcabi_kthread_block_reset(s->tp);
	size_t guard = page_size();
	glibcabi_kthread_block_stack(s->tp, s->stack + guard, s->stack_size - guard);
	s->vp = vp;
	s->fn = fn;
	s->arg = arg;
	if (vp != NULL)
		vp->handle = (uintptr_t)s->tp;   /* before the thread runs */
	/* All blocked across the clone, so that nothing runs on the child
	 * before clone_main has set its TLS up; the child restores s->mask. */
	uint64_t all = ~0ULL;
	vp_syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &s->mask, sizeof all);
	long r = vp_clone_raw(CLONE_FLAGS, s->stack + s->stack_size, s->tid, s->tp, s->tid,
			      clone_main, s);
	vp_syscall(SYS_rt_sigprocmask, SIG_SETMASK, &s->mask, NULL, sizeof all);
	if (r < 0) {
		__atomic_store_n(s->tid, 0, __ATOMIC_RELAXED);
		atomic_store_explicit(&s->state, SLOT_FREE, memory_order_release);
		return (int)-r == ENOMEM ? EAGAIN : (int)-r;
	}
	return 0;
}

static int clone_create(struct vp *vp)
{
	return clone_start(vp, NULL, NULL);
}

static int clone_helper(void (*fn)(void *), void *arg)
{
	return clone_start(NULL, fn, arg);
}

static _Noreturn void clone_terminate(void)
{
	clone_exit();
}

static void clone_adopt(struct vp *vp)
{
	vp->handle = vp_kthread_handle();   /* the initial thread's descriptor */
}

/* The forking kernel thread is the only one left: every other slot's
 * thread is gone (its tid word still says otherwise), and the lock may
 * have been held by one of them. */
static void clone_fork_child(struct vp *vp)
{
	spin_init(&slots_lock);
	pid_t me = (pid_t)vp_syscall(SYS_gettid);
	for (struct slot *s = slots; s != NULL; s = s->next) {
		if ((uintptr_t)s->tp == vp->handle &&
		    atomic_load_explicit(&s->state, memory_order_relaxed) == SLOT_LIVE) {
			__atomic_store_n(s->tid, me, __ATOMIC_RELAXED);
			continue;
		}
		__atomic_store_n(s->tid, 0, __ATOMIC_RELAXED);
		atomic_store_explicit(&s->state, SLOT_FREE, memory_order_relaxed);
	}
}

const struct vp_backend vp_clone_backend = {
	.name = "clone",
	.create = clone_create,
	.terminate = clone_terminate,
	.adopt = clone_adopt,
	.helper = clone_helper,
	VP_TGROUP_OPS,
	.fork_child = clone_fork_child,
};
