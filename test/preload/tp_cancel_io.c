/* Deferred cancellation of threads blocked in the C library's cancellation
 * points: read on an empty pipe, sem_wait, sem_timedwait, poll, accept and
 * recv on a loopback socket.  Each blocked thread has a cleanup handler
 * that must run; the cancel comes both while the thread is in the kernel
 * (or parked) and before it gets there.  A cancelled sem_wait must leave
 * the semaphore as it was: a later post is taken by another waiter. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tp_util.h"

enum op { OP_READ, OP_SEM, OP_SEMTIMED, OP_POLL, OP_ACCEPT, OP_RECV, OP_N };
static const char *const op_name[OP_N] = {"read", "sem_wait", "sem_timedwait", "poll",
					  "accept", "recv"};

static atomic_int started, cleaned;
static int fds[2];          /* a pipe nobody writes to */
static int listener;        /* a listening socket nobody connects to */
static int conn[2];         /* a connected pair nobody sends on */
static sem_t sem;

static void cleanup(void *arg)
{
	(void)arg;
	atomic_store(&cleaned, 1);
}

static void *blocker(void *arg)
{
	enum op op = (enum op)(intptr_t)arg;
	char c;
	pthread_cleanup_push(cleanup, NULL);
	atomic_store(&started, 1);
	switch (op) {
	case OP_READ:
		(void)read(fds[0], &c, 1);
		break;
	case OP_SEM:
		(void)sem_wait(&sem);
		break;
	case OP_SEMTIMED: {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 60;
		(void)sem_timedwait(&sem, &ts);
		break;
	}
	case OP_POLL: {
		struct pollfd p = {.fd = fds[0], .events = POLLIN};
		(void)poll(&p, 1, -1);
		break;
	}
	case OP_ACCEPT:
		(void)accept(listener, NULL, NULL);
		break;
	case OP_RECV:
		(void)recv(conn[0], &c, 1, 0);
		break;
	default:
		break;
	}
	pthread_cleanup_pop(0);
	return (void *)1;   /* the call returned: a failure */
}

/* Cancel a thread blocked in op; nap_ms 0: the cancel may come first. */
static void cancel_in(enum op op, int nap_ms)
{
	atomic_store(&started, 0);
	atomic_store(&cleaned, 0);
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, blocker, (void *)(intptr_t)op));
	if (nap_ms) {
		while (!atomic_load(&started))
			usleep(1000);
		usleep(nap_ms * 1000);   /* into the kernel, or parked */
	}
	CHECK_OK(pthread_cancel(t));
	void *res;
	CHECK_OK(pthread_join(t, &res));
	if (res != PTHREAD_CANCELED || !atomic_load(&cleaned)) {
		fprintf(stderr, "%s (nap %d ms): result %p, cleanup %d\n", op_name[op], nap_ms, res,
			atomic_load(&cleaned));
		exit(1);
	}
}

static void *sem_taker(void *arg)
{
	(void)arg;
	CHECK(sem_wait(&sem) == 0);
	return NULL;
}

int main(void)
{
	CHECK(pipe(fds) == 0);
	CHECK(sem_init(&sem, 0, 0) == 0);

	listener = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(listener >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(bind(listener, (struct sockaddr *)&a, sizeof a) == 0);
	CHECK(listen(listener, 4) == 0);
	socklen_t al = sizeof a;
	CHECK(getsockname(listener, (struct sockaddr *)&a, &al) == 0);
	conn[1] = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(conn[1] >= 0);
	CHECK(connect(conn[1], (struct sockaddr *)&a, sizeof a) == 0);
	conn[0] = accept(listener, NULL, NULL);
	CHECK(conn[0] >= 0);

	for (int op = 0; op < OP_N; op++) {
		cancel_in((enum op)op, 30);
		cancel_in((enum op)op, 0);
	}

	/* The cancelled waiters left no trace: the value is 0, and one post
	 * goes to a new waiter. */
	int v = -1;
	CHECK(sem_getvalue(&sem, &v) == 0 && v == 0);
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, sem_taker, NULL));
	usleep(20000);
	CHECK(sem_post(&sem) == 0);
	CHECK_OK(pthread_join(t, NULL));
	CHECK(sem_getvalue(&sem, &v) == 0 && v == 0);
	CHECK(sem_post(&sem) == 0);
	CHECK(sem_trywait(&sem) == 0);
	CHECK(sem_trywait(&sem) == -1 && errno == EAGAIN);

	/* The calls still work when nobody cancels. */
	char c = 'x';
	CHECK(write(fds[1], &c, 1) == 1);
	c = 0;
	CHECK(read(fds[0], &c, 1) == 1 && c == 'x');
	CHECK(send(conn[1], "y", 1, 0) == 1);
	CHECK(recv(conn[0], &c, 1, 0) == 1 && c == 'y');
	puts("cancel-io: ok");
	return 0;
}
