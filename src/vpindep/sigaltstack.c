/* sigaltstack, per user thread, as NPTL's is per thread.
 *
 * The kernel keeps one alternate signal stack per kernel thread, and a VP's
 * kernel thread runs many user threads: one thread's SA_ONSTACK handler
 * would run on whichever stack another thread of that VP installed (main's
 * small one, say).  So each user thread keeps its own (ult.alt, none for a
 * new thread, as on NPTL), and a VP's kernel thread carries the alternate
 * stack of the thread it runs, or the VP's own, the stack-overflow
 * handler's (fatal.c), for a thread that has none:
 *
 *  - installed lazily: a thread that resumes on a VP whose kernel thread
 *    has another stack installs its own (sig_resumed, one system call);
 *    threads that never called sigaltstack find the VP's own there and
 *    switch with no system call at all;
 *  - sigaltstack itself records the thread's stack and installs it on the
 *    kernel thread at once, which checks it as it would on NPTL (EINVAL,
 *    ENOMEM); SS_ONSTACK and EPERM are judged by the thread's stack
 *    pointer against its own alternate stack. */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "pthread_impl.h"

#ifndef SS_AUTODISARM
#define SS_AUTODISARM (1U << 31)   /* <linux/signal.h>: disarmed while a handler runs */
#endif

static bool on_stack(const stack_t *a, const void *sp)
{
	return a->ss_sp != NULL && (const char *)sp >= (const char *)a->ss_sp &&
	       (const char *)sp < (const char *)a->ss_sp + a->ss_size;
}

void sig_alt_init(struct ult *t)
{
	memset(&t->alt, 0, sizeof t->alt);
	t->alt.ss_flags = SS_DISABLE;
}

void sig_alt_adopt(struct ult *m)
{
	stack_t k;
	sig_alt_init(m);
	if (vp_sigaltstack(NULL, &k) == 0 && !(k.ss_flags & SS_DISABLE) && k.ss_sp != NULL) {
		m->alt = k;
		m->alt.ss_flags &= SS_AUTODISARM;
	}
}

void sig_alt_switch(struct ult *self, struct vproc *v)
{
	/* Fails only while the kernel thread runs on the stack installed now
	 * (a handler of self's on the VP's own): tried again at its next resume. */
	vp_altstack_use(&v->vp, self->alt.ss_sp != NULL ? &self->alt : NULL);
}

void sig_alt_leave(struct ult *self, struct vproc *v)
{
	/* Refused (EPERM) while self runs on it, switched out inside a
	 * handler: the next thread to resume here installs its own then. */
	if (vp_altstack_current(&v->vp) == self->alt.ss_sp)
		vp_altstack_use(&v->vp, NULL);
}

int ppl_sigaltstack(const stack_t *ss, stack_t *old)
{
	struct vproc *v = (struct vproc *)vp_current();
	struct ult *self = v ? v->current : NULL;
	if (self == NULL)
		return vp_sigaltstack(ss, old);   /* a foreign kernel thread: the kernel's own */
	stack_t n;
	if (ss != NULL && vp_copy_in(&n, ss, sizeof n) != 0) {
		errno = EFAULT;
		return -1;
	}
	char here;
	bool onit = on_stack(&self->alt, &here);
	stack_t was = self->alt;
	if (was.ss_sp == NULL)
		was.ss_size = 0;
	else if (onit)
		was.ss_flags |= SS_ONSTACK;
	if (ss != NULL) {
		int mode = n.ss_flags & ~SS_AUTODISARM;
		if (mode != 0 && mode != SS_ONSTACK && mode != SS_DISABLE) {
			errno = EINVAL;
			return -1;
		}
		if (onit) {
			errno = EPERM;
			return -1;
		}
		if (mode == SS_DISABLE || n.ss_sp == NULL) {
			if (mode != SS_DISABLE) {
				errno = ENOMEM;   /* the kernel's size check, for NULL and 0 */
				return -1;
			}
			sig_alt_init(self);
			vp_altstack_use(&v->vp, NULL);
		} else {
			n.ss_flags &= SS_AUTODISARM;
			/* The kernel checks it where it will be used. */
			vp_altstack_forget(&v->vp);   /* whatever happens, install anew */
			if (vp_altstack_use(&v->vp, &n) != 0) {
				int err = errno;
				vp_altstack_use(&v->vp, self->alt.ss_sp != NULL ? &self->alt : NULL);
				errno = err;
				return -1;
			}
			self->alt = n;
			vp_kstate_changed();
		}
	}
	if (old != NULL && vp_copy_out(old, &was, sizeof was) != 0) {
		errno = EFAULT;
		return -1;
	}
	return 0;
}
