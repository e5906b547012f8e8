/* Fatal errors: one line on stderr naming the thread and the cause, then
 * abort.  Also turns a fault in a user thread's stack guard into such a line
 * instead of a bare SIGSEGV, and a fault of vp_copy_in/out into EFAULT. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "scheduler.h"
#include "stack.h"
#include "ult.h"
#include "vproc.h"

static struct ult *current_ult(void)
{
	struct vproc *v = (struct vproc *)vp_current();
	return v ? v->current : NULL;
}

static int describe(char *buf, size_t len, struct ult *t)
{
	if (t == NULL)
		return snprintf(buf, len, "libppl: VP scheduler");
	return snprintf(buf, len, "libppl: thread %lu%s%s%s", t->id, t->name[0] ? " (" : "",
			t->name, t->name[0] ? ")" : "");
}

static _Noreturn void die(const char *buf, int n, size_t len)
{
	if ((size_t)n >= len)
		n = (int)len - 1;
	vp_write(2, buf, (size_t)n);   /* not a cancellation point */
	abort();
}

void ppl_fatal(const char *fmt, ...)
{
	char buf[512];
	struct ult *t = current_ult();
	if (t == NULL && vp_current() == NULL)
		t = ult_self();
	int n = describe(buf, sizeof buf, t);
	n += snprintf(buf + n, sizeof buf - n, ": ");
	va_list ap;
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof buf - n, fmt, ap);
	va_end(ap);
	n += snprintf(buf + n, sizeof buf - n, "\n");
	die(buf, n, sizeof buf);
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	if (vp_uaccess_fixup(uc))
		return;   /* a bad pointer given to libppl: EFAULT */
	struct ult *t = current_ult();
	if (t && stack_guard_contains(&t->stack, si->si_addr)) {
		char buf[256];
		int n = describe(buf, sizeof buf, t);
		n += snprintf(buf + n, sizeof buf - n,
			      ": stack overflow (stack size %zu bytes, guard %zu bytes at %p)\n",
			      t->stack.size, t->stack.guard, t->stack.guard_lo);
		die(buf, n, sizeof buf);
	}
	/* Not ours: let the fault take its default course on return. */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	vp_sigaction(sig, &dfl, NULL);
}

void ppl_overflow_init(void)
{
	struct sigaction old;
	if (vp_sigaction(SIGSEGV, NULL, &old) != 0 || old.sa_handler != SIG_DFL)
		return;   /* the application handles SIGSEGV itself */
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (vp_sigaction(SIGSEGV, &sa, NULL) == 0)
		vp_uaccess_arm(true);
}
