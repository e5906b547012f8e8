/* The exec family and system(), on VP 0 when the VP backend needs it.
 *
 * With the process backend every VP but the first is a process of its
 * own (docs/vpdep.md).  An exec made there would replace that VP process
 * alone, under its own pid, and leave the program running in the others;
 * on NPTL an exec from any thread replaces the whole process and keeps
 * its pid (glibc's tst-exec3: the shell's $$ must be the child's pid, and
 * the pipe must close).  So the calling thread moves to VP 0, the initial
 * process, first (ppl_initial_enter, as fork and posix_spawn do); the exec
 * ends the manager thread there, whose death signal ends the VP processes.
 * If the exec fails, the thread returns on VP 0 and goes home.  system()
 * spawns and waits for its child inside the C library, which must both
 * happen in the process that is the child's parent: on VP 0 too.
 *
 * The C library's execl, execle and execlp call its execve and execvpe
 * without going through these names: preload/exec.c builds their argument
 * vectors and calls ppl_execve and ppl_execvpe. */
#include <stdlib.h>
#include <unistd.h>

#include "fork.h"
#include "vpindep.h"

extern char **environ;

typedef int execve_fn(const char *, char *const[], char *const[]);
typedef int execv_fn(const char *, char *const[]);
typedef int fexecve_fn(int, char *const[], char *const[]);
typedef int execveat_fn(int, const char *, char *const[], char *const[], int);
typedef int system_fn(const char *);

int ppl_execve(const char *path, char *const argv[], char *const envp[])
{
	PPL_ON_INITIAL(execve_fn, "execve", path, argv, envp);
}

int ppl_execv(const char *path, char *const argv[])
{
	PPL_ON_INITIAL(execve_fn, "execve", path, argv, environ);
}

int ppl_execvpe(const char *file, char *const argv[], char *const envp[])
{
	PPL_ON_INITIAL(execve_fn, "execvpe", file, argv, envp);
}

int ppl_execvp(const char *file, char *const argv[])
{
	PPL_ON_INITIAL(execv_fn, "execvp", file, argv);
}

int ppl_fexecve(int fd, char *const argv[], char *const envp[])
{
	PPL_ON_INITIAL(fexecve_fn, "fexecve", fd, argv, envp);
}

int ppl_execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	PPL_ON_INITIAL(execveat_fn, "execveat", dirfd, path, argv, envp, flags);
}

int ppl_system(const char *cmd)
{
	PPL_ON_INITIAL(system_fn, "system", cmd);
}
