/* tt_noldt PROG [ARGS...]: run PROG (a libppl program) where modify_ldt is
 * refused with EPERM, as container runtimes' seccomp profiles do, with
 * PPL_TLS_SWITCH=ldt and PPL_STATS=1.  libppl must say on stderr that the
 * method is unavailable and why, fall back to the best that works (wrfsbase
 * with FSGSBASE, else arch_prctl; PPL_STATS says which), and PROG must
 * still pass. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp_util.h"

static void deny_modify_ldt(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_modify_ldt, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof f / sizeof f[0], .filter = f };
	CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	CHECK(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0);
}

int main(int argc, char **argv)
{
	alarm(60);
	CHECK(argc >= 2);
	int pfd[2];
	CHECK(pipe(pfd) == 0);
	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0) {
		deny_modify_ldt();
		dup2(pfd[1], 2);
		close(pfd[0]);
		close(pfd[1]);
		setenv("PPL_TLS", "per-thread", 1);
		setenv("PPL_TLS_SWITCH", "ldt", 1);
		setenv("PPL_STATS", "1", 1);
		execv(argv[1], argv + 1);
		_exit(127);
	}
	close(pfd[1]);
	static char out[1 << 16];
	size_t n = 0;
	ssize_t r;
	while (n < sizeof out - 1 && (r = read(pfd[0], out + n, sizeof out - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = '\0';
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	fputs(out, stderr);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	const char *best = (getauxval(AT_HWCAP2) & 2) ? "wrfsbase" : "arch_prctl";
	char want[160];
	snprintf(want, sizeof want,
		 "libppl: TLS switch ldt unavailable (modify_ldt: not permitted); using %s\n", best);
	CHECK(strstr(out, want) != NULL);
	snprintf(want, sizeof want, " tls=per-thread/%s ", best);
	CHECK(strstr(out, want) != NULL);
	return 0;
}
