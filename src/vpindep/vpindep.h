/* The VP-independent module's interface to the preload layer: one
 * ppl_<name> function for every entry point listed in api.def (inline for
 * the PPL_FN_INLINE ones), plus start-up hooks. */
#ifndef PPL_VPINDEP_H
#define PPL_VPINDEP_H

#define _GNU_SOURCE 1
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/time.h>
#include <sys/times.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>
#include <grp.h>

/* glibc defines it but declares it only for old X/Open programs. */
extern __sighandler_t bsd_signal(int sig, __sighandler_t h) __THROW;
/* glibc's, exported (GLIBC_2.1) but in no header. */
extern int __libc_allocate_rtsig(int high) __THROW;
/* glibc's other names of sigpause, sigaction and sigsuspend, exported
 * (GLIBC_2.2.5) but in no header. */
extern int __sigpause(int sig_or_mask, int is_sig);
extern int __xpg_sigpause(int sig);
extern int __sigaction(int sig, const struct sigaction *a, struct sigaction *o) __THROW;
extern int __sigsuspend(const sigset_t *set);

#define PPL_FN(ret, name, params, args) ret ppl_##name params;
#define PPL_FN_INLINE(ret, name, params, args)
#include "api.def"
#undef PPL_FN_INLINE
#undef PPL_FN
/* The PPL_FN_INLINE entry points. */
#include "mutex_fast.h"

/* Called once from the library constructor: read the environment. */
void ppl_init(void);
/* The C library's next definition of `name` after libppl's (at `version`
 * if not NULL and the C library has it), resolved once into *slot: vpdep's
 * one resolver, vp_libc_fn; a missing one is fatal. */
void *ppl_next_fn(void *_Atomic *slot, const char *name, const char *version);
/* The raw system calls that name a thread (src/preload/syscall.c,
 * threadid.c). */
pid_t ppl_tid_unless_kernel(void);
bool ppl_tid_is_user_thread(pid_t id);
/* The raw set_robust_list and get_robust_list for a user thread
 * (robustlist.c): 0, an errno value, or -1 when the kernel answers (a
 * kernel thread that is not a user thread's, or one of its own). */
int ppl_robust_list_set(void *head, size_t len);
int ppl_robust_list_get(pid_t tid, void **head, size_t *len);
/* The raw rt_sigprocmask (signal.c): 0 or an errno value. */
int ppl_rt_sigprocmask(int how, const void *set, void *old, size_t size);
/* A longjmp or siglongjmp is about to leave the calling thread's code
 * (src/preload/jump.c): the handlers it may leave are forgotten. */
void ppl_sig_jump(void);
/* After a successful dlopen: initialise new static TLS in user threads. */
void ppl_after_dlopen(void);
/* After dlclose: the TLS modules may have changed. */
void ppl_after_dlclose(void);
/* Print PPL_STATS counters, if asked for (called at exit). */
void ppl_stats_report(void);

#endif
