/* fork() from a threaded process.
 *
 * glibc's own fork does the C library's part (runs the pthread_atfork
 * handlers, holds the malloc, stdio and loader locks across the system
 * call, rebuilds its thread list in the child), so libppl does not
 * replace it: it registers a handler triple of its own with
 * __register_atfork at start-up, before the program can register any.
 * glibc runs prepare handlers in reverse order of registration and
 * parent/child handlers in order, so libppl's prepare runs last, after the
 * program's (which may still lock libppl mutexes and park), and its child
 * handler first, before the program's (which may unlock mutexes or create
 * threads in the child).
 *
 * Invariants
 *  - prepare takes, in this order, the locks that guard state the child
 *    keeps: ppl_rt.lock, the TCB cache, the stack arenas, the TLS block
 *    list.  None of them is ever held by a thread that parks, so prepare
 *    only waits for short critical sections on other VPs to end.  The
 *    forking thread holds them across the system call and releases them in
 *    both processes: the child never inherits them locked.
 *  - Run queues, timer heaps and the address-keyed parking lot are not
 *    held: the child discards their contents (the threads on them do not
 *    exist there) and re-initialises their locks.
 *  - prepare, parent and child run on the forking thread, which does not
 *    park in between (glibc's fork takes only its own locks), so `held`
 *    needs no lock: a second forker waits in prepare for ppl_rt.lock. */
#include "parklot.h"
#include "pthread_impl.h"

extern int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
			     void *dso_handle);
extern void *__dso_handle;

static bool held;   /* prepare took the locks: the runtime had started */

static void fork_prepare(void)
{
	held = atomic_load_explicit(&ppl_rt.started, memory_order_acquire) != 0;
	if (!held)
		return;   /* one thread, no VP: nothing to protect */
	spin_lock(&ppl_rt.lock);
	ult_cache_atfork(FORK_PREPARE);
	stack_atfork(FORK_PREPARE);
	tls_atfork(FORK_PREPARE);
}

static void release(enum fork_phase ph)
{
	tls_atfork(ph);
	stack_atfork(ph);
	ult_cache_atfork(ph);
	spin_unlock(&ppl_rt.lock);
}

static void fork_parent(void)
{
	if (held)
		release(FORK_PARENT);
}

static void fork_child(void)
{
	if (!held)
		return;
	release(FORK_CHILD);
	parklot_atfork_child();
	ppl_runtime_fork_child();
}

void fork_init(void)
{
	if (__register_atfork(fork_prepare, fork_parent, fork_child, &__dso_handle) != 0)
		ppl_fatal("cannot register the fork handlers (out of memory)");
}
