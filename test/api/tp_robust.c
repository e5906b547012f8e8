/* Robust mutexes and owner death (glibc's tst-robust1..9 semantics):
 *  - private and process-shared, NORMAL, ERRORCHECK and RECURSIVE: an owner
 *    that returns, calls pthread_exit or is cancelled while holding the
 *    mutex makes lock, trylock, timedlock and clocklock say EOWNERDEAD;
 *    pthread_mutex_consistent makes it usable, an unlock without it makes
 *    it ENOTRECOVERABLE for good; a thread blocked in lock is woken by the
 *    death;
 *  - process-shared in a memfd: an owner process killed with SIGKILL (the
 *    kernel's robust list), with a waiter of this process blocked; a
 *    process whose threads lock and unlock many at random killed;
 *  - with another program sharing the mutex: this program again with the
 *    C library's threads (LD_PRELOAD removed, or the native build of a
 *    relinked one), so a libppl process and an NPTL process must agree on
 *    glibc's lock word: the NPTL owner killed, the libppl owner thread
 *    exiting while the NPTL process waits, a libppl owner process killed. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "tp_util.h"

enum { END_RETURN, END_EXIT, END_CANCEL };
enum { ACQ_LOCK, ACQ_TRY, ACQ_TIMED, ACQ_CLOCK };

struct shm {
	pthread_mutex_t m;
	sem_t locked;           /* posted by an owner once it holds m */
	sem_t release;          /* posted to let an owner end */
	volatile int child_waiting;
};

static struct shm *shm;

static void init_mutex(int type, int pshared)
{
	pthread_mutexattr_t a;
	CHECK_OK(pthread_mutexattr_init(&a));
	CHECK_OK(pthread_mutexattr_settype(&a, type));
	CHECK_OK(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST));
	CHECK_OK(pthread_mutexattr_setpshared(&a, pshared));
	CHECK_OK(pthread_mutex_init(&shm->m, &a));
	CHECK_OK(pthread_mutexattr_destroy(&a));
}

static void deadline(struct timespec *ts, clockid_t clk, int sec)
{
	clock_gettime(clk, ts);
	ts->tv_sec += sec;
}

static int acquire(int how)
{
	struct timespec ts;
	switch (how) {
	case ACQ_TRY:
		return pthread_mutex_trylock(&shm->m);
	case ACQ_TIMED:
		deadline(&ts, CLOCK_REALTIME, 20);
		return pthread_mutex_timedlock(&shm->m, &ts);
	case ACQ_CLOCK:
		deadline(&ts, CLOCK_MONOTONIC, 20);
		return pthread_mutex_clocklock(&shm->m, CLOCK_MONOTONIC, &ts);
	default:
		return pthread_mutex_lock(&shm->m);
	}
}

static void *owner(void *arg)
{
	int end = (int)(intptr_t)arg;
	CHECK_OK(pthread_mutex_lock(&shm->m));
	CHECK(sem_post(&shm->locked) == 0);
	/* sem_wait is a cancellation point: END_CANCEL ends it there. */
	while (sem_wait(&shm->release) != 0)
		CHECK(errno == EINTR);
	if (end == END_EXIT)
		pthread_exit(NULL);
	return NULL;
}

/* A thread that takes m and ends, with m held, as `end` says; optionally
 * a waiter already blocked in lock when it ends. */
static pthread_t start_owner(int end)
{
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, owner, (void *)(intptr_t)end));
	while (sem_wait(&shm->locked) != 0)
		CHECK(errno == EINTR);
	return t;
}

static void end_owner(pthread_t t, int end)
{
	if (end == END_CANCEL)
		CHECK_OK(pthread_cancel(t));
	else
		CHECK(sem_post(&shm->release) == 0);
	void *res;
	CHECK_OK(pthread_join(t, &res));
	CHECK(res == (end == END_CANCEL ? PTHREAD_CANCELED : NULL));
}

static void *blocked_locker(void *arg)
{
	return (void *)(intptr_t)acquire((int)(intptr_t)arg);
}

static void check_dead_then(int type, bool make_consistent)
{
	if (make_consistent) {
		CHECK_OK(pthread_mutex_consistent(&shm->m));
		CHECK(pthread_mutex_consistent(&shm->m) == EINVAL);
		CHECK_OK(pthread_mutex_unlock(&shm->m));
		CHECK_OK(pthread_mutex_lock(&shm->m));
		if (type == PTHREAD_MUTEX_ERRORCHECK) {
			CHECK(pthread_mutex_lock(&shm->m) == EDEADLK);
			CHECK(pthread_mutex_trylock(&shm->m) == EDEADLK);   /* glibc's */
		}
		CHECK_OK(pthread_mutex_unlock(&shm->m));
		CHECK(pthread_mutex_unlock(&shm->m) == EPERM);
		CHECK_OK(pthread_mutex_trylock(&shm->m));
		CHECK_OK(pthread_mutex_unlock(&shm->m));
	} else {
		/* Unlocked while inconsistent: not recoverable, for every way in. */
		CHECK_OK(pthread_mutex_unlock(&shm->m));
		CHECK(acquire(ACQ_LOCK) == ENOTRECOVERABLE);
		CHECK(acquire(ACQ_TIMED) == ENOTRECOVERABLE);
		CHECK(acquire(ACQ_CLOCK) == ENOTRECOVERABLE);
		CHECK(pthread_mutex_consistent(&shm->m) == EINVAL);
		CHECK(pthread_mutex_unlock(&shm->m) == EPERM);
		/* Last: glibc 2.36's trylock leaves it locked after saying so. */
		CHECK(acquire(ACQ_TRY) == ENOTRECOVERABLE);
	}
	CHECK_OK(pthread_mutex_destroy(&shm->m));
}

static void in_process(int type, int pshared)
{
	for (int end = END_RETURN; end <= END_CANCEL; end++) {
		for (int how = ACQ_LOCK; how <= ACQ_CLOCK; how++) {
			init_mutex(type, pshared);
			pthread_t t = start_owner(end);
			CHECK(pthread_mutex_trylock(&shm->m) == EBUSY);
			CHECK(pthread_mutex_unlock(&shm->m) == EPERM);
			/* A second thread already blocked when the owner ends. */
			pthread_t w;
			bool waiter = how != ACQ_TRY;
			if (waiter) {
				CHECK_OK(pthread_create(&w, NULL, blocked_locker,
							(void *)(intptr_t)how));
				usleep(20000);
			}
			end_owner(t, end);
			if (waiter) {
				void *r;
				CHECK_OK(pthread_join(w, &r));
				int err = (int)(intptr_t)r;
				if (err != EOWNERDEAD) {
					fprintf(stderr, "type %d pshared %d end %d how %d: "
						"blocked lock returned %d\n", type, pshared, end,
						how, err);
					exit(1);
				}
				/* The waiter ended holding it: its death counts again. */
				CHECK(pthread_mutex_trylock(&shm->m) == EOWNERDEAD);
			} else {
				CHECK(acquire(how) == EOWNERDEAD);
			}
			if (type == PTHREAD_MUTEX_RECURSIVE) {
				CHECK_OK(pthread_mutex_lock(&shm->m));
				CHECK(pthread_mutex_unlock(&shm->m) == ENOTRECOVERABLE);
			}
			check_dead_then(type, (end + how) % 2 == 0);
		}
	}
}

/* tst-robust7: waiters blocked on a dead owner's mutex each get it in
 * turn with EOWNERDEAD and die holding it. */
#define CHAIN 8
static int chain_dead;

/* Give blocked threads time to block without sleeping: a sleeper's timer
 * on a VP whose kernel thread waits in the kernel as a process-shared
 * leader could be served late (left to the scheduler's owners). */
static void settle(void)
{
	long long until = tp_now_ns() + 20000000;
	while (tp_now_ns() < until)
		sched_yield();
}

static void *chain_waiter(void *arg)
{
	(void)arg;
	int err = pthread_mutex_lock(&shm->m);
	if (err == EOWNERDEAD)
		chain_dead++;   /* under the mutex */
	return (void *)(intptr_t)err;
}

static void chain(int pshared)
{
	init_mutex(PTHREAD_MUTEX_NORMAL, pshared);
	chain_dead = 0;
	pthread_t t = start_owner(END_EXIT), w[CHAIN];
	for (int i = 0; i < CHAIN; i++)
		CHECK_OK(pthread_create(&w[i], NULL, chain_waiter, NULL));
	settle();
	end_owner(t, END_EXIT);
	for (int i = 0; i < CHAIN; i++) {
		void *r;
		CHECK_OK(pthread_join(w[i], &r));
		CHECK((int)(intptr_t)r == EOWNERDEAD);
	}
	CHECK(chain_dead == CHAIN);
	CHECK(pthread_mutex_lock(&shm->m) == EOWNERDEAD);
	check_dead_then(PTHREAD_MUTEX_NORMAL, pshared == PTHREAD_PROCESS_SHARED);
}

/* tst-robust8: a process whose threads trylock, timedlock (with a past
 * deadline) and unlock many robust mutexes at random is killed; each
 * mutex is then free or reports its owner's death. */
#define MANY 64
#define BUSY 9
static pthread_mutex_t *many;
static int wait_status(pid_t pid);

static void *busy(void *arg)
{
	unsigned seed = (unsigned)(intptr_t)arg;
	int how = 1 + (int)(intptr_t)arg % 2;
	char held[MANY] = { 0 };
	const struct timespec past = { 0, 0 };
	for (;;) {
		int r = (int)(rand_r(&seed) % MANY), err;
		if (held[r]) {
			CHECK_OK(pthread_mutex_unlock(&many[r]));
			held[r] = 0;
			continue;
		}
		/* Never blocking: on one VP, threads that block in lock while
		 * others compute starve the killer (left to the scheduler). */
		err = how == 1 ? pthread_mutex_timedlock(&many[r], &past)
			       : pthread_mutex_trylock(&many[r]);
		if (err == EOWNERDEAD)
			CHECK_OK(pthread_mutex_consistent(&many[r]));
		else
			CHECK(err == 0 || err == EBUSY || err == ETIMEDOUT);
		held[r] = err == 0 || err == EOWNERDEAD;
	}
	return NULL;
}

static void killed_busy(void)
{
	many = mmap(NULL, MANY * sizeof *many, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(many != MAP_FAILED);
	pthread_mutexattr_t a;
	CHECK_OK(pthread_mutexattr_init(&a));
	CHECK_OK(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST));
	CHECK_OK(pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED));
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < MANY; i++)
			CHECK_OK(pthread_mutex_init(&many[i], &a));
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			alarm(20);
			for (int i = 1; i <= BUSY; i++) {
				pthread_t t;
				CHECK_OK(pthread_create(&t, NULL, busy, (void *)(intptr_t)i));
			}
			long long until = tp_now_ns() + 200000000;
			while (tp_now_ns() < until)
				sched_yield();   /* not a sleep: see settle() */
			kill(getpid(), SIGKILL);
			_exit(1);
		}
		int st = wait_status(pid);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
		int dead = 0;
		for (int i = 0; i < MANY; i++) {
			int err = pthread_mutex_lock(&many[i]);
			CHECK(err == 0 || err == EOWNERDEAD);
			dead += err == EOWNERDEAD;
		}
		CHECK(dead > 0);
		for (int i = 0; i < MANY; i++)
			CHECK_OK(pthread_mutex_unlock(&many[i]));
		for (int i = 0; i < MANY; i++)
			CHECK_OK(pthread_mutex_destroy(&many[i]));
	}
	CHECK_OK(pthread_mutexattr_destroy(&a));
	CHECK(munmap(many, MANY * sizeof *many) == 0);
}

/* ---- between processes ------------------------------------------------------- */

static char exe[4096];
static char other[4096];   /* the same program on the C library's threads */

static void find_programs(void)
{
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	CHECK(n > 0);
	exe[n] = 0;
	strcpy(other, exe);
	size_t len = strlen(other);
	if (len > 4 && strcmp(other + len - 4, "-ppl") == 0)
		other[len - 4] = 0;   /* relinked: its native build */
}

static pid_t run_other(int fd, const char *what)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		unsetenv("LD_PRELOAD");
		char fds[16];
		snprintf(fds, sizeof fds, "%d", fd);
		execl(other, other, "child", fds, what, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static int wait_status(pid_t pid)
{
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	return st;
}

static void *robust_owner_thread(void *arg)
{
	(void)arg;
	CHECK_OK(pthread_mutex_lock(&shm->m));
	CHECK(sem_post(&shm->locked) == 0);
	for (;;)
		sleep(1);
	return NULL;
}

static void between_processes(int fd, int type)
{
	/* 1. A forked owner (a thread of it, not its initial one) killed with
	 * SIGKILL while a thread here waits in lock. */
	init_mutex(type, PTHREAD_PROCESS_SHARED);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		pthread_t t;
		CHECK_OK(pthread_create(&t, NULL, robust_owner_thread, NULL));
		for (;;)
			sleep(1);
	}
	while (sem_wait(&shm->locked) != 0)
		CHECK(errno == EINTR);
	pthread_t w;
	CHECK_OK(pthread_create(&w, NULL, blocked_locker, (void *)(intptr_t)ACQ_TIMED));
	usleep(20000);
	CHECK(kill(pid, SIGKILL) == 0);
	CHECK(WIFSIGNALED(wait_status(pid)));
	void *r;
	CHECK_OK(pthread_join(w, &r));
	CHECK((int)(intptr_t)r == EOWNERDEAD);
	CHECK(pthread_mutex_trylock(&shm->m) == EOWNERDEAD);
	check_dead_then(type, true);

	/* 2. The other program's owner killed: EOWNERDEAD here. */
	init_mutex(type, PTHREAD_PROCESS_SHARED);
	pid = run_other(fd, "own");
	while (sem_wait(&shm->locked) != 0)
		CHECK(errno == EINTR);
	CHECK(pthread_mutex_trylock(&shm->m) == EBUSY);
	CHECK(pthread_mutex_unlock(&shm->m) == EPERM);
	CHECK(kill(pid, SIGKILL) == 0);
	CHECK(WIFSIGNALED(wait_status(pid)));
	CHECK(acquire(ACQ_LOCK) == EOWNERDEAD);
	check_dead_then(type, true);

	/* 3. An owner thread here exits while the other program waits. */
	init_mutex(type, PTHREAD_PROCESS_SHARED);
	shm->child_waiting = 0;
	pthread_t t = start_owner(END_EXIT);
	pid = run_other(fd, "wait");
	while (!shm->child_waiting)
		usleep(1000);
	usleep(50000);   /* let it block in lock */
	end_owner(t, END_EXIT);
	int st = wait_status(pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_OK(pthread_mutex_lock(&shm->m));   /* made consistent there */
	CHECK_OK(pthread_mutex_unlock(&shm->m));
	CHECK_OK(pthread_mutex_destroy(&shm->m));

	/* 4. An owner process of this program killed, the other program sees it. */
	init_mutex(type, PTHREAD_PROCESS_SHARED);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		pthread_t t2;
		CHECK_OK(pthread_create(&t2, NULL, robust_owner_thread, NULL));
		for (;;)
			sleep(1);
	}
	while (sem_wait(&shm->locked) != 0)
		CHECK(errno == EINTR);
	CHECK(kill(pid, SIGKILL) == 0);
	CHECK(WIFSIGNALED(wait_status(pid)));
	pid = run_other(fd, "dead");
	st = wait_status(pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_OK(pthread_mutex_lock(&shm->m));
	CHECK_OK(pthread_mutex_unlock(&shm->m));
	CHECK_OK(pthread_mutex_destroy(&shm->m));
}

static struct shm *map(int fd)
{
	void *p = mmap(NULL, sizeof(struct shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(p != MAP_FAILED);
	return p;
}

static int child(int fd, const char *what)
{
	alarm(30);
	shm = map(fd);
	if (strcmp(what, "own") == 0) {
		pthread_t t;
		CHECK_OK(pthread_create(&t, NULL, robust_owner_thread, NULL));
		for (;;)
			sleep(1);
	}
	if (strcmp(what, "wait") == 0) {
		CHECK(pthread_mutex_trylock(&shm->m) == EBUSY);
		shm->child_waiting = 1;
		CHECK(acquire(ACQ_TIMED) == EOWNERDEAD);
	} else {
		CHECK(acquire(ACQ_LOCK) == EOWNERDEAD);
	}
	CHECK_OK(pthread_mutex_consistent(&shm->m));
	CHECK_OK(pthread_mutex_unlock(&shm->m));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "child") == 0)
		return child(atoi(argv[2]), argv[3]);
	alarm(110);
	find_programs();
	int fd = memfd_create("tp_robust", 0);
	CHECK(fd >= 0);
	CHECK(ftruncate(fd, sizeof(struct shm)) == 0);
	shm = map(fd);
	CHECK(sem_init(&shm->locked, 1, 0) == 0);
	CHECK(sem_init(&shm->release, 1, 0) == 0);

	static const int types[] = { PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_ERRORCHECK,
				     PTHREAD_MUTEX_RECURSIVE };
	for (int i = 0; i < 3; i++) {
		in_process(types[i], PTHREAD_PROCESS_PRIVATE);
		in_process(types[i], PTHREAD_PROCESS_SHARED);
		between_processes(fd, types[i]);
	}
	chain(PTHREAD_PROCESS_PRIVATE);
	chain(PTHREAD_PROCESS_SHARED);
	killed_busy();
	puts("ok");
	return 0;
}
