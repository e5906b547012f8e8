/* Blocking system calls: the monitor that hands a blocked VP's work to a
 * spare (monitor.c), announced calls (blocking.c), the deadlock check
 * (deadlock.c). */
#ifndef PPL_MONITOR_H
#define PPL_MONITOR_H

#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>

#include "base.h"
#include "vproc.h"

/* blocking.c: the kernel's sigtimedwait and sigsuspend, announced and
 * cancellation points. */
int sys_sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *ts);
int sys_sigsuspend(const sigset_t *set);
/* ... and of the calls with a temporary signal mask (signal.c does the rest). */
int sys_ppoll(struct pollfd *p, nfds_t n, const struct timespec *ts, const sigset_t *m);
int sys_pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *ts,
		const sigset_t *m);
int sys_epoll_pwait(int fd, struct epoll_event *ev, int n, int ms, const sigset_t *m);

/* ---- blocking system calls (monitor.c, blocking.c, deadlock.c) ------------------- */

/* The calling thread may block its kernel thread in the kernel: a foreign
 * one, or one bound to a VP of its own (PTHREAD_SCOPE_SYSTEM). */
static inline bool owns_kthread(void)
{
	struct vproc *v = (struct vproc *)vp_current();
	return v == NULL || v->bound_to != NULL;
}

/* Shared TLS: the main thread runs only on VP 0's kernel thread, which
 * keeps the process's original TLS block (docs/tls.md), and a spare that
 * stands in for VP 0 while another thread blocks that kernel thread in the
 * kernel cannot run it: a reader blocked in read on VP 0 hung a main
 * thread that was to write to it.  So another thread moves to another VP
 * for its blocking call (with one VP there is none).  sys_enter and
 * cancel_syscall_enter call it first: with per-thread TLS, one test. */
void sys_place_shared(void);
static inline void sys_place(void)
{
	if (ppl_unlikely(!tls_per_thread))
		sys_place_shared();
}
/* Announce a possibly blocking call of the calling thread; returns its VP
 * (NULL when there is nothing to hand off: a foreign or bound thread).
 * Pass the result to sys_leave when the call has returned. */
struct vproc *sys_enter(void);
/* The call returned: take the VP back if the monitor lent it out.  Keeps errno. */
void sys_leave(struct vproc *v);
/* A signal handler switches its thread out of v inside an announced call:
 * v's kernel thread is no longer in it (true if it was).  The thread
 * announces the call again where it resumes (sys_enter), since the
 * handler returns into it there. */
bool sys_mark_drop(struct vproc *v);
/* Start the monitor thread (ppl_runtime_start).  If no kernel thread can be
 * had, libppl runs without: a blocking call then stalls its VP's queue. */
void monitor_start(void);
/* retire.c: ask the monitor to stop (1), end (2) or go on (0); false if
 * there is no monitor.  Its answer: 1 stopped, 2 gone (or none), else 0. */
bool monitor_halt(int h);
int monitor_halt_ack(void);
/* In a forked child: forget the parent's monitor; restarted with the VPs. */
void monitor_fork_child(void);
/* struct vp_monitor's reset in the forked child (vproc_parts). */
void monitor_vp_fork_child(struct vproc *v, struct ult *self);
/* Count a kernel thread libppl made (the deadlock check compares them). */
void monitor_count_kthread(void);
/* sigroute.c: make the signal catcher on the monitor's kernel thread, off
 * the caller's path; false if there is no monitor (make it yourself). */
bool monitor_make_catcher(void);
/* A thread became ready while the monitor may sleep: let it look. */
extern _Atomic int monitor_asleep PPL_HIDDEN;
void monitor_kick(void);
static inline void monitor_note_ready(void)
{
	if (ppl_unlikely(atomic_load_explicit(&monitor_asleep, memory_order_seq_cst)))
		monitor_kick();
}
/* A timer due at `deadline` became its VP's earliest: a sleeping monitor
 * that would look later must look then (the VP's kernel thread may block
 * in a call it does not announce, and nobody would fire the timer). */
void monitor_note_timer(int64_t deadline);
/* A VP goes to sleep with no timer of its own: maybe every thread is stuck. */
void monitor_note_idle(void);
/* Called by v's own kernel thread at a scheduling point while v is lent:
 * the spare standing in for it retires. */
void monitor_reclaim(struct vproc *v);
/* deadlock.c: 0 (off), 1 (warn), 2 (abort), from PPL_DEADLOCK */
extern int ppl_env_deadlock PPL_HIDDEN;

/* Does the process look deadlocked?  *mark counts its progress so far (two
 * looks with equal marks saw nothing run in between). */
bool deadlock_snapshot(unsigned long *mark);
/* Print the deadlock (one line); abort if PPL_DEADLOCK=abort. */
void deadlock_report(void);
int monitor_own_kthreads(void);
unsigned long monitor_handoffs(void);
unsigned long monitor_handoff_fails(void);   /* lends that found no spare */

#endif
