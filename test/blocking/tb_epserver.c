/* A loopback server under load, shaped like memcached: a listener thread
 * accepts connections and hands each to one of WORKERS worker threads
 * through that worker's notification pipe; each worker serves its
 * connections from an epoll set of its own; a maintainer thread naps and
 * takes the statistics lock that the workers take for every request (timers
 * and parks beside the blocking calls).  A client process keeps one request
 * outstanding on each of CONNS connections for DURATION seconds and fails
 * if any request waits more than STALL seconds for its reply.
 *
 * With libppl on one VP every worker's epoll_wait blocks a kernel thread:
 * the monitor lends their VPs to spares, and spares retire when their
 * lenders come back.  A worker made ready on a VP whose kernel thread was
 * blocked, with the monitor asleep, was never run again (memcached -t 4
 * under ppl-run -n 1: one worker's connections went unserved in 7 of 54
 * runs).
 *
 * The request is memcached's "set k 0 0 1\r\nx\r\n" and the reply
 * "STORED\r\n", so `tb_epserver --client PORT` drives a real memcached. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WORKERS 4
#define CONNS 16
#define DURATION_MS 3000
#define STALL_MS 5000

static const char request[] = "set k 0 0 1\r\nx\r\n";
static const char reply[] = "STORED\r\n";
#define REQ_LEN (sizeof request - 1)
#define REP_LEN (sizeof reply - 1)

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "%s:%d: check failed: %s (%s)\n", __FILE__,  \
				__LINE__, #cond, strerror(errno));                   \
			exit(1);                                                     \
		}                                                                    \
	} while (0)

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* ---- the client (a process of its own, no threads) ---------------------------- */

static int duration_ms = DURATION_MS;

static int client(int port)
{
	int fd[CONNS];
	size_t got[CONNS];
	char rbuf[CONNS][REP_LEN];
	long long sent_at[CONNS];
	long served = 0;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (int i = 0; i < CONNS; i++) {
		fd[i] = socket(AF_INET, SOCK_STREAM, 0);
		CHECK(fd[i] >= 0);
		int one = 1;
		setsockopt(fd[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		CHECK(connect(fd[i], (struct sockaddr *)&sa, sizeof sa) == 0);
	}
	long long start = now_ms();
	for (int i = 0; i < CONNS; i++) {
		CHECK(write(fd[i], request, REQ_LEN) == (ssize_t)REQ_LEN);
		sent_at[i] = start;
		got[i] = 0;
	}
	for (;;) {
		long long now = now_ms();
		for (int i = 0; i < CONNS; i++)
			if (now - sent_at[i] > STALL_MS) {
				fprintf(stderr, "client: connection %d: no reply for %lld ms "
						"(%ld requests served)\n",
					i, now - sent_at[i], served);
				fflush(stdout);
				return 1;
			}
		if (now - start >= duration_ms)
			break;
		struct pollfd p[CONNS];
		for (int i = 0; i < CONNS; i++)
			p[i] = (struct pollfd){ .fd = fd[i], .events = POLLIN };
		int n = poll(p, CONNS, 100);
		CHECK(n >= 0 || errno == EINTR);
		for (int i = 0; i < CONNS && n > 0; i++) {
			if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t r = read(fd[i], rbuf[i] + got[i], REP_LEN - got[i]);
			if (r <= 0) {
				fprintf(stderr, "client: connection %d closed by the server\n", i);
				return 1;
			}
			got[i] += (size_t)r;
			if (got[i] < REP_LEN)
				continue;
			CHECK(memcmp(rbuf[i], reply, REP_LEN) == 0);
			got[i] = 0;
			served++;
			CHECK(write(fd[i], request, REQ_LEN) == (ssize_t)REQ_LEN);
			sent_at[i] = now_ms();
		}
	}
	for (int i = 0; i < CONNS; i++)
		close(fd[i]);
	printf("client: %ld requests served on %d connections in %d ms\n", served, CONNS,
	       duration_ms);
	fflush(stdout);
	return served > 0 ? 0 : 1;
}

/* ---- the server ---------------------------------------------------------------- */

struct conn {
	int fd;
	size_t have;
	char buf[REQ_LEN];
};

struct worker {
	pthread_t th;
	int ep;
	int notify[2];   /* the listener writes accepted fds here */
	long requests;
};

static struct worker workers[WORKERS];
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static long total_requests;
static atomic_int stopping;

static void serve(struct worker *w, struct conn *c)
{
	ssize_t r = read(c->fd, c->buf + c->have, REQ_LEN - c->have);
	if (r <= 0) {
		/* The client closed (or reset) it: drop it. */
		epoll_ctl(w->ep, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
		free(c);
		return;
	}
	c->have += (size_t)r;
	if (c->have < REQ_LEN)
		return;
	CHECK(memcmp(c->buf, request, REQ_LEN) == 0);
	c->have = 0;
	pthread_mutex_lock(&stats_lock);
	total_requests++;
	pthread_mutex_unlock(&stats_lock);
	w->requests++;
	CHECK(write(c->fd, reply, REP_LEN) == (ssize_t)REP_LEN);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	for (;;) {
		struct epoll_event ev[16];
		int n = epoll_wait(w->ep, ev, 16, -1);
		CHECK(n >= 0 || errno == EINTR);
		for (int i = 0; i < n; i++) {
			if (ev[i].data.ptr != NULL) {
				serve(w, ev[i].data.ptr);
				continue;
			}
			int fd;
			CHECK(read(w->notify[0], &fd, sizeof fd) == sizeof fd);
			if (fd < 0)
				return NULL;   /* told to stop */
			struct conn *c = calloc(1, sizeof *c);
			CHECK(c != NULL);
			c->fd = fd;
			struct epoll_event e = { .events = EPOLLIN, .data.ptr = c };
			CHECK(epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &e) == 0);
		}
	}
}

/* memcached's LRU maintainer and crawler nap and take locks the workers take. */
static void *maintainer_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&stopping)) {
		usleep(1000);
		pthread_mutex_lock(&stats_lock);
		pthread_mutex_unlock(&stats_lock);
	}
	return NULL;
}

struct listener {
	int lfd;
	int stop[2];
};

static void *listener_main(void *arg)
{
	struct listener *l = arg;
	int next = 0;
	for (;;) {
		struct pollfd p[2] = { { .fd = l->lfd, .events = POLLIN },
				       { .fd = l->stop[0], .events = POLLIN } };
		/* memcached's clock event: a one-second timeout */
		int n = poll(p, 2, 1000);
		CHECK(n >= 0 || errno == EINTR);
		if (n > 0 && p[1].revents)
			return NULL;
		if (n <= 0 || !(p[0].revents & POLLIN))
			continue;
		int fd = accept(l->lfd, NULL, NULL);
		if (fd < 0)
			continue;
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		struct worker *w = &workers[next++ % WORKERS];
		CHECK(write(w->notify[1], &fd, sizeof fd) == sizeof fd);
	}
}

int main(int argc, char **argv)
{
	/* --client PORT [MS]: drive another server (memcached) */
	if (argc >= 3 && strcmp(argv[1], "--client") == 0) {
		if (argc > 3)
			duration_ms = atoi(argv[3]);
		return client(atoi(argv[2]));
	}
	alarm(60);
	signal(SIGPIPE, SIG_IGN);
	struct listener l;
	l.lfd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(l.lfd >= 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = 0 };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(bind(l.lfd, (struct sockaddr *)&sa, sizeof sa) == 0);
	CHECK(listen(l.lfd, 64) == 0);
	socklen_t len = sizeof sa;
	CHECK(getsockname(l.lfd, (struct sockaddr *)&sa, &len) == 0);
	CHECK(pipe(l.stop) == 0);

	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(l.lfd);
		_exit(client(ntohs(sa.sin_port)));
	}

	for (int i = 0; i < WORKERS; i++) {
		struct worker *w = &workers[i];
		CHECK(pipe(w->notify) == 0);
		w->ep = epoll_create1(0);
		CHECK(w->ep >= 0);
		struct epoll_event e = { .events = EPOLLIN, .data.ptr = NULL };
		CHECK(epoll_ctl(w->ep, EPOLL_CTL_ADD, w->notify[0], &e) == 0);
		CHECK(pthread_create(&w->th, NULL, worker_main, w) == 0);
	}
	pthread_t lt, mt;
	CHECK(pthread_create(&lt, NULL, listener_main, &l) == 0);
	CHECK(pthread_create(&mt, NULL, maintainer_main, NULL) == 0);

	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		/* A worker may be lost for good: do not wait for it. */
		fprintf(stderr, "the client failed (status %#x)\n", st);
		_exit(1);
	}

	atomic_store(&stopping, 1);
	CHECK(write(l.stop[1], "x", 1) == 1);
	CHECK(pthread_join(lt, NULL) == 0);
	CHECK(pthread_join(mt, NULL) == 0);
	for (int i = 0; i < WORKERS; i++) {
		int stop = -1;
		CHECK(write(workers[i].notify[1], &stop, sizeof stop) == sizeof stop);
		CHECK(pthread_join(workers[i].th, NULL) == 0);
		printf("worker %d: %ld requests\n", i, workers[i].requests);
	}
	printf("server: %ld requests\n", total_requests);
	return 0;
}
