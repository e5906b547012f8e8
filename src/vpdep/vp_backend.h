/* What a VP backend (vp_<name>.c) shares with vp.c.  vpindep never sees
 * this: it names a backend only by string, through vp_backend_select. */
#ifndef PPL_VP_BACKEND_H
#define PPL_VP_BACKEND_H

#include "config.h"
#include "vpdep.h"

#define VP_HIDDEN __attribute__((visibility("hidden")))

extern const struct vp_backend vp_kthread_backend VP_HIDDEN;
#ifdef PPL_HAVE_CLONE_RAW
extern const struct vp_backend vp_process_backend VP_HIDDEN;
/* A signal the process backend forwarded from the initial process gets its
 * original si_code back (vp_process.c). */
void vp_process_siginfo(siginfo_t *si) VP_HIDDEN;
void vp_process_catcher_started(void) VP_HIDDEN;
#endif

/* The selected backend (the build default if none was). */
const struct vp_backend *vp_backend_ops(void) VP_HIDDEN;

/* First thing a backend's new kernel thread does: becomes vp (vp_current)
 * and switches to vp->altstack for signals.  Needs working TLS. */
void vp_enter(struct vp *vp) VP_HIDDEN;
/* Undo vp_enter on the calling kernel thread and free vp->altstack; the
 * last thing before the kernel thread ends. */
void vp_leave(struct vp *vp) VP_HIDDEN;

#endif
