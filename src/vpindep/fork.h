/* fork (fork.c, init.c). */
#ifndef PPL_FORK_H
#define PPL_FORK_H

#include "base.h"

/* ---- fork (fork.c, init.c) ---------------------------------------------------------
 * Each module whose locks guard state the child keeps takes them in
 * FORK_PREPARE and releases them in FORK_PARENT and FORK_CHILD (the forking
 * thread holds them, so the child never inherits them locked). */

enum fork_phase { FORK_PREPARE, FORK_PARENT, FORK_CHILD };

/* Register libppl's fork handlers (ppl_init, before the program registers any). */
void fork_init(void);
/* fork and the wait calls on VP 0 when the VP backend needs it
 * (vp_children_on_initial): true if the caller moved, its old home in
 * *old_home for ppl_initial_leave. */
struct vproc;
bool ppl_initial_enter(struct vproc **old_home) PPL_HIDDEN;
void ppl_initial_leave(struct vproc *old_home) PPL_HIDDEN;
/* In a function's body: return the C library's `name` (of type fn_type,
 * its default version) called with the arguments on VP 0, as above. */
#define PPL_ON_INITIAL(fn_type, name, ...)                                        \
	do {                                                                      \
		static void *_Atomic next;                                        \
		fn_type *real = (fn_type *)vp_libc_fn(&next, name, NULL);        \
		struct vproc *home;                                               \
		bool moved = ppl_initial_enter(&home);                            \
		__typeof__(real(__VA_ARGS__)) r = real(__VA_ARGS__);              \
		if (moved)                                                        \
			ppl_initial_leave(home);                                  \
		return r;                                                         \
	} while (0)
void ult_cache_atfork(enum fork_phase ph);   /* thread.c: the TCB cache */
void stack_atfork(enum fork_phase ph);       /* stack.c: the stack arenas */
/* In the child, after the locks are released: the forking thread becomes
 * the only thread, on the only VP; the other VPs restart lazily. */
void ppl_runtime_fork_child(void);
/* In the child: setuid's family, which another thread may have been in (credentials.c). */
void credentials_fork_child(void);

/* Which process's threads a queue in user memory holds (fork.c).  A
 * private object placed in memory that another process shares (undefined
 * behaviour, but the Open POSIX suite does it) may have that process's
 * threads on its queue: their TCB pointers mean nothing here.  A stamp is
 * the pushing process's pid and how many forks it had made by then, so a
 * forked child can tell its ancestors' waiters that came with its copy of
 * the memory (PROC_COPY: readable, waitq_prune drops them) from ones they
 * pushed later into memory it shares with them (PROC_FOREIGN). */
enum proc_rel { PROC_SELF, PROC_COPY, PROC_FOREIGN };
uint64_t proc_stamp(void);
enum proc_rel proc_relation(uint64_t stamp);

/* The C library's posix_spawn or posix_spawnp of that version (name,
 * version; *next caches it) on VP 0 (fork.c; compat.c has the old ones). */
#include <spawn.h>
int spawn_initial(void *_Atomic *next, const char *name, const char *version, pid_t *restrict pid,
		  const char *restrict path, const posix_spawn_file_actions_t *fa,
		  const posix_spawnattr_t *restrict a, char *const argv[], char *const envp[]);

#endif
