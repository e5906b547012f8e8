/* setuid and its family change the credentials of every kernel thread of
 * the process, as glibc guarantees: under libppl that means every VP, the
 * spare kernel threads and the monitor, not only the caller's.  Eight
 * threads wait on a condition variable and one is blocked in read() (so
 * that libppl hands its VP to a spare); main and, in turn, a new thread
 * call initgroups, setgroups, setregid, setresgid, setegid, setgid, setresuid,
 * seteuid, setreuid and setuid, and after each call the Uid:, Gid: and
 * Groups: lines of /proc/self/task/<tid>/status must be the expected ones
 * for every task.  Then setuid(0) fails with EPERM and changes nothing,
 * and seteuid(-1) and setegid(-1) fail with EINVAL.
 * Needs root: without it, exit 77 (skipped). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tp_util.h"

#define WAITERS 8

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int done, ready;
static int pipefd[2];

static void *waiter(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&lock));
	ready++;
	CHECK_OK(pthread_cond_broadcast(&cond));
	while (!done)
		CHECK_OK(pthread_cond_wait(&cond, &lock));
	CHECK_OK(pthread_mutex_unlock(&lock));
	return arg;
}

static void *reader(void *arg)
{
	char c;
	/* Blocked in the kernel until main writes at the end. */
	while (read(pipefd[0], &c, 1) < 0 && errno == EINTR)
		;
	return arg;
}

/* Every task of `dir` (a /proc/PID/task) has the Uid:, Gid: and Groups:
 * lines uid, gid and groups; how many tasks it has. */
static int check_dir(const char *dir, const char *what, const char *uid, const char *gid,
		     const char *groups)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		return 0;   /* gone */
	struct dirent *e;
	int tasks = 0;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		const char *names[3] = { "Uid:", "Gid:", "Groups:" };
		const char *want[3] = { uid, gid, groups };
		for (int i = 0; i < 3; i++) {
			char got[256];
			if (tp_status_text(dir, e->d_name, names[i], got, sizeof got) != 0)
				continue;
			if (strcmp(got, want[i]) != 0) {
				fprintf(stderr, "setxid: after %s, task %s has %s \"%s\", want \"%s\"\n",
					what, e->d_name, names[i], got, want[i]);
				exit(1);
			}
		}
		tasks++;
	}
	closedir(d);
	return tasks;
}

/* The same for every kernel thread of the process getpid() names, and of
 * its children that share its memory (a libppl VP backend may make its
 * kernel threads processes: docs/vpdep.md); the test makes no other
 * child. */
static void check_all(const char *what, const char *uid, const char *gid, const char *groups)
{
	char dir[64];
	snprintf(dir, sizeof dir, "/proc/%d/task", (int)getpid());
	int tasks = check_dir(dir, what, uid, gid, groups);
	DIR *d = opendir("/proc");
	CHECK(d != NULL);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		char ppid[32];
		snprintf(dir, sizeof dir, "/proc/%s/task", e->d_name);
		if (tp_status_text("/proc", e->d_name, "PPid:", ppid, sizeof ppid) == 0 &&
		    atoi(ppid) == (int)getpid())
			tasks += check_dir(dir, what, uid, gid, groups);
	}
	closedir(d);
	CHECK(tasks >= 2);
}

struct call {
	int (*fn)(struct call *);
	long a[3];
	int ret, err;
};

static int cmp_gid(const void *a, const void *b)
{
	gid_t x = *(const gid_t *)a, y = *(const gid_t *)b;
	return x < y ? -1 : x > y;
}

/* The Groups: line initgroups("root", g) must give: getgrouplist's list,
 * sorted as the kernel keeps it. */
static void initgroups_line(gid_t g, char *buf, size_t len)
{
	gid_t list[256];
	int n = 256;
	CHECK(getgrouplist("root", g, list, &n) >= 0);
	qsort(list, (size_t)n, sizeof list[0], cmp_gid);
	size_t used = 0;
	buf[0] = 0;
	for (int i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%u", i ? " " : "", (unsigned)list[i]);
}

static int do_initgroups(struct call *c) { return initgroups("root", (gid_t)c->a[0]); }
static int do_setgroups(struct call *c)
{
	gid_t g[2] = { (gid_t)c->a[0], (gid_t)c->a[1] };
	return setgroups(2, g);
}
static int do_setregid(struct call *c) { return setregid((gid_t)c->a[0], (gid_t)c->a[1]); }
static int do_setresgid(struct call *c) { return setresgid(c->a[0], c->a[1], c->a[2]); }
static int do_setegid(struct call *c) { return setegid((gid_t)c->a[0]); }
static int do_setgid(struct call *c) { return setgid((gid_t)c->a[0]); }
static int do_setresuid(struct call *c) { return setresuid(c->a[0], c->a[1], c->a[2]); }
static int do_seteuid(struct call *c) { return seteuid((uid_t)c->a[0]); }
static int do_setreuid(struct call *c) { return setreuid((uid_t)c->a[0], (uid_t)c->a[1]); }
static int do_setuid(struct call *c) { return setuid((uid_t)c->a[0]); }

static void *call_main(void *p)
{
	struct call *c = p;
	errno = 0;
	c->ret = c->fn(c);
	c->err = errno;
	return NULL;
}

/* fn with a0..a2, from main or from a new thread; returns its errno (0 on success). */
static int call(int (*fn)(struct call *), long a0, long a1, long a2, int in_thread)
{
	struct call c = { fn, { a0, a1, a2 }, 0, 0 };
	if (in_thread) {
		pthread_t t;
		CHECK_OK(pthread_create(&t, NULL, call_main, &c));
		CHECK_OK(pthread_join(t, NULL));
	} else {
		call_main(&c);
	}
	return c.ret == 0 ? 0 : c.err;
}

int main(void)
{
	if (geteuid() != 0) {
		fprintf(stderr, "setxid: needs root (skipped)\n");
		return 77;
	}
	alarm(60);
	CHECK(pipe(pipefd) == 0);
	pthread_t t[WAITERS + 1];
	for (int i = 0; i < WAITERS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, waiter, NULL));
	CHECK_OK(pthread_create(&t[WAITERS], NULL, reader, NULL));
	CHECK_OK(pthread_mutex_lock(&lock));
	while (ready < WAITERS)
		CHECK_OK(pthread_cond_wait(&cond, &lock));
	CHECK_OK(pthread_mutex_unlock(&lock));
	usleep(20000);   /* the reader is in read(), its VP handed over */

	char groups[1024];
	initgroups_line(1010, groups, sizeof groups);
	CHECK(call(do_initgroups, 1010, 0, 0, 1) == 0);
	check_all("initgroups", "0 0 0 0", "0 0 0 0", groups);
	CHECK(call(do_setgroups, 1001, 1002, 0, 0) == 0);
	check_all("setgroups", "0 0 0 0", "0 0 0 0", "1001 1002");
	CHECK(call(do_setregid, 1003, 1004, 0, 1) == 0);
	check_all("setregid", "0 0 0 0", "1003 1004 1004 1004", "1001 1002");
	CHECK(call(do_setresgid, 1005, 1006, 1007, 0) == 0);
	check_all("setresgid", "0 0 0 0", "1005 1006 1007 1006", "1001 1002");
	CHECK(call(do_setegid, 1008, 0, 0, 1) == 0);
	check_all("setegid", "0 0 0 0", "1005 1008 1007 1008", "1001 1002");
	CHECK(call(do_setgid, 1009, 0, 0, 0) == 0);
	check_all("setgid", "0 0 0 0", "1009 1009 1009 1009", "1001 1002");
	CHECK(call(do_setresuid, 0, 2001, 0, 1) == 0);
	check_all("setresuid", "0 2001 0 2001", "1009 1009 1009 1009", "1001 1002");
	CHECK(call(do_seteuid, 0, 0, 0, 0) == 0);
	check_all("seteuid", "0 0 0 0", "1009 1009 1009 1009", "1001 1002");
	CHECK(call(do_setreuid, -1, 2002, 0, 1) == 0);
	check_all("setreuid", "0 2002 2002 2002", "1009 1009 1009 1009", "1001 1002");
	CHECK(call(do_seteuid, 0, 0, 0, 0) == 0);
	check_all("seteuid back", "0 0 2002 0", "1009 1009 1009 1009", "1001 1002");
	CHECK(call(do_setuid, 2003, 0, 0, 1) == 0);
	check_all("setuid", "2003 2003 2003 2003", "1009 1009 1009 1009", "1001 1002");

	/* Errors change nothing anywhere. */
	CHECK(call(do_setuid, 0, 0, 0, 0) == EPERM);
	CHECK(call(do_seteuid, -1, 0, 0, 1) == EINVAL);
	CHECK(call(do_setegid, -1, 0, 0, 0) == EINVAL);
	CHECK(call(do_setgroups, 0, 0, 0, 1) == EPERM);
	check_all("failed calls", "2003 2003 2003 2003", "1009 1009 1009 1009", "1001 1002");

	CHECK_OK(pthread_mutex_lock(&lock));
	done = 1;
	CHECK_OK(pthread_cond_broadcast(&cond));
	CHECK_OK(pthread_mutex_unlock(&lock));
	CHECK(write(pipefd[1], "x", 1) == 1);
	for (int i = 0; i <= WAITERS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	printf("setxid: ok\n");
	return 0;
}
