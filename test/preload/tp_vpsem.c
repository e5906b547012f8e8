/* What a program sees of the kernel threads its threads run on, whatever
 * they are (docs/vpdep.md: with PPL_VP_BACKEND=process every VP but the
 * first is a process of its own): getpid and getppid on every thread, a
 * process-directed signal taken once with the program as its sender,
 * exit, _exit, abort and a fatal signal in a thread running on another
 * kernel thread than the initial one ending the whole program with that
 * status, a child forked on one kernel thread waited for on another, the
 * alarm and a resource limit set on one seen on the others, and SIGKILL of the program leaving none of its processes behind.
 *
 * With the argument "creds" (root only, else exit 77), the endings after a
 * credential change the kernel makes per kernel thread (with the process
 * VP backend it clears a VP process's parent-death signal, and may forbid
 * the initial process's helpers to signal it): setuid to nobody through
 * the C library, a raw setresuid and setfsuid on a thread running off the
 * initial kernel thread, then SIGKILL of the program; and glibc's tst-setuid2, a raw setresuid on such
 * a thread, then setresuid on main, which must abort.  None may leave a
 * process behind.
 *
 * Each ending runs in a child of a supervisor that made itself the
 * children's subreaper: every process the child leaves behind becomes the
 * supervisor's, which must find no child at all soon after the child's
 * end.  The supervisor makes no thread (no VP of its own). */

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "tp_util.h"

static pid_t initial_ktid;   /* the kernel thread main starts on */

/* Spin (yielding) until the caller runs on another kernel thread than the
 * initial one, at most 1 s (with one VP it never does). */
static void move_off_initial(void)
{
	long long end = tp_now_ns() + 1000000000LL;
	while (syscall(SYS_gettid) == initial_ktid && tp_now_ns() < end)
		sched_yield();
}

/* ---- ids on every thread ------------------------------------------------------------ */

static pid_t main_pid, main_ppid;
static atomic_int id_bad, id_moved;

static void *ids(void *arg)
{
	(void)arg;
	for (int i = 0; i < 200; i++) {
		if (getpid() != main_pid || getppid() != main_ppid)
			atomic_fetch_add(&id_bad, 1);
		if (syscall(SYS_gettid) != initial_ktid)
			atomic_fetch_add(&id_moved, 1);
		sched_yield();
	}
	return NULL;
}

static void test_ids(void)
{
	main_pid = getpid();
	main_ppid = getppid();
	CHECK(main_pid == (pid_t)syscall(SYS_getpid));
	pthread_t t[8];
	for (int i = 0; i < 8; i++)
		CHECK_OK(pthread_create(&t[i], NULL, ids, NULL));
	for (int i = 0; i < 8; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK(atomic_load(&id_bad) == 0);
	CHECK(getpid() == main_pid && getppid() == main_ppid);
	CHECK(kill(getpid(), 0) == 0);
}

/* ---- a process-directed signal ------------------------------------------------------- */

static atomic_int usr1_count;
static volatile pid_t usr1_pid;
static volatile int usr1_code;

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	usr1_pid = si->si_pid;
	usr1_code = si->si_code;
	atomic_fetch_add(&usr1_count, 1);
}

static void *send_usr1(void *arg)
{
	(void)arg;
	move_off_initial();
	CHECK(kill(getpid(), SIGUSR1) == 0);
	return NULL;
}

static void test_kill(void)
{
	struct sigaction sa = { .sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO };
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, send_usr1, NULL));
	CHECK_OK(pthread_join(t, NULL));
	long long end = tp_now_ns() + 5000000000LL;
	while (atomic_load(&usr1_count) == 0 && tp_now_ns() < end) {
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL);
	}
	CHECK(atomic_load(&usr1_count) == 1);
	CHECK(usr1_pid == getpid());
	CHECK(usr1_code == SI_USER);
	struct timespec wait = { 0, 50000000 };
	nanosleep(&wait, NULL);
	CHECK(atomic_load(&usr1_count) == 1);   /* taken once */
}

/* ---- a child forked on one kernel thread, waited for on another ------------------------ */

static void *fork_off_initial(void *arg)
{
	(void)arg;
	move_off_initial();
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(5);
	return (void *)(intptr_t)pid;
}

static void *wait_off_initial(void *arg)
{
	move_off_initial();
	int st;
	CHECK(waitpid((pid_t)(intptr_t)arg, &st, 0) == (pid_t)(intptr_t)arg);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 6);
	return NULL;
}

static void test_forkwait(void)
{
	/* Forked off the initial kernel thread, reaped by main. */
	pthread_t t;
	void *r;
	CHECK_OK(pthread_create(&t, NULL, fork_off_initial, NULL));
	CHECK_OK(pthread_join(t, &r));
	int st;
	CHECK(waitpid((pid_t)(intptr_t)r, &st, 0) == (pid_t)(intptr_t)r);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 5);
	/* Forked by main, reaped off the initial kernel thread. */
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(6);
	CHECK_OK(pthread_create(&t, NULL, wait_off_initial, (void *)(intptr_t)pid));
	CHECK_OK(pthread_join(t, NULL));
	/* wait() for any child, from a thread, of one forked by another. */
	CHECK_OK(pthread_create(&t, NULL, fork_off_initial, NULL));
	CHECK_OK(pthread_join(t, &r));
	CHECK(wait(&st) == (pid_t)(intptr_t)r);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 5);
	CHECK(wait(&st) == -1 && errno == ECHILD);
}

/* ---- per-process state set on one kernel thread, seen on another ------------------------ */

static struct rlimit nofile;

static void *set_off_initial(void *arg)
{
	(void)arg;
	move_off_initial();
	CHECK(alarm(100) == 0);
	struct rlimit l = { nofile.rlim_cur - 1, nofile.rlim_max };
	CHECK(setrlimit(RLIMIT_NOFILE, &l) == 0);
	return NULL;
}

static void *check_off_initial(void *arg)
{
	(void)arg;
	move_off_initial();
	struct rlimit l;
	CHECK(getrlimit(RLIMIT_NOFILE, &l) == 0);
	CHECK(l.rlim_cur == nofile.rlim_cur - 1);
	struct itimerval it;
	CHECK(getitimer(ITIMER_REAL, &it) == 0);
	CHECK(it.it_value.tv_sec >= 95);
	return NULL;
}

static void test_procwide(void)
{
	unsigned watchdog = alarm(0);
	CHECK(getrlimit(RLIMIT_NOFILE, &nofile) == 0);
	CHECK(nofile.rlim_cur > 16);
	pthread_t t[4];
	CHECK_OK(pthread_create(&t[0], NULL, set_off_initial, NULL));
	CHECK_OK(pthread_join(t[0], NULL));
	for (int i = 0; i < 4; i++)
		CHECK_OK(pthread_create(&t[i], NULL, check_off_initial, NULL));
	for (int i = 0; i < 4; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	struct rlimit l;
	CHECK(getrlimit(RLIMIT_NOFILE, &l) == 0 && l.rlim_cur == nofile.rlim_cur - 1);
	unsigned left = alarm(watchdog);   /* the alarm the thread set: one timer */
	CHECK(left >= 95 && left <= 100);
	CHECK(setrlimit(RLIMIT_NOFILE, &nofile) == 0);
}

/* ---- endings, in a child ----------------------------------------------------------------- */

static const char *ending;
static int ready_fd = -1;
static atomic_int ended, changed;

/* The credential change of ending `what` ("sigkill-..." and "partial"), on
 * the calling kernel thread only but for setuid (the C library's broadcast). */
static void change_creds(const char *what)
{
	if (strcmp(what, "sigkill-setuid") == 0) {
		CHECK(setuid(65534) == 0);
	} else if (strcmp(what, "sigkill-rawuid") == 0 || strcmp(what, "partial") == 0) {
		CHECK(syscall(SYS_setresuid, 2001, 2002, 2003) == 0);
	} else if (strcmp(what, "sigkill-fsuid") == 0) {
		setfsuid(2001);
		CHECK((int)setfsuid((uid_t)-1) == 2001);
	}
}

static void *end_here(void *arg)
{
	(void)arg;
	move_off_initial();
	if (atomic_exchange(&ended, 1))
		for (;;)
			sched_yield();   /* one thread ends it; the others keep the VPs busy */
	if (strcmp(ending, "exit") == 0)
		exit(7);
	if (strcmp(ending, "_exit") == 0)
		_exit(9);
	if (strcmp(ending, "abort") == 0)
		abort();
	if (strcmp(ending, "segv") == 0) {
		int *volatile bad = (int *)(uintptr_t)8;
		*bad = 0;
	}
	change_creds(ending);
	atomic_store(&changed, 1);
	if (strcmp(ending, "partial") == 0)
		for (;;)
			sched_yield();   /* main goes on */
	/* "sigkill...": tell the supervisor, then stay where we are */
	char c = 1;
	CHECK(write(ready_fd, &c, 1) == 1);
	for (;;)
		sched_yield();
}

static _Noreturn void child(void)
{
	struct rlimit none = { 0, 0 };
	setrlimit(RLIMIT_CORE, &none);   /* abort and SIGSEGV: no core file */
	alarm(10);
	pthread_t t;
	for (int i = 0; i < 4; i++)
		CHECK_OK(pthread_create(&t, NULL, end_here, NULL));
	if (strcmp(ending, "partial") == 0) {
		while (!atomic_load(&changed)) {
			struct timespec ms = { 0, 1000000 };
			nanosleep(&ms, NULL);
		}
		/* The threads' credentials differ: glibc aborts. */
		int r = setresuid(1001, 1002, 1003);
		fprintf(stderr, "vpsem: setresuid returned %d, did not abort\n", r);
		_exit(3);
	}
	for (;;)
		pause();
}

/* What a process left behind is: one line on stderr of its status. */
static void describe(const char *pid)
{
	char path[300], line[256], out[512] = "";
	snprintf(path, sizeof path, "/proc/%s/status", pid);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return;
	while (fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, "State:", 6) == 0 || strncmp(line, "Threads:", 8) == 0 ||
		    strncmp(line, "Uid:", 4) == 0) {
			line[strcspn(line, "\n")] = ' ';
			strncat(out, line, sizeof out - strlen(out) - 1);
		}
	fclose(f);
	fprintf(stderr, "vpsem: left behind: %s %s\n", pid, out);
}

/* SIGKILL every child of this process (the subreaper's, left behind), so
 * that a failed run leaves nothing running that holds its output open. */
static void kill_children(void)
{
	DIR *d = opendir("/proc");
	if (d == NULL)
		return;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		char path[300], buf[512];
		snprintf(path, sizeof path, "/proc/%s/stat", de->d_name);
		FILE *f = fopen(path, "r");
		if (f == NULL)
			continue;
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[n] = 0;
		char *e = strrchr(buf, ')');
		int ppid;
		if (e != NULL && sscanf(e + 1, " %*c %d", &ppid) == 1 && ppid == getpid()) {
			describe(de->d_name);
			kill(atoi(de->d_name), SIGKILL);
		}
	}
	closedir(d);
}

/* Run `what` in a child; its wait status.  Then every process it left
 * behind must end (and be reaped here) within 3 s. */
static int run_ending(const char *what)
{
	int p[2];
	CHECK(pipe(p) == 0);
	ending = what;
	ready_fd = p[1];
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		child();
	}
	close(p[1]);
	if (strncmp(what, "sigkill", 7) == 0) {
		char c;
		CHECK(read(p[0], &c, 1) == 1);
		CHECK(kill(pid, SIGKILL) == 0);
	}
	close(p[0]);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	long long end = tp_now_ns() + 3000000000LL;
	for (;;) {
		siginfo_t si;
		memset(&si, 0, sizeof si);
		if (waitid(P_ALL, 0, &si, WEXITED | __WALL | WNOHANG) != 0) {
			CHECK(errno == ECHILD);
			break;   /* nothing left */
		}
		if (si.si_pid == 0) {   /* some still alive */
			if (tp_now_ns() > end) {
				fprintf(stderr, "vpsem: %s left processes behind\n", what);
				kill_children();
				exit(1);
			}
			struct timespec ms = { 0, 10000000 };
			nanosleep(&ms, NULL);
		}
	}
	return st;
}

static void test_endings(void)
{
	CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
	int st = run_ending("exit");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7);
	st = run_ending("_exit");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 9);
	st = run_ending("abort");
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	st = run_ending("segv");
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
	st = run_ending("sigkill");
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

/* The endings after a credential change of one kernel thread (root). */
static void test_creds_endings(void)
{
	CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
	const char *kills[] = { "sigkill-setuid", "sigkill-rawuid", "sigkill-fsuid" };
	for (size_t i = 0; i < sizeof kills / sizeof kills[0]; i++) {
		int st = run_ending(kills[i]);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	}
	int st = run_ending("partial");
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
}

int main(int argc, char **argv)
{
	alarm(60);
	initial_ktid = (pid_t)syscall(SYS_gettid);
	if (argc > 1 && strcmp(argv[1], "creds") == 0) {
		if (geteuid() != 0) {
			puts("vpsem: creds: not root, skipped");
			return 77;
		}
		test_creds_endings();
		puts("vpsem: creds ok");
		return 0;
	}
	/* The endings first: this process must have no thread (no VP) of its
	 * own while it reaps whatever its children leave. */
	test_endings();
	CHECK(prctl(PR_SET_CHILD_SUBREAPER, 0) == 0);
	test_ids();
	test_kill();
	test_forkwait();
	test_procwide();
	puts("vpsem: ok");
	return 0;
}
