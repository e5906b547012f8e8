/* Helpers for the preload test programs.  Plain C and POSIX: the programs
 * must build against the system <pthread.h> and run natively, so nothing
 * here knows about libppl except through the environment the test sets. */
#ifndef TP_UTIL_H
#define TP_UTIL_H

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Exit status 1 with the place and the failed condition. */
#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
				#cond);                                              \
			exit(1);                                                     \
		}                                                                    \
	} while (0)

/* For functions that return 0 or an errno value (all of pthread_*). */
#define CHECK_OK(call)                                                               \
	do {                                                                         \
		int tp_err_ = (call);                                                \
		if (tp_err_ != 0) {                                                  \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
				strerror(tp_err_));                                  \
			exit(1);                                                     \
		}                                                                    \
	} while (0)

/* Add sig to (SIG_BLOCK) or take it from (SIG_UNBLOCK) the calling
 * thread's signal mask. */
static inline void tp_sigmask_one(int how, int sig)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, sig);
	CHECK_OK(pthread_sigmask(how, &s, NULL));
}

/* fn as sig's handler with sa_flags `flags`, nothing more blocked. */
static inline void tp_set_handler_flags(int sig, void (*fn)(int), int flags)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = fn;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(sig, &sa, NULL) == 0);
}

/* fn as sig's handler: no flags (no SA_RESTART), nothing more blocked. */
static inline void tp_set_handler(int sig, void (*fn)(int))
{
	tp_set_handler_flags(sig, fn, 0);
}

/* Read fd to its end (or an error) into buf, NUL-terminated; the last
 * read's result: 0 at the end, -1 on an error. */
static inline ssize_t tp_read_all(int fd, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n;
	while ((n = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = 0;
	return n;
}

/* Pin the whole process to the first CPU of its affinity mask, as real
 * programs do to make priorities decide (the priority tests).  Returns it. */
static inline int tp_pin_first_cpu(void)
{
	cpu_set_t all, one;
	CHECK(sched_getaffinity(0, sizeof all, &all) == 0);
	int cpu = 0;
	while (!CPU_ISSET(cpu, &all))
		cpu++;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	CHECK(sched_setaffinity(0, sizeof one, &one) == 0);
	return cpu;
}

/* Start fn(arg) with the given policy and priority (explicit scheduling). */
static inline pthread_t tp_spawn_sched(int policy, int prio, void *(*fn)(void *), void *arg)
{
	pthread_attr_t a;
	struct sched_param sp = { .sched_priority = prio };
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED));
	CHECK_OK(pthread_attr_setschedpolicy(&a, policy));
	CHECK_OK(pthread_attr_setschedparam(&a, &sp));
	pthread_t t;
	CHECK_OK(pthread_create(&t, &a, fn, arg));
	CHECK_OK(pthread_attr_destroy(&a));
	return t;
}

static inline long long tp_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The absolute time `ms` milliseconds from now on clock clk. */
static inline struct timespec tp_in_ms(clockid_t clk, long ms)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

/* The lowest address of the calling thread's stack (pthread_getattr_np). */
static inline char *tp_stack_lo(void)
{
	pthread_attr_t a;
	void *lo;
	size_t size;
	CHECK_OK(pthread_getattr_np(pthread_self(), &a));
	CHECK_OK(pthread_attr_getstack(&a, &lo, &size));
	pthread_attr_destroy(&a);
	return (char *)lo;
}

/* The meson test sets PPL_EXPECT_ULT=1 when the program runs on libppl
 * (relinked or preloaded): then its threads must be user-level threads. */
static inline int tp_expect_ult(void)
{
	const char *s = getenv("PPL_EXPECT_ULT");
	return s != NULL && strcmp(s, "1") == 0;
}

/* Kernel threads of this process, from the Threads: line of
 * /proc/self/status; -1 if it cannot be read. */
static inline int tp_kernel_threads(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (f == NULL)
		return -1;
	char line[256];
	int n = -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	fclose(f);
	return n;
}

/* The Threads: line of /proc/PID/status (field "Threads:") and its PPid:
 * line; -1 if it cannot be read. */
static inline int tp_status_field(const char *pid, const char *field)
{
	char path[300], line[256];
	snprintf(path, sizeof path, "/proc/%s/status", pid);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return -1;
	int n = -1;
	size_t len = strlen(field);
	while (fgets(line, sizeof line, f))
		if (strncmp(line, field, len) == 0 && sscanf(line + len, "%d", &n) == 1)
			break;
	fclose(f);
	return n;
}

/* The value of field `name` (e.g. "Uid:") of /proc/.../status file
 * dir/tid/status, tabs and runs of spaces squeezed to one space, into buf;
 * -1 if the task is gone or has no such line. */
static inline int tp_status_text(const char *dir, const char *tid, const char *name, char *buf,
				 size_t len)
{
	char path[600], line[512];
	snprintf(path, sizeof path, "%s/%s/status", dir, tid);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return -1;
	int found = -1;
	while (found < 0 && fgets(line, sizeof line, f)) {
		if (strncmp(line, name, strlen(name)) != 0)
			continue;
		size_t n = 0;
		for (char *p = line + strlen(name); *p && *p != '\n' && n + 1 < len; p++)
			if (!(*p == ' ' || *p == '\t') || (n > 0 && buf[n - 1] != ' '))
				buf[n++] = (*p == '\t') ? ' ' : *p;
		while (n > 0 && buf[n - 1] == ' ')
			n--;
		buf[n] = 0;
		found = 0;
	}
	fclose(f);
	return found;
}

#ifndef __cplusplus   /* C11 atomics: the C tests only */
#include <stdatomic.h>
#include <stdbool.h>

/* The process of the calling kernel thread, as /proc/thread-self names it
 * (a VP process's own with PPL_VP_BACKEND=process, else getpid()). */
static inline long tp_kernel_process(void)
{
	char link[64];
	ssize_t n = readlink("/proc/thread-self", link, sizeof link - 1);
	CHECK(n > 0);
	link[n] = 0;
	return strtol(link, NULL, 10);
}

/* Spin (at most 200 ms: natively, or on one VP, nobody is ever elsewhere)
 * until some thread has seen itself off the initial process (*spread), so
 * that threads started together spread over the VP processes.  True if
 * the caller runs off the initial process. */
static inline bool tp_spread_off_initial(atomic_bool *spread)
{
	long long until = tp_now_ns() + 200000000;
	while (!atomic_load(spread) && tp_now_ns() < until) {
		if (tp_kernel_process() != (long)getpid())
			atomic_store(spread, true);
		for (volatile int k = 0; k < 20000; k++)
			;
	}
	return tp_kernel_process() != (long)getpid();
}
#endif

/* Kernel threads of the whole program: its process getpid() names and the
 * processes it is the parent of (a libppl VP backend may make its kernel
 * threads processes, whose /proc/self is their own: docs/vpdep.md).  Only
 * for a program that makes no child of its own. */
static inline int tp_program_kernel_threads(void)
{
	char self[32];
	snprintf(self, sizeof self, "%d", (int)getpid());
	int n = tp_status_field(self, "Threads:");
	DIR *d = opendir("/proc");
	if (d == NULL || n < 0)
		return -1;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] >= '1' && e->d_name[0] <= '9' &&
		    tp_status_field(e->d_name, "PPid:") == (int)getpid()) {
			int k = tp_status_field(e->d_name, "Threads:");
			n += k > 0 ? k : 0;
		}
	closedir(d);
	return n;
}

/* Most kernel threads a process on libppl may have: one VP per CPU (or
 * PPL_VPS of them), plus a few for the main thread and helpers. */
static inline int tp_ult_kernel_thread_bound(void)
{
	const char *s = getenv("PPL_VPS");
	long vps = s != NULL ? strtol(s, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
	return (int)vps + 4;
}

/* Check the kernel thread count while `alive` threads of the program exist
 * besides main: on libppl it stays small; natively each thread is one. */
static inline void tp_check_kernel_threads(int alive)
{
	int k = tp_kernel_threads();
	CHECK(k > 0);
	if (tp_expect_ult()) {
		if (k > tp_ult_kernel_thread_bound()) {
			fprintf(stderr, "%d threads alive on %d kernel threads: not user-level threads "
					"(at most %d expected)\n",
				alive, k, tp_ult_kernel_thread_bound());
			exit(1);
		}
	} else {
		CHECK(k >= alive + 1);
	}
	printf("%d threads alive, %d kernel threads\n", alive, k);
}

#endif
