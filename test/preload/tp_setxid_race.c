/* setuid and its family while kernel threads come and go, and on kernel
 * threads the thread library did not make itself: after each call, every
 * kernel thread of the program has the new credentials.
 *
 * Threads spread over the kernel threads (libppl: over the VPs, which with
 * PPL_VP_BACKEND=process are processes of their own) each start an
 * aio_read on a pipe nobody writes yet, so that glibc makes its aio helper
 * there with its own pthread_create, and end.  Two churners make and join
 * short threads meanwhile, with pauses that let libppl's VPs retire
 * (PPL_RETIRE_MS, 20 ms by default) and start again.  Main changes the
 * groups, the gids and the effective uid 40 times (setgroups, setresgid,
 * setresuid, with setgid and setegid among them) and checks after each
 * the Uid:, Gid: and Groups: lines of every task of /proc/PID/task, and of
 * the processes PID is the parent of.  Then the pipes get their bytes and
 * every request completes.  Needs root: without it, exit 77 (skipped). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <aio.h>
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tp_util.h"

#define ASKERS 6
#define CHURNERS 2
#define CALLS 40

static int pipes[ASKERS][2];
static struct aiocb cbs[ASKERS];
static char bufs[ASKERS];
static atomic_bool spread, stop;

static void *asker(void *arg)
{
	int i = (int)(long)arg;
	tp_spread_off_initial(&spread);
	memset(&cbs[i], 0, sizeof cbs[i]);
	cbs[i].aio_fildes = pipes[i][0];
	cbs[i].aio_buf = &bufs[i];
	cbs[i].aio_nbytes = 1;
	CHECK(aio_read(&cbs[i]) == 0);
	return NULL;
}

static void *nothing(void *arg)
{
	return arg;
}

/* Short threads in bursts, with pauses of 0 to 30 ms between. */
static void *churner(void *arg)
{
	unsigned seed = (unsigned)(long)arg;
	while (!atomic_load(&stop)) {
		pthread_t t[4];
		for (int i = 0; i < 4; i++)
			CHECK_OK(pthread_create(&t[i], NULL, nothing, NULL));
		for (int i = 0; i < 4; i++)
			CHECK_OK(pthread_join(t[i], NULL));
		struct timespec ts = { 0, (long)(rand_r(&seed) % 31) * 1000000 };
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* The task is ending: gone, or a zombie, within 500 ms.  A thread past
 * its exit is no longer one the broadcast must reach (NPTL skips those
 * too, tid cleared), yet /proc lists it for a while with the old
 * credentials: the native run of this test failed so once. */
static bool ending(const char *taskdir, const char *tid)
{
	for (int i = 0; i < 50; i++) {
		char st[64];
		if (tp_status_text(taskdir, tid, "State:", st, sizeof st) != 0 || st[0] == 'Z' || st[0] == 'X')
			return true;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	return false;
}

/* Every task of taskdir has the wanted lines; how many it has. */
static int check_dir(const char *taskdir, int call, const char *const want[3])
{
	static const char *const names[3] = { "Uid:", "Gid:", "Groups:" };
	DIR *d = opendir(taskdir);
	if (d == NULL)
		return 0;   /* a VP process that ended */
	int tasks = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		for (int i = 0; i < 3; i++) {
			char got[256];
			if (tp_status_text(taskdir, e->d_name, names[i], got, sizeof got) != 0)
				break;
			if (strcmp(got, want[i]) != 0 && !ending(taskdir, e->d_name)) {
				fprintf(stderr, "setxid-race: after call %d, %s/%s has %s \"%s\", want \"%s\"\n",
					call, taskdir, e->d_name, names[i], got, want[i]);
				exit(1);
			}
		}
		tasks++;
	}
	closedir(d);
	return tasks;
}

/* The program's tasks: its process's and those of the processes it is
 * the parent of (a libppl VP backend's; the test makes no other child). */
static void check_all(int call, const char *uid, const char *gid, const char *groups)
{
	const char *const want[3] = { uid, gid, groups };
	char dir[300], ppid[32];
	snprintf(dir, sizeof dir, "/proc/%d/task", (int)getpid());
	int tasks = check_dir(dir, call, want);
	DIR *d = opendir("/proc");
	CHECK(d != NULL);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		if (tp_status_text("/proc", e->d_name, "PPid:", ppid, sizeof ppid) == 0 &&
		    atoi(ppid) == (int)getpid()) {
			snprintf(dir, sizeof dir, "/proc/%s/task", e->d_name);
			tasks += check_dir(dir, call, want);
		}
	}
	closedir(d);
	CHECK(tasks >= 2);
}

int main(void)
{
	if (geteuid() != 0) {
		fprintf(stderr, "setxid-race: needs root (skipped)\n");
		return 77;
	}
	alarm(60);
	for (int i = 0; i < ASKERS; i++)
		CHECK(pipe(pipes[i]) == 0);
	pthread_t a[ASKERS], c[CHURNERS];
	for (int i = 0; i < ASKERS; i++)
		CHECK_OK(pthread_create(&a[i], NULL, asker, (void *)(long)i));
	for (int i = 0; i < ASKERS; i++)
		CHECK_OK(pthread_join(a[i], NULL));
	for (int i = 0; i < CHURNERS; i++)
		CHECK_OK(pthread_create(&c[i], NULL, churner, (void *)(long)(i + 1)));

	for (int k = 0; k < CALLS; k++) {
		gid_t g = (gid_t)(3000 + k), grp[2] = { (gid_t)(4000 + k), (gid_t)(5000 + k) };
		char gline[64], grline[64], uline[64];
		CHECK(setgroups(2, grp) == 0);
		switch (k % 3) {
		case 0:
			CHECK(setresgid(g, g, g) == 0);
			break;
		case 1:
			CHECK(setgid(g) == 0);
			break;
		default:
			CHECK(setresgid(g, g, g) == 0 && setegid(g + 1) == 0);
			break;
		}
		gid_t eg = k % 3 == 2 ? g + 1 : g;
		snprintf(gline, sizeof gline, "%u %u %u %u", g, eg, g, eg);
		snprintf(grline, sizeof grline, "%u %u", grp[0], grp[1]);
		uid_t eu = (uid_t)(6000 + k);
		CHECK(setresuid(0, eu, 0) == 0);
		snprintf(uline, sizeof uline, "0 %u 0 %u", eu, eu);
		check_all(k, uline, gline, grline);
		CHECK(seteuid(0) == 0);   /* root again, for the next gids */
		check_all(k, "0 0 0 0", gline, grline);
		struct timespec ts = { 0, (k % 4) * 10000000L };
		nanosleep(&ts, NULL);
	}

	atomic_store(&stop, true);
	for (int i = 0; i < CHURNERS; i++)
		CHECK_OK(pthread_join(c[i], NULL));
	for (int i = 0; i < ASKERS; i++)
		CHECK(write(pipes[i][1], "x", 1) == 1);
	for (int i = 0; i < ASKERS; i++) {
		const struct aiocb *l[1] = { &cbs[i] };
		struct timespec ts = { 5, 0 };
		while (aio_error(&cbs[i]) == EINPROGRESS) {
			int r = aio_suspend(l, 1, &ts);
			CHECK(r == 0 || errno == EINTR);
		}
		CHECK(aio_error(&cbs[i]) == 0 && aio_return(&cbs[i]) == 1);
	}
	printf("setxid-race: ok\n");
	return 0;
}
