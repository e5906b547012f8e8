/* vfork (preload/arch/<cpu>/vfork.S makes the system call): the calling
 * user thread's part before and after it.
 *
 * The child shares the caller's memory, stack and TLS until it execs or
 * exits; its signal actions, mask and ids are its own in the kernel.  So
 * in the child the caller's kernel thread is no VP (vp_vfork_hide): the
 * signal wrappers then act on the child's kernel state, as for a kernel
 * thread libppl did not make, instead of the parent's user-level mask and
 * actions, and its TCB is the caller's (pthread_self is the parent's, as
 * in glibc), never a new foreign one in the parent's pool.  Meanwhile the
 * parent's kernel thread waits in the kernel: the call is announced like
 * a blocking one, so that the monitor lends the VP's other threads to a
 * spare.  With the process VP backend a child must be the initial
 * process's (ppl_initial_enter), as fork's is.
 *
 * What the two hooks share lives in the caller's TLS, which the child
 * only reads. */
#include <errno.h>

#include "base.h"
#include "fork.h"
#include "monitor.h"
#include "scheduler.h"
#include "thread.h"
#include "vproc.h"

struct vfork_call {
	struct vproc *announced;   /* sys_enter's VP, for sys_leave */
	struct vproc *old_home;    /* ppl_initial_enter's, if moved */
	bool moved;
	struct vp *vp;             /* the hidden VP */
	struct ult *foreign;       /* the kernel thread's foreign TCB before */
};

static __thread struct vfork_call call __attribute__((tls_model("initial-exec")));

void ppl_vfork_enter(void) PPL_HIDDEN;
long ppl_vfork_leave(long rc) PPL_HIDDEN;

void ppl_vfork_enter(void)
{
	struct vproc *old_home = NULL;
	bool moved = ppl_initial_enter(&old_home);
	/* Written after the move: with shared TLS the block is the VP's. */
	call.moved = moved;
	call.old_home = old_home;
	struct ult *self = ult_self();
	call.announced = sys_enter();
	call.foreign = ult_foreign_swap(self);
	call.vp = vp_vfork_hide();
}

/* rc: the system call's result, the child's id or -errno (never 0). */
long ppl_vfork_leave(long rc)
{
	vp_vfork_show(call.vp);
	ult_foreign_swap(call.foreign);
	sys_leave(call.announced);
	if (call.moved)
		ppl_initial_leave(call.old_home);
	if (rc < 0) {
		errno = (int)-rc;
		return -1;
	}
	return rc;
}
