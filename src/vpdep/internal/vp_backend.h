/* What a VP backend (vp_<name>.c) shares with vp.c.  vpindep never sees
 * this: it names a backend only by string, through vp_backend_select. */
#ifndef PPL_VP_BACKEND_H
#define PPL_VP_BACKEND_H

#include "config.h"
#include "vpdep.h"

#define VP_HIDDEN __attribute__((visibility("hidden")))

extern const struct vp_backend vp_kthread_backend VP_HIDDEN;
extern const struct vp_backend vp_clone_backend VP_HIDDEN;
#ifdef PPL_HAVE_PROCESS_BACKEND
extern const struct vp_backend vp_process_backend VP_HIDDEN;
/* A signal the process backend forwarded from the initial process gets its
 * original si_code back (vp_process.c). */
void vp_process_siginfo(siginfo_t *si) VP_HIDDEN;
void vp_process_catcher_started(void) VP_HIDDEN;
/* The program's process-directed signals not yet taken (vp_process.c). */
uint64_t vp_process_pending(void) VP_HIDDEN;
/* The CPU time (ns) of the VP processes that have ended: the program's. */
void vp_process_retired_ns(int64_t *user, int64_t *sys) VP_HIDDEN;
#endif

/* One thread group: every VP is a kernel thread of this process (tgroup.c). */
int vp_tgroup_kill(pid_t tid, int sig) VP_HIDDEN;
int vp_tgroup_sigqueue(pid_t tid, int sig, siginfo_t *si) VP_HIDDEN;
int vp_tgroup_kill_process(int sig, siginfo_t *si) VP_HIDDEN;
bool vp_tgroup_ours(pid_t pid) VP_HIDDEN;
int vp_tgroup_task_path(pid_t tid, const char *leaf, char *buf, size_t len) VP_HIDDEN;
int vp_tgroup_each_task(void (*fn)(pid_t tgid, pid_t tid, void *arg), void *arg) VP_HIDDEN;
int vp_task_dir_each(pid_t tgid, void (*fn)(pid_t tgid, pid_t tid, void *arg), void *arg) VP_HIDDEN;
pid_t vp_tgroup_pid(void) VP_HIDDEN;
pid_t vp_tgroup_ppid(void) VP_HIDDEN;
int vp_tgroup_each_process(void (*fn)(pid_t pid, void *arg), void *arg) VP_HIDDEN;
int vp_tgroup_in_group(pid_t tid, int (*fn)(void *), void *arg) VP_HIDDEN;
/* Kernel threads in thread group pid (0: the calling one), or -1 (procstat.c). */
int vp_tgroup_kthreads(pid_t pid) VP_HIDDEN;
#define VP_TGROUP_OPS                                                                     \
	.kill = vp_tgroup_kill, .sigqueue = vp_tgroup_sigqueue,                           \
	.kill_process = vp_tgroup_kill_process, .ours = vp_tgroup_ours,                   \
	.task_path = vp_tgroup_task_path, .each_task = vp_tgroup_each_task,               \
	.pid = vp_tgroup_pid, .ppid = vp_tgroup_ppid,                                     \
	.each_process = vp_tgroup_each_process, .in_group = vp_tgroup_in_group

/* Installs libppl's SIGSETXID handler (setxid.c; once, for every thread
 * group sharing the handlers): before anything sends SIGSETXID, whose
 * default action ends a thread group. */
void vp_setxid_install(void) VP_HIDDEN;
/* A helper kernel thread's signal mask, set by itself first thing: only
 * faults and SIGSETXID unblocked (tgroup.c). */
void vp_helper_sigmask(void) VP_HIDDEN;
/* A TLS block and descriptor (glibcabi) for a kernel thread the backend
 * makes itself; NULL with *err ENOSYS (no glibcabi: vpdep's unit tests) or
 * EAGAIN (the C library's layout is unknown, said once on stderr, or no
 * memory). */
void *vp_backend_tls_block(const char *backend, int *err) VP_HIDDEN;

/* The selected backend (the build default if none was). */
const struct vp_backend *vp_backend_ops(void) VP_HIDDEN;

/* First thing a backend's new kernel thread does: becomes vp (vp_current)
 * and switches to vp->altstack for signals.  Needs working TLS. */
void vp_enter(struct vp *vp) VP_HIDDEN;
/* Undo vp_enter on the calling kernel thread and free vp->altstack; the
 * last thing before the kernel thread ends. */
void vp_leave(struct vp *vp) VP_HIDDEN;

#endif
