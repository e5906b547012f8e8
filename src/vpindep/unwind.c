/* Cleanup handlers and unwinding: pthread_exit and cancellation unwind the
 * thread's stack, as glibc does, so that C++ destructors, catch (...)
 * blocks that rethrow, -fexceptions cleanup attributes and the cleanup
 * handlers of both of glibc's C ABIs run, innermost first.
 *
 * Invariants
 *  - The unwind is libgcc's forced unwind (_Unwind_ForcedUnwind, looked up
 *    in libgcc_s with dlopen as glibc does, so libppl does not link it).
 *    Its stop function runs for each frame before that frame's personality
 *    and sees the frame's stack pointer (the CFA of the frame below it).
 *  - Old-style handlers (_pthread_cleanup_push: a list from self->cleanup)
 *    run once the unwind has passed the frame that holds their buffer:
 *    when the frame about to be unwound has its stack pointer at or above
 *    the buffer.
 *  - setjmp-style handlers (__pthread_register_cancel: a list from
 *    self->cleanup_jmp) are jumped to by the same test: the jump lands in
 *    the registering frame, which runs the handler and calls
 *    __pthread_unwind_next, which starts a new unwind at the next buffer.
 *    glibc's header uses them only in C built without exceptions, whose
 *    frames have no personality, so the frame that test lets the unwinder
 *    pass first has nothing to run.
 *  - The last target is the thread's landing point, a jmp_buf in ult_entry,
 *    reached by the same test or at the end of the stack.  The main thread
 *    and foreign kernel threads have none: at the end of their stack the
 *    stop function finishes the thread itself, on the stack it was
 *    unwinding (never reused).
 *  - The exception object lives in the TCB: landing pads run in frames
 *    above the unwinder's own and reuse its stack. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <unwind.h>

#include "base.h"
#include "cancel.h"
#include "scheduler.h"
#include "glibcabi.h"
#include "ult.h"

_Static_assert(sizeof(struct _Unwind_Exception) <= sizeof(((struct ult *)0)->unwind_exc),
	       "room for the exception object");


typedef _Unwind_Reason_Code (*forced_unwind_fn)(struct _Unwind_Exception *, _Unwind_Stop_Fn,
						void *);
typedef _Unwind_Word (*get_cfa_fn)(struct _Unwind_Context *);

static forced_unwind_fn _Atomic forced_unwind;
static get_cfa_fn _Atomic get_cfa;

void unwind_prepare(void)
{
	if (ppl_likely(atomic_load_explicit(&get_cfa, memory_order_acquire) != NULL))
		return;
	/* Racing first callers dlopen the same handle and store the same values.
	 * The C library's dlopen, not libppl's export, then what that does. */
	static void *_Atomic real_dlopen;
	void *h = ((void *(*)(const char *, int))vp_libc_fn(&real_dlopen, "dlopen", NULL))(
		"libgcc_s.so.1", RTLD_NOW);
	if (h)
		tls_after_dlopen();
	void *fu = h ? dlsym(h, "_Unwind_ForcedUnwind") : NULL;
	void *gc = h ? dlsym(h, "_Unwind_GetCFA") : NULL;
	if (fu == NULL || gc == NULL)
		ppl_fatal("libgcc_s.so.1 is needed for thread cancellation and pthread_exit");
	atomic_store_explicit(&forced_unwind, (forced_unwind_fn)fu, memory_order_relaxed);
	atomic_store_explicit(&get_cfa, (get_cfa_fn)gc, memory_order_release);
}

void unwind_set_landing(struct ult *self, void *jmpbuf)
{
	self->landing = jmpbuf;
}

/* A catch (...) that swallowed the unwind instead of rethrowing it. */
static void unwind_cleanup(_Unwind_Reason_Code code, struct _Unwind_Exception *exc)
{
	ppl_fatal("an exception handler caught a thread's unwinding and did not rethrow it");
}

static _Unwind_Reason_Code stop(int version, _Unwind_Action actions, _Unwind_Exception_Class cls,
				struct _Unwind_Exception *exc, struct _Unwind_Context *ctx,
				void *param)
{
	struct ult *self = ult_self();
	struct unwind_buf *buf = param;
	uintptr_t sp = (uintptr_t)atomic_load_explicit(&get_cfa, memory_order_relaxed)(ctx);
	void *target = buf ? (void *)buf : self->landing;
	bool jump = (actions & _UA_END_OF_STACK) || (target && sp >= (uintptr_t)target);

	/* The C library's own entries (tls.h): those this frame leaves or,
	 * jumping, those registered inside the target; all at the end. */
	if (tls_libc_cancel)
		tls_cancel_run_cleanups(jump && buf ? (uintptr_t)buf : sp,
					(actions & _UA_END_OF_STACK) || (jump && !buf));
	struct _pthread_cleanup_buffer *old = buf ? buf->priv.data.cleanup : NULL;
	struct _pthread_cleanup_buffer *cur = self->cleanup;
	while (cur != NULL && cur != old && (jump || sp >= (uintptr_t)cur)) {
		/* Off the list before it runs, as pthread_cleanup_pop does. */
		self->cleanup = cur->__prev;
		cur->__routine(cur->__arg);
		cur = self->cleanup;
	}
	if (!jump)
		return _URC_NO_REASON;
	if (buf) {
		self->cleanup_jmp = buf->priv.data.prev;
		/* Only the jmp_buf and mask flag of a jmp_buf are there: a
		 * sigsetjmp with savemask 0 wrote no more. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
		longjmp((struct __jmp_buf_tag *)buf->cancel_jmp_buf, 1);
#pragma GCC diagnostic pop
	}
	self->cleanup_jmp = NULL;
	if (self->landing)
		longjmp(*(jmp_buf *)self->landing, 1);
	ult_finish(self);
}

static _Noreturn void unwind_from(struct unwind_buf *buf)
{
	struct ult *self = ult_self();
	unwind_prepare();
	struct _Unwind_Exception *exc = (struct _Unwind_Exception *)self->unwind_exc;
	memset(exc, 0, sizeof *exc);
	/* Not an exception any handler can name: class 0, like glibc's. */
	exc->exception_cleanup = unwind_cleanup;
	atomic_load_explicit(&forced_unwind, memory_order_relaxed)(exc, stop, buf);
	ppl_fatal("the unwinder could not unwind a thread's stack");
}

_Noreturn void ult_unwind(void)
{
	unwind_from(ult_self()->cleanup_jmp);
}

void ppl___pthread_unwind_next(__pthread_unwind_buf_t *b)
{
	unwind_from(((struct unwind_buf *)b)->priv.data.prev);
}

/* ---- glibc's setjmp-style handlers (C without exceptions) ------------------------ */

void ppl___pthread_register_cancel(__pthread_unwind_buf_t *b)
{
	struct unwind_buf *buf = (struct unwind_buf *)b;
	struct ult *self = ult_self();
	buf->priv.data.prev = self->cleanup_jmp;
	buf->priv.data.cleanup = self->cleanup;
	self->cleanup_jmp = buf;
}

void ppl___pthread_unregister_cancel(__pthread_unwind_buf_t *b)
{
	ult_self()->cleanup_jmp = ((struct unwind_buf *)b)->priv.data.prev;
}

void ppl___pthread_register_cancel_defer(__pthread_unwind_buf_t *b)
{
	struct unwind_buf *buf = (struct unwind_buf *)b;
	ppl___pthread_register_cancel(b);
	(void)ppl_pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &buf->priv.data.canceltype);
}

void ppl___pthread_unregister_cancel_restore(__pthread_unwind_buf_t *b)
{
	struct unwind_buf *buf = (struct unwind_buf *)b;
	ppl___pthread_unregister_cancel(b);
	(void)ppl_pthread_setcanceltype(buf->priv.data.canceltype, NULL);
}

/* ---- old-style handlers (libppl's header in C, and old binaries) ------------------- */

void ppl__pthread_cleanup_push(struct _pthread_cleanup_buffer *b, void (*routine)(void *),
			       void *arg)
{
	struct ult *self = ult_self();
	b->__routine = routine;
	b->__arg = arg;
	b->__prev = self->cleanup;
	self->cleanup = b;
}

void ppl__pthread_cleanup_pop(struct _pthread_cleanup_buffer *b, int execute)
{
	ult_self()->cleanup = b->__prev;
	if (execute)
		b->__routine(b->__arg);
}

void ppl__pthread_cleanup_push_defer(struct _pthread_cleanup_buffer *b,
				     void (*routine)(void *), void *arg)
{
	ppl__pthread_cleanup_push(b, routine, arg);
	(void)ppl_pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &b->__canceltype);
}

void ppl__pthread_cleanup_pop_restore(struct _pthread_cleanup_buffer *b, int execute)
{
	ult_self()->cleanup = b->__prev;
	if (execute)
		b->__routine(b->__arg);
	(void)ppl_pthread_setcanceltype(b->__canceltype, NULL);
}
