/* siglongjmp, longjmp, _longjmp and __longjmp_chk (glibc: one function
 * under four names): when sigsetjmp saved the signal mask, the jump gives
 * it back to the user thread, not only to its kernel thread.
 *
 * The C library restores the saved mask with a system call of its own,
 * which libppl does not see: the user thread's mask would stay what it was
 * before the jump, and libppl would install it again at the thread's next
 * resume.  That matters most for a handler left by siglongjmp: while a
 * handler runs, the thread's mask is the handler's (signal.c,
 * sig_handler_begin), and the jump is how it ends.  So the saved mask
 * goes through pthread_sigmask first (which also delivers what it opens,
 * as the kernel does inside the C library's call), then the C library's
 * function jumps, restoring the same mask again on its kernel thread. */
#include <setjmp.h>
#include <signal.h>

#include "../vpindep/vpindep.h"

#define PPL_API __attribute__((visibility("default")))

typedef void (*jump_fn)(struct __jmp_buf_tag *env, int val);

static _Noreturn void jump(void *_Atomic *slot, const char *name, const char *version,
			   struct __jmp_buf_tag *env, int val)
{
	ppl_sig_jump();
	if (env->__mask_was_saved)
		ppl_pthread_sigmask(SIG_SETMASK, &env->__saved_mask, NULL);
	jump_fn fn = (jump_fn)ppl_next_fn(slot, name, version);
	fn(env, val);
	__builtin_unreachable();
}

#define JUMP(name, version)                                                            \
	PPL_API _Noreturn void export_##name(struct __jmp_buf_tag *env, int val);       \
	void export_##name(struct __jmp_buf_tag *env, int val)                          \
	{                                                                               \
		static void *_Atomic real;                                              \
		jump(&real, #name, version, env, val);                                  \
	}                                                                               \
	__asm__(".symver export_" #name ", " #name "@@" version);

JUMP(siglongjmp, "GLIBC_2.2.5")
JUMP(longjmp, "GLIBC_2.2.5")
JUMP(_longjmp, "GLIBC_2.2.5")
JUMP(__longjmp_chk, "GLIBC_2.11")
