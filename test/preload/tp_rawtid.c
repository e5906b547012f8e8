/* Raw system calls through syscall() that name a thread by its kernel id,
 * or act on the calling thread, answer for the calling thread as on NPTL
 * (src/preload/syscall.c):
 *
 * - syscall(SYS_gettid) is gettid(), and syscall(SYS_set_tid_address, p)
 *   returns it: stress-ng's pthread stressor nulls the address prctl
 *   reports, sets it back and compares the result with gettid();
 * - tkill and tgkill with 0 find the thread, and tgkill with SIGUSR1 runs
 *   the handler in the thread named;
 * - sched_getscheduler and sched_getparam accept the thread's id, and
 *   sched_getaffinity returns the kernel's byte count;
 * - sched_setaffinity(0, one CPU) pins the calling thread alone, and
 *   setpriority(PRIO_PROCESS, tid) renices it alone (raw getpriority
 *   returns 20 - nice);
 * - clock_gettime(CLOCK_THREAD_CPUTIME_ID) is the calling thread's CPU
 *   time: a new thread's is small although the main thread first burnt
 *   200 ms (on libppl on one VP, the VP's kernel thread's time includes it).
 *
 * Four threads at once, twice, so that on libppl they share VPs. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>

#include "tp_util.h"

#define THREADS 4

static pthread_barrier_t start;
static volatile pthread_t handled_by[THREADS];
static volatile sig_atomic_t handler_slot = -1;
static int pin_cpu = -1;
static int base_nice;

static void on_usr1(int sig)
{
	(void)sig;
	int i = handler_slot;
	if (i >= 0 && i < THREADS)
		handled_by[i] = pthread_self();
}

struct job {
	int index;
	pid_t tid;
	volatile int tid_ready;
	volatile int signalled;
	pthread_t self;
};

static double seconds(struct timespec ts)
{
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
	struct job *j = arg;
	j->self = pthread_self();
	pid_t me = gettid();
	CHECK(syscall(SYS_gettid) == me);
	CHECK(syscall(SYS_getpid) == getpid());

	/* Fresh thread: its own CPU time, not its kernel thread's history. */
	struct timespec cpu;
	CHECK(syscall(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, &cpu) == 0);
	CHECK(seconds(cpu) < 0.1);

	pthread_barrier_wait(&start);

	/* stress-ng's check. */
	unsigned long addr = 0;
	if (prctl(PR_GET_TID_ADDRESS, &addr) == 0 && addr != 0) {
		(void)syscall(SYS_set_tid_address, NULL);
		CHECK(syscall(SYS_set_tid_address, addr) == me);
	}
	CHECK(syscall(SYS_tkill, me, 0) == 0);
	CHECK(syscall(SYS_tgkill, getpid(), me, 0) == 0);
	CHECK(syscall(SYS_sched_getscheduler, me) == SCHED_OTHER);
	struct sched_param sp;
	CHECK(syscall(SYS_sched_getparam, me, &sp) == 0 && sp.sched_priority == 0);
	cpu_set_t set;
	long bytes = syscall(SYS_sched_getaffinity, me, sizeof set, &set);
	CHECK(bytes > 0 && bytes <= (long)sizeof set && bytes % (long)sizeof(long) == 0);

	/* Renice this thread alone, by its id. */
	int want = base_nice + 1 + j->index < 19 ? base_nice + 1 + j->index : 19;
	CHECK(syscall(SYS_setpriority, PRIO_PROCESS, me, want) == 0);
	CHECK(syscall(SYS_getpriority, PRIO_PROCESS, me) == 20 - want);
	errno = 0;
	CHECK(getpriority(PRIO_PROCESS, 0) == want && errno == 0);

	/* Pin this thread alone, on the calling thread's behalf (pid 0). */
	if (pin_cpu >= 0) {
		CPU_ZERO(&set);
		CPU_SET(pin_cpu, &set);
		CHECK(syscall(SYS_sched_setaffinity, 0, sizeof set, &set) == 0);
		cpu_set_t back;
		CHECK(syscall(SYS_sched_getaffinity, 0, sizeof back, &back) > 0);
		CHECK(CPU_COUNT(&back) == 1 && CPU_ISSET(pin_cpu, &back));
	}

	/* Wait for the main thread's tgkill. */
	j->tid = me;
	__atomic_store_n(&j->tid_ready, 1, __ATOMIC_RELEASE);
	for (int n = 0; !__atomic_load_n(&j->signalled, __ATOMIC_ACQUIRE); n++) {
		CHECK(n < 100000);
		struct timespec ms = { 0, 100000 };
		nanosleep(&ms, NULL);
	}
	return NULL;
}

static void round_of_threads(void)
{
	struct job jobs[THREADS];
	pthread_t t[THREADS];
	memset(jobs, 0, sizeof jobs);
	CHECK_OK(pthread_barrier_init(&start, NULL, THREADS));
	for (int i = 0; i < THREADS; i++) {
		jobs[i].index = i;
		handled_by[i] = 0;
		CHECK_OK(pthread_create(&t[i], NULL, worker, &jobs[i]));
	}
	for (int i = 0; i < THREADS; i++) {
		for (int n = 0; !__atomic_load_n(&jobs[i].tid_ready, __ATOMIC_ACQUIRE); n++) {
			CHECK(n < 100000);
			struct timespec ms = { 0, 100000 };
			nanosleep(&ms, NULL);
		}
		handler_slot = i;
		CHECK(syscall(SYS_tgkill, getpid(), jobs[i].tid, SIGUSR1) == 0);
		for (int n = 0; handled_by[i] == 0; n++) {
			CHECK(n < 100000);
			struct timespec ms = { 0, 100000 };
			nanosleep(&ms, NULL);
		}
		CHECK(pthread_equal(handled_by[i], t[i]));
		handler_slot = -1;
		__atomic_store_n(&jobs[i].signalled, 1, __ATOMIC_RELEASE);
	}
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_OK(pthread_barrier_destroy(&start));

	/* The main thread kept its nice value and its CPUs. */
	errno = 0;
	CHECK(getpriority(PRIO_PROCESS, 0) == base_nice && errno == 0);
	CHECK(syscall(SYS_getpriority, PRIO_PROCESS, 0) == 20 - base_nice);
	cpu_set_t set;
	CHECK(syscall(SYS_sched_getaffinity, 0, sizeof set, &set) > 0);
	CHECK(pin_cpu < 0 || CPU_COUNT(&set) >= 2);
}

int main(void)
{
	alarm(60);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);

	errno = 0;
	base_nice = getpriority(PRIO_PROCESS, 0);
	CHECK(errno == 0);
	cpu_set_t set;
	CHECK(sched_getaffinity(0, sizeof set, &set) == 0);
	if (CPU_COUNT(&set) >= 2)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				pin_cpu = c;   /* the last one */

	/* 200 ms of CPU time on the main thread first. */
	struct timespec t0, t;
	CHECK(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0) == 0);
	do
		CHECK(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) == 0);
	while (seconds(t) - seconds(t0) < 0.2);
	CHECK(syscall(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, &t) == 0 && seconds(t) >= 0.2);

	round_of_threads();
	round_of_threads();
	puts("ok");
	return 0;
}
