/* fork() from a threaded process.
 *
 * glibc's own fork does the C library's part (runs the pthread_atfork
 * handlers, holds the malloc, stdio and loader locks across the system
 * call, rebuilds its thread list in the child), so libppl does not
 * replace it: it registers a handler triple of its own with
 * __register_atfork (glibcabi_atfork) at start-up, before the program can register any.
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
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "cpuclock.h"
#include "fork.h"
#include "mutex_prio.h"
#include "mutex_robust.h"
#include "parklot.h"
#include "runtime.h"
#include "schedhooks.h"
#include "scheduler.h"
#include "ult.h"

static bool held PPL_FORK_STATE;   /* prepare took the locks: the runtime had started */

/* ---- process identity (proc_stamp, pthread_impl.h) ----
 * self_pid is 0 until the first stamp; nforks counts the forks this process
 * has made, bumped in the parent after the system call, so every waiter in
 * the child's copy of the memory carries a count no higher than the one the
 * child records for its parent.  The lineage keeps the nearest ancestors;
 * a waiter of an older one reads as foreign (its queue is left alone). */
#define LINEAGE 8
static _Atomic int32_t self_pid PPL_FORK_STATE;
static _Atomic uint32_t nforks PPL_FORK_STATE;
static struct {
	int32_t pid;
	uint32_t nforks;   /* the ancestor's count when it made our line */
} lineage[LINEAGE] PPL_FORK_STATE;
static unsigned nlineage PPL_FORK_STATE;

uint64_t proc_stamp(void)
{
	int32_t pid = atomic_load_explicit(&self_pid, memory_order_relaxed);
	if (ppl_unlikely(pid == 0)) {
		pid = (int32_t)vp_process_id();
		atomic_store_explicit(&self_pid, pid, memory_order_relaxed);
	}
	return (uint64_t)(uint32_t)pid << 32 | atomic_load_explicit(&nforks, memory_order_relaxed);
}

enum proc_rel proc_relation(uint64_t stamp)
{
	int32_t pid = (int32_t)(stamp >> 32);
	uint32_t n = (uint32_t)stamp;
	if (pid == (int32_t)(proc_stamp() >> 32))
		return PROC_SELF;
	for (unsigned i = 0; i < nlineage; i++)
		if (lineage[i].pid == pid)
			return n <= lineage[i].nforks ? PROC_COPY : PROC_FOREIGN;
	return PROC_FOREIGN;
}

static void proc_fork_child(void)
{
	int32_t parent = atomic_load_explicit(&self_pid, memory_order_relaxed);
	if (parent != 0) {   /* 0: the parent never stamped a queue */
		if (nlineage == LINEAGE) {
			memmove(&lineage[0], &lineage[1], sizeof lineage[0] * (LINEAGE - 1));
			nlineage--;
		}
		lineage[nlineage].pid = parent;
		lineage[nlineage].nforks = atomic_load_explicit(&nforks, memory_order_relaxed);
		nlineage++;
	}
	atomic_store_explicit(&self_pid, 0, memory_order_relaxed);
	atomic_store_explicit(&nforks, 0, memory_order_relaxed);
}

/* ---- children made and reaped on VP 0 -------------------------------------------------
 * With a VP backend whose VPs are processes (vp_children_on_initial), a
 * child forked on another VP would be that VP process's, which no thread
 * on another VP could wait for.  So fork and the wait calls move the
 * calling thread to VP 0, the initial kernel thread, for the call (a
 * thread with its own VP stays there: docs/vpdep.md). */
bool ppl_initial_enter(struct vproc **old_home)
{
	*old_home = NULL;   /* not moved: nothing to restore */
	if (!vp_children_on_initial() ||
	    atomic_load_explicit(&ppl_rt.started, memory_order_acquire) == 0)
		return false;
	struct vproc *v = (struct vproc *)vp_current();
	struct ult *self = v ? v->current : NULL;
	struct vproc *v0 = ppl_rt.vps[0];
	if (self == NULL || self->bound || self->foreign || v0 == NULL)
		return false;
	*old_home = self->home;
	self->home = v0;
	if (v != v0)
		sched_yield_ult();   /* moves there now */
	return true;
}

void ppl_initial_leave(struct vproc *old_home)
{
	ult_self()->home = old_home;
}

/* posix_spawn, posix_spawnp (the C library's clone with CLONE_VFORK, no
 * fork handlers), popen and pclose (a child made and reaped inside): on
 * VP 0 too, so that the child is the program's and pclose finds it. */
typedef int spawn_fn(pid_t *restrict, const char *restrict, const posix_spawn_file_actions_t *,
		     const posix_spawnattr_t *restrict, char *const[], char *const[]);

int spawn_initial(void *_Atomic *next, const char *name, const char *version, pid_t *restrict pid,
		  const char *restrict path, const posix_spawn_file_actions_t *fa,
		  const posix_spawnattr_t *restrict a, char *const argv[], char *const envp[])
{
	spawn_fn *real = (spawn_fn *)vp_libc_fn(next, name, version);
	struct vproc *home;
	bool moved = ppl_initial_enter(&home);
	int r = real(pid, path, fa, a, argv, envp);
	if (moved)
		ppl_initial_leave(home);
	return r;
}

int ppl_posix_spawn(pid_t *restrict pid, const char *restrict path,
		    const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *restrict a,
		    char *const argv[], char *const envp[])
{
	static void *_Atomic next;
	return spawn_initial(&next, "posix_spawn", "GLIBC_2.15", pid, path, fa, a, argv, envp);
}

int ppl_posix_spawnp(pid_t *restrict pid, const char *restrict file,
		     const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *restrict a,
		     char *const argv[], char *const envp[])
{
	static void *_Atomic next;
	return spawn_initial(&next, "posix_spawnp", "GLIBC_2.15", pid, file, fa, a, argv, envp);
}

typedef FILE *popen_fn(const char *, const char *);
typedef int pclose_fn(FILE *);

FILE *ppl_popen(const char *cmd, const char *mode)
{
	PPL_ON_INITIAL(popen_fn, "popen", cmd, mode);
}

int ppl_pclose(FILE *f)
{
	PPL_ON_INITIAL(pclose_fn, "pclose", f);
}

static bool fork_moved PPL_FORK_STATE; /* the forker moved to VP 0 (fork_parent puts it back) */
static struct vproc *fork_home PPL_FORK_STATE;

static void fork_prepare(void)
{
	/* First, before any lock: a move is a context switch. */
	struct vproc *home;
	fork_moved = ppl_initial_enter(&home);
	fork_home = home;
	held = atomic_load_explicit(&ppl_rt.started, memory_order_acquire) != 0;
	if (!held)
		return;   /* one thread, no VP: nothing to protect */
	spin_lock(&ppl_rt.lock);
	ult_cache_atfork(FORK_PREPARE);
	stack_atfork(FORK_PREPARE);
	tls_atfork(true);
}

static void release(enum fork_phase ph)
{
	tls_atfork(ph == FORK_PREPARE);
	stack_atfork(ph);
	ult_cache_atfork(ph);
	spin_unlock(&ppl_rt.lock);
}

static void fork_parent(void)
{
	atomic_fetch_add_explicit(&nforks, 1, memory_order_relaxed);
	bool moved = fork_moved;
	struct vproc *home = fork_home;
	if (held)
		release(FORK_PARENT);
	if (moved)
		ppl_initial_leave(home);
}

static void fork_child(void)
{
	proc_fork_child();
	trace_fork_child();
	/* A forking thread libppl did not create (the initial one before
	 * start-up, say) has the child's kernel thread now: signals and
	 * scheduling changes for it went to the parent's (sem_post/8-1's
	 * children lowered their parent's priority instead of their own). */
	struct ult *self = ult_self();
	if (self->foreign)
		self->ktid = vp_gettid();
	/* The kernel forgot the robust list: the child's is new and empty. */
	robust_fork_child();
	prio_fork_child();
	/* Timers are not inherited (POSIX), nor is their helper thread. */
	cputimer_fork_child();
	credentials_fork_child();
	if (!held)
		return;
	release(FORK_CHILD);
	parklot_atfork_child();
	ppl_runtime_fork_child();
}

void fork_init(void)
{
	if (glibcabi_atfork(fork_prepare, fork_parent, fork_child) != 0)
		ppl_fatal("cannot register the fork handlers (out of memory)");
}
