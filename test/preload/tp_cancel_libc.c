/* Cancellation points inside the C library (glibc's tst-cancel-self,
 * -cancelstate, tst-cancel6, 9, 16, 17, tst-minstack-cancel and
 * tst-pthread-raise-blocked-self, in one program): the system call that
 * acts is the C library's own, not one a thread library can interpose
 * (fgets' read, fprintf's write, lockf's fcntl, aio_suspend's futex wait,
 * pause, sigsuspend, msgrcv, open of a FIFO).  A thread blocked there is
 * cancelled while in the kernel and, where it does not block, on its next
 * call; its cleanup handler runs exactly once.  Last, the main thread
 * cancels itself and a write inside fflush acts on it.
 *
 * `tp_cancel_libc NAME` runs one case; `main-self-first` has the main
 * thread cancel itself before any other thread exists. */
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp_util.h"

static atomic_int started, cleaned;
static int pipe_fds[2];     /* nobody writes to it */
static FILE *devnull;       /* unbuffered: every fprintf writes */
static char lock_path[64], fifo_path[64];
static int msq = -1;

static void cleanup(void *arg)
{
	(void)arg;
	atomic_fetch_add(&cleaned, 1);
}

/* ---- the blocking calls -------------------------------------------------------- */

static void do_fgets(void)
{
	FILE *f = fdopen(pipe_fds[0], "r");
	CHECK(f != NULL);
	char buf[16];
	atomic_store(&started, 1);
	(void)fgets(buf, sizeof buf, f);
}

static void do_fprintf(void)
{
	atomic_store(&started, 1);
	for (;;) {
		fprintf(devnull, "%s", "no end\n");
		/* Time outside the C library, where libppl preempts a thread
		 * (on one VP the canceller runs only then). */
		for (volatile int i = 0; i < 20000; i++)
			;
	}
}

static void do_lockf(void)
{
	int fd = open(lock_path, O_RDWR);
	CHECK(fd >= 0);
	atomic_store(&started, 1);
	(void)lockf(fd, F_LOCK, 0);   /* a child holds it */
}

static void do_aio(void)
{
	static char c;
	static struct aiocb cb;
	memset(&cb, 0, sizeof cb);
	cb.aio_fildes = pipe_fds[0];
	cb.aio_buf = &c;
	cb.aio_nbytes = 1;
	CHECK(aio_read(&cb) == 0);
	const struct aiocb *l[1] = { &cb };
	atomic_store(&started, 1);
	(void)aio_suspend(l, 1, NULL);
}

static void do_pause(void)
{
	atomic_store(&started, 1);
	pause();
}

static void do_sigsuspend(void)
{
	sigset_t none;
	sigemptyset(&none);
	atomic_store(&started, 1);
	sigsuspend(&none);
}

static void do_msgrcv(void)
{
	struct {
		long type;
		char text[8];
	} m;
	atomic_store(&started, 1);
	(void)msgrcv(msq, &m, sizeof m.text, 0, 0);
}

static void do_open_fifo(void)
{
	atomic_store(&started, 1);
	(void)open(fifo_path, O_RDONLY);   /* no writer ever opens it */
}

/* pthread_cancel(self), then a write inside stdio acts. */
static void do_self(void)
{
	atomic_store(&started, 1);
	CHECK_OK(pthread_cancel(pthread_self()));
	fprintf(devnull, "Could not cancel self.\n");
}

/* Disabled: the write must not act; enabled again: the next one does. */
static void do_self_state(void)
{
	atomic_store(&started, 1);
	CHECK_OK(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL));
	CHECK_OK(pthread_cancel(pthread_self()));
	fprintf(devnull, "must not act here\n");
	atomic_store(&started, 2);
	CHECK_OK(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL));
	fprintf(devnull, "Could not cancel self.\n");
}

/* pthread_getname_np is no cancellation point (glibc reads the name with
 * its non-cancellable calls); the write after it is. */
static void do_getname(void)
{
	char name[16];
	atomic_store(&started, 1);
	CHECK_OK(pthread_cancel(pthread_self()));
	CHECK_OK(pthread_getname_np(pthread_self(), name, sizeof name));
	atomic_store(&started, 2);
	fprintf(devnull, "Could not cancel self.\n");
}

struct op {
	const char *name;
	void (*fn)(void);
	bool min_stack;     /* run on a PTHREAD_STACK_MIN stack */
	bool self;          /* cancels itself */
};

static const struct op ops[] = {
	{ "fgets", do_fgets, false, false },
	{ "fprintf", do_fprintf, false, false },
	{ "lockf", do_lockf, false, false },
	{ "aio_suspend", do_aio, false, false },
	{ "pause", do_pause, false, false },
	{ "pause-minstack", do_pause, true, false },
	{ "sigsuspend", do_sigsuspend, false, false },
	{ "msgrcv", do_msgrcv, false, false },
	{ "open-fifo", do_open_fifo, false, false },
	{ "self", do_self, false, true },
	{ "self-cancelstate", do_self_state, false, true },
	{ "getname", do_getname, false, true },
};

static void *runner(void *arg)
{
	const struct op *op = arg;
	pthread_cleanup_push(cleanup, NULL);
	op->fn();
	pthread_cleanup_pop(0);
	fprintf(stderr, "%s: returned instead of being cancelled\n", op->name);
	exit(1);
}

static void run(const struct op *op)
{
	atomic_store(&started, 0);
	atomic_store(&cleaned, 0);
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	if (op->min_stack)
		CHECK_OK(pthread_attr_setstacksize(&a, PTHREAD_STACK_MIN));
	pthread_t t;
	CHECK_OK(pthread_create(&t, &a, runner, (void *)op));
	CHECK_OK(pthread_attr_destroy(&a));
	if (!op->self) {
		/* Into the kernel.  Yielding, not sleeping: a timed sleep of a
		 * thread whose VP's kernel thread blocks in an unannounced call
		 * is another matter (docs/cancel.md). */
		while (!atomic_load(&started))
			sched_yield();
		long long until = tp_now_ns() + 30000000;
		while (tp_now_ns() < until)
			sched_yield();
		CHECK_OK(pthread_cancel(t));
	}
	void *res;
	CHECK_OK(pthread_join(t, &res));
	if (res != PTHREAD_CANCELED || atomic_load(&cleaned) != 1) {
		fprintf(stderr, "%s: result %p, cleanup ran %d times\n", op->name, res,
			atomic_load(&cleaned));
		exit(1);
	}
	if (op->fn == do_self_state || op->fn == do_getname)
		CHECK(atomic_load(&started) == 2);
}

/* tst-pthread-raise-blocked-self: raise() of a signal the main thread
 * blocks stays pending for the main thread, even while a helper that
 * does not block it waits in pause(); then the helper is cancelled there. */
static atomic_int usr1_handled;

static void on_usr1(int sig)
{
	(void)sig;
	atomic_store(&usr1_handled, 1);
}

static void *pauser(void *arg)
{
	(void)arg;
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	CHECK(pthread_sigmask(SIG_UNBLOCK, &s, NULL) == 0);
	pthread_cleanup_push(cleanup, NULL);
	atomic_store(&started, 1);
	pause();
	pthread_cleanup_pop(0);
	fprintf(stderr, "raise-blocked-self: the helper's pause returned\n");
	exit(1);
}

static void raise_blocked_self(void)
{
	atomic_store(&started, 0);
	atomic_store(&cleaned, 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	sigset_t s, pending;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	CHECK(pthread_sigmask(SIG_BLOCK, &s, NULL) == 0);
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, pauser, NULL));
	while (!atomic_load(&started))
		sched_yield();
	long long until = tp_now_ns() + 30000000;
	while (tp_now_ns() < until)
		sched_yield();
	CHECK(raise(SIGUSR1) == 0);
	CHECK(sigpending(&pending) == 0 && sigismember(&pending, SIGUSR1));
	CHECK(!atomic_load(&usr1_handled));
	CHECK_OK(pthread_cancel(t));
	void *res;
	CHECK_OK(pthread_join(t, &res));
	if (res != PTHREAD_CANCELED || atomic_load(&cleaned) != 1) {
		fprintf(stderr, "raise-blocked-self: result %p, cleanup ran %d times\n", res,
			atomic_load(&cleaned));
		exit(1);
	}
	CHECK(!atomic_load(&usr1_handled));
	/* Discard it: its delivery on unblocking is signal.c's matter. */
	sa.sa_handler = SIG_IGN;
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	CHECK(pthread_sigmask(SIG_UNBLOCK, &s, NULL) == 0);
}

/* A child holds the lock on lock_path until the pipe it reads closes. */
static pid_t lock_holder(int *release)
{
	int p[2], ready[2];
	CHECK(pipe(p) == 0 && pipe(ready) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(p[1]);
		int fd = open(lock_path, O_RDWR);
		if (fd < 0 || lockf(fd, F_LOCK, 0) != 0)
			_exit(1);
		char c = 1;
		if (write(ready[1], &c, 1) != 1)
			_exit(1);
		while (read(p[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(p[0]);
	close(ready[1]);
	char c;
	CHECK(read(ready[0], &c, 1) == 1);
	close(ready[0]);
	*release = p[1];
	return pid;
}

static void main_self_cleanup(void *arg)
{
	(void)arg;
	unlink(lock_path);
	unlink(fifo_path);
	if (msq >= 0)
		msgctl(msq, IPC_RMID, NULL);
	_exit(0);   /* the main thread was cancelled: success */
}

/* tst-cancel-self: the main thread cancels itself; the write in fprintf
 * acts (first: before any other thread has existed). */
static _Noreturn void main_self(bool first)
{
	pthread_cleanup_push(main_self_cleanup, NULL);
	CHECK_OK(pthread_cancel(pthread_self()));
	fprintf(devnull, "Could not cancel self.\n");
	pthread_cleanup_pop(0);
	fprintf(stderr, "main%s: could not cancel self\n", first ? " (single-threaded)" : "");
	exit(1);
}

int main(int argc, char **argv)
{
	alarm(30);   /* a cancel that does not act hangs */
	devnull = fopen("/dev/null", "w");
	CHECK(devnull != NULL);
	setvbuf(devnull, NULL, _IONBF, 0);
	if (argc >= 2 && strcmp(argv[1], "main-self-first") == 0)
		main_self(true);
	CHECK(pipe(pipe_fds) == 0);
	snprintf(lock_path, sizeof lock_path, "/tmp/tp_cancel_libc.lock.%d", (int)getpid());
	snprintf(fifo_path, sizeof fifo_path, "/tmp/tp_cancel_libc.fifo.%d", (int)getpid());
	int fd = open(lock_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	close(fd);
	unlink(fifo_path);   /* left by a run killed before its end, same pid */
	CHECK(mkfifo(fifo_path, 0600) == 0);
	msq = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
	CHECK(msq >= 0);
	int release;
	pid_t holder = lock_holder(&release);

	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
		if (argc < 2 || strcmp(argv[1], ops[i].name) == 0)
			run(&ops[i]);
	if (argc < 2 || strcmp(argv[1], "raise-blocked-self") == 0)
		raise_blocked_self();

	/* aio still works after a cancelled aio_suspend (its cleanup ran). */
	static char c;
	struct aiocb cb;
	memset(&cb, 0, sizeof cb);
	cb.aio_fildes = pipe_fds[0];
	cb.aio_buf = &c;
	cb.aio_nbytes = 1;
	CHECK(aio_read(&cb) == 0);
	/* Two bytes: the cancelled thread's request is still queued first. */
	CHECK(write(pipe_fds[1], "xy", 2) == 2);
	const struct aiocb *l[1] = { &cb };
	struct timespec ts = { 10, 0 };
	while (aio_error(&cb) == EINPROGRESS)
		CHECK(aio_suspend(l, 1, &ts) == 0 || errno == EINTR);

	close(release);
	int st;
	CHECK(waitpid(holder, &st, 0) == holder && WIFEXITED(st) && WEXITSTATUS(st) == 0);

	if (argc >= 2 && strcmp(argv[1], "main-self") != 0) {
		main_self_cleanup(NULL);
		return 0;
	}
	main_self(false);
}
