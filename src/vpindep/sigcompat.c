/* The SVID and BSD signal calls the C library builds on its own sigaction,
 * sigprocmask and sigsuspend: sighold, sigrelse, sigignore, sigpause (both
 * kinds), sigblock, sigsetmask, siggetmask, and the other names of
 * signal, raise, sigaction and sigsuspend (ssignal, gsignal, __sigaction,
 * __sigsuspend).  The C library calls its functions inside, which libppl
 * does not see: sigrelse changed only the VP's kernel mask, which the next
 * switch put back, and sigignore left libppl's record of the action (and
 * what it keeps pending) as it was.  So each is built here on libppl's
 * own, with the C library's semantics (glibc's signal/ directory). */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "sig.h"
#include "vpindep.h"

/* BSD's masks: an int, bit n-1 for signal n (glibc's sigset_set_old_mask). */
static void from_old_mask(sigset_t *set, int mask)
{
	sigemptyset(set);
	memcpy(set, &(unsigned long){ (unsigned int)mask }, sizeof(unsigned long));
}

static int to_old_mask(const sigset_t *set)
{
	unsigned long w;
	memcpy(&w, set, sizeof w);
	return (int)(unsigned int)w;
}

static int mask_one(int how, int sig)
{
	sigset_t one;
	sigemptyset(&one);
	if (sigaddset(&one, sig) != 0)
		return -1;   /* EINVAL */
	int err = ppl_pthread_sigmask(how, &one, NULL);
	if (err != 0) {
		errno = err;
		return -1;
	}
	return 0;
}

int ppl_sighold(int sig)
{
	return mask_one(SIG_BLOCK, sig);
}

int ppl_sigrelse(int sig)
{
	return mask_one(SIG_UNBLOCK, sig);
}

int ppl_sigignore(int sig)
{
	struct sigaction a;
	memset(&a, 0, sizeof a);
	a.sa_handler = SIG_IGN;
	sigemptyset(&a.sa_mask);
	return ppl_sigaction(sig, &a, NULL);
}

/* X/Open's (is_sig: the mask without sig) or BSD's (a mask); a
 * cancellation point, as sigsuspend is. */
int ppl___sigpause(int sig_or_mask, int is_sig)
{
	sigset_t set;
	if (is_sig) {
		if (ppl_pthread_sigmask(SIG_BLOCK, NULL, &set) != 0 ||
		    sigdelset(&set, sig_or_mask) != 0)
			return -1;
	} else {
		from_old_mask(&set, sig_or_mask);
	}
	return ppl_sigsuspend(&set);
}

int ppl___xpg_sigpause(int sig)
{
	return ppl___sigpause(sig, 1);
}

/* The C library's default sigpause is BSD's (<signal.h> sends X/Open
 * programs to __xpg_sigpause). */
int ppl_sigpause(int mask)
{
	return ppl___sigpause(mask, 0);
}

static int old_mask_call(int how, int mask)
{
	sigset_t set, old;
	from_old_mask(&set, mask);
	int err = ppl_pthread_sigmask(how, &set, &old);
	if (err != 0) {
		errno = err;
		return -1;
	}
	return to_old_mask(&old);
}

int ppl_sigblock(int mask)
{
	return old_mask_call(SIG_BLOCK, mask);
}

int ppl_sigsetmask(int mask)
{
	return old_mask_call(SIG_SETMASK, mask);
}

int ppl_siggetmask(void)
{
	return old_mask_call(SIG_BLOCK, 0);
}

__sighandler_t ppl_ssignal(int sig, __sighandler_t h)
{
	return ppl_signal(sig, h);
}

int ppl_gsignal(int sig)
{
	return ppl_raise(sig);
}

int ppl___sigaction(int sig, const struct sigaction *a, struct sigaction *old)
{
	return ppl_sigaction(sig, a, old);
}

int ppl___sigsuspend(const sigset_t *set)
{
	return ppl_sigsuspend(set);
}
