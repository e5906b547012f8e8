/* sigaltstack per user thread, and the handlers that run on it.
 *
 * The kernel keeps one alternate signal stack per kernel thread; a VP's is
 * libppl's own (vp.c: the stack-overflow report runs there), and every
 * thread that runs on the VP would share it.  So a user thread's
 * sigaltstack is recorded in its TCB, and the kernel runs the trampoline
 * of the application's handlers on the interrupted stack (sigaction.c
 * clears SA_ONSTACK); the trampoline then moves to the thread's own
 * alternate stack for an action with SA_ONSTACK, if the thread has one and
 * is not on it already, as the kernel would.  The handler may park, yield
 * or be preempted there and resume on another VP: the move is a context
 * switch of the thread's own, not a kernel thread's.  A kernel thread that
 * is no VP (a foreign thread) keeps its stack in the kernel, and the
 * trampoline moves to that one the same way.
 *
 * Faults (SIGSEGV & co.) go to the kernel as they are (sigaction.c), so
 * their handlers run on the VP's alternate stack, not the thread's. */
#include <signal.h>
#include <stdint.h>
#include <unistd.h>

#include "pthread_impl.h"

#ifndef SS_AUTODISARM
#define SS_AUTODISARM (1U << 31)   /* <linux/signal.h>: kept, not acted on */
#endif

static bool within(const stack_t *s, uintptr_t sp)
{
	uintptr_t lo = (uintptr_t)s->ss_sp;
	return sp > lo && sp <= lo + s->ss_size;
}

static uintptr_t sp_now(void)
{
	return (uintptr_t)__builtin_frame_address(0);
}

/* The user thread running here, or NULL on a kernel thread of its own. */
static struct ult *ult_here(void)
{
	struct vproc *v = (struct vproc *)vp_current();
	return v != NULL ? v->current : NULL;
}

int ppl_sigaltstack(const stack_t *ss, stack_t *old)
{
	struct ult *self = ult_here();
	if (self == NULL) {
		int err = vp_sigaltstack(ss, old);
		if (err) {
			errno = err;
			return -1;
		}
		return 0;
	}
	bool on = self->altstack_on && within(&self->altstack, sp_now());
	stack_t prev = { .ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE };
	if (self->altstack_on) {
		prev = self->altstack;
		prev.ss_flags = (self->altstack.ss_flags & SS_AUTODISARM) | (on ? SS_ONSTACK : 0);
	}
	if (ss != NULL) {
		/* As the kernel checks them: SS_ONSTACK is an old spelling of 0. */
		int mode = (int)((unsigned)ss->ss_flags & ~SS_AUTODISARM);
		if (mode != 0 && mode != SS_ONSTACK && mode != SS_DISABLE) {
			errno = EINVAL;
			return -1;
		}
		if (on) {
			errno = EPERM;
			return -1;
		}
		if (mode == SS_DISABLE) {
			self->altstack_on = false;
		} else {
			if (ss->ss_size < (size_t)sysconf(_SC_MINSIGSTKSZ)) {
				errno = ENOMEM;
				return -1;
			}
			self->altstack = *ss;
			self->altstack.ss_flags = ss->ss_flags & SS_AUTODISARM;
			self->altstack_on = true;
		}
	}
	if (old != NULL)
		*old = prev;
	return 0;
}

void sig_adopt_altstack(struct ult *m)
{
	stack_t cur;
	if (vp_sigaltstack(NULL, &cur) != 0 || (cur.ss_flags & SS_DISABLE))
		return;
	m->altstack = cur;
	m->altstack.ss_flags &= SS_AUTODISARM;
	m->altstack_on = true;
}

struct call {
	void *h;
	int flags, sig;
	siginfo_t *si;
	void *uc;
	struct ctx back, on;
};

static void call(void *h, int flags, int sig, siginfo_t *si, void *uc)
{
	if (flags & SA_SIGINFO)
		((void (*)(int, siginfo_t *, void *))h)(sig, si, uc);
	else
		((void (*)(int))h)(sig);
}

static void on_altstack(void *arg)
{
	struct call *c = arg;
	call(c->h, c->flags, c->sig, c->si, c->uc);
	ctx_switch(&c->on, &c->back);
	__builtin_unreachable();
}

void sig_run_handler(void *h, int flags, int sig, siginfo_t *si, void *uc)
{
	stack_t s = { .ss_flags = SS_DISABLE };
	if (flags & SA_ONSTACK) {
		struct ult *self = ult_here();
		if (self != NULL) {
			if (self->altstack_on)
				s = self->altstack;
		} else if (vp_sigaltstack(NULL, &s) != 0 || (s.ss_flags & (SS_DISABLE | SS_ONSTACK))) {
			s.ss_flags = SS_DISABLE;
		}
	}
	if ((s.ss_flags & SS_DISABLE) || within(&s, sp_now())) {
		call(h, flags, sig, si, uc);
		return;
	}
	struct call c = { .h = h, .flags = flags, .sig = sig, .si = si, .uc = uc };
	ctx_make(&c.on, s.ss_sp, s.ss_size, on_altstack, &c);
	ctx_switch(&c.back, &c.on);
}
