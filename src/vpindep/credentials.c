/* setuid, setgid, seteuid, setegid, setreuid, setregid, setresuid,
 * setresgid, setgroups, initgroups: as glibc, the new credentials hold for every
 * kernel thread of the process (VPs, spares, the monitor), not only the
 * caller's, whose kernel thread may run any user thread next.  The
 * broadcast is vp_setxid's (src/vpdep/setxid.c). */
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "fork.h"

/* One broadcast at a time; the others park here instead of blocking
 * their VP in vp_setxid's own lock, which holds kernel threads off. */
static pthread_mutex_t serial = PTHREAD_MUTEX_INITIALIZER;

/* In fork's child only the forker is left: a broadcast of another thread
 * of the parent, and its hold on `serial`, did not come with it. */
void credentials_fork_child(void)
{
	static const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
	if (memcmp(&serial, &fresh, sizeof serial) != 0)   /* a store copies the page */
		serial = fresh;
	vp_setxid_fork_child();
}

static int setxid(const char *name, enum vp_xid op, long a0, long a1, long a2)
{
	pid_t bad_tid;
	int bad_err;
	ppl_pthread_mutex_lock(&serial);
	int err = vp_setxid(op, a0, a1, a2, &bad_tid, &bad_err);
	ppl_pthread_mutex_unlock(&serial);
	/* glibc aborts too when the threads end up with different credentials. */
	if (bad_tid != 0)
		ppl_fatal("%s: %s here but %s on kernel thread %d", name,
			  err ? strerror(err) : "done", bad_err ? strerror(bad_err) : "done",
			  (int)bad_tid);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

int ppl_setuid(uid_t u)
{
	return setxid("setuid", VP_SETUID, (long)u, 0, 0);
}

int ppl_setgid(gid_t g)
{
	return setxid("setgid", VP_SETGID, (long)g, 0, 0);
}

/* glibc: seteuid(-1) and setegid(-1) are EINVAL, then setresuid(-1, e, -1). */
int ppl_seteuid(uid_t u)
{
	if (u == (uid_t)-1) {
		errno = EINVAL;
		return -1;
	}
	return setxid("seteuid", VP_SETRESUID, -1L, (long)u, -1L);
}

int ppl_setegid(gid_t g)
{
	if (g == (gid_t)-1) {
		errno = EINVAL;
		return -1;
	}
	return setxid("setegid", VP_SETRESGID, -1L, (long)g, -1L);
}

int ppl_setreuid(uid_t r, uid_t e)
{
	return setxid("setreuid", VP_SETREUID, (long)r, (long)e, 0);
}

int ppl_setregid(gid_t r, gid_t e)
{
	return setxid("setregid", VP_SETREGID, (long)r, (long)e, 0);
}

int ppl_setresuid(uid_t r, uid_t e, uid_t s)
{
	return setxid("setresuid", VP_SETRESUID, (long)r, (long)e, (long)s);
}

int ppl_setresgid(gid_t r, gid_t e, gid_t s)
{
	return setxid("setresgid", VP_SETRESGID, (long)r, (long)e, (long)s);
}

int ppl_setgroups(size_t n, const gid_t *g)
{
	return setxid("setgroups", VP_SETGROUPS, (long)n, (long)g, 0);
}

/* glibc's initgroups calls its internal setgroups, which would take glibc's
 * own broadcast (design.md, "Credentials"): the same list from
 * getgrouplist, cut to the kernel's limit as glibc does, through libppl's. */
int ppl_initgroups(const char *user, gid_t group)
{
	long max = sysconf(_SC_NGROUPS_MAX);
	int n = 64;
	gid_t *g = NULL;
	for (;;) {
		gid_t *grown = realloc(g, (size_t)n * sizeof *g);
		if (grown == NULL) {
			free(g);
			errno = ENOMEM;
			return -1;
		}
		g = grown;
		int want = n;
		if (getgrouplist(user, group, g, &want) >= 0) {
			n = want;
			break;
		}
		n = want > n ? want : 2 * n;
	}
	if (max > 0 && n > max)
		n = (int)max;
	int r = ppl_setgroups((size_t)n, g);
	free(g);
	return r;
}
