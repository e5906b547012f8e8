/* execl, execle and execlp: the C library's call its execve and execvpe
 * inside, past libppl's exports of those names, so they are built here:
 * the arguments gathered into a vector as the C library does, then libppl's
 * execve or execvpe, which exec on VP 0 when the VP backend needs it
 * (../vpindep/exec.c). */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <unistd.h>

#include "../vpindep/vpindep.h"

#define PPL_API __attribute__((visibility("default")))

extern char **environ;

/* How many arguments from arg to the terminating null pointer, counted
 * on a copy of *ap; -1 past INT_MAX (the C library's E2BIG). */
static ptrdiff_t count_args(const char *arg, va_list *ap)
{
	va_list cp;
	va_copy(cp, *ap);
	ptrdiff_t n = 1;
	while (arg != NULL && (arg = va_arg(cp, const char *)) != NULL && n < INT_MAX)
		n++;
	va_end(cp);
	return n < INT_MAX ? n : -1;
}

/* An exec of the vector of arg and *ap: execle's envp follows the null
 * pointer; execlp searches PATH. */
enum kind { L, LE, LP };

static int exec_list(enum kind k, const char *path, const char *arg, va_list *ap)
{
	ptrdiff_t n = count_args(arg, ap);
	if (n < 0) {
		errno = E2BIG;
		return -1;
	}
	char *argv[n + 1];
	argv[0] = (char *)arg;
	for (ptrdiff_t i = 1; i <= n; i++)   /* argv[n]: the null pointer */
		argv[i] = arg != NULL ? va_arg(*ap, char *) : NULL;
	if (k == LE)
		return ppl_execve(path, argv, va_arg(*ap, char *const *));
	if (k == LP)
		return ppl_execvpe(path, argv, environ);
	return ppl_execve(path, argv, environ);
}

#define EXEC_LIST(name, k)                                                             \
	PPL_API int export_##name(const char *path, const char *arg, ...);              \
	int export_##name(const char *path, const char *arg, ...)                       \
	{                                                                               \
		va_list ap;                                                             \
		va_start(ap, arg);                                                      \
		int r = exec_list(k, path, arg, &ap);                                    \
		va_end(ap);                                                             \
		return r;                                                               \
	}                                                                               \
	__asm__(".symver export_" #name ", " #name "@@GLIBC_2.2.5");

EXEC_LIST(execl, L)
EXEC_LIST(execle, LE)
EXEC_LIST(execlp, LP)
