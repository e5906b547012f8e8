/* A TCP echo server on 127.0.0.1 with one thread per connection serves
 * every client while compute threads run.  Bounded: NCLIENTS clients send
 * NMSG messages each, the server accepts exactly NCLIENTS connections, and
 * everything is joined. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../preload/tp_util.h"

#define NCLIENTS 8
#define NMSG 50
#define NCOMPUTE 2

static int listen_fd;
static struct sockaddr_in addr;

static void *serve(void *arg)
{
	int fd = (int)(long)arg;
	char buf[256];
	ssize_t n;
	while ((n = recv(fd, buf, sizeof buf, 0)) > 0) {
		ssize_t off = 0;
		while (off < n) {
			ssize_t w = send(fd, buf + off, (size_t)(n - off), 0);
			CHECK(w > 0);
			off += w;
		}
	}
	CHECK(n == 0);
	close(fd);
	return NULL;
}

static void *acceptor(void *arg)
{
	(void)arg;
	pthread_t conn[NCLIENTS];
	for (int i = 0; i < NCLIENTS; i++) {
		int fd = accept(listen_fd, NULL, NULL);
		CHECK(fd >= 0);
		CHECK_OK(pthread_create(&conn[i], NULL, serve, (void *)(long)fd));
	}
	for (int i = 0; i < NCLIENTS; i++)
		CHECK_OK(pthread_join(conn[i], NULL));
	return NULL;
}

static void *client(void *arg)
{
	int id = (int)(long)arg;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(fd >= 0);
	CHECK(connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0);
	for (int m = 0; m < NMSG; m++) {
		char out[64], in[64];
		int len = snprintf(out, sizeof out, "client %d message %d", id, m);
		CHECK(write(fd, out, (size_t)len) == len);
		int got = 0;
		while (got < len) {
			ssize_t n = read(fd, in + got, (size_t)(len - got));
			CHECK(n > 0);
			got += (int)n;
		}
		CHECK(memcmp(in, out, (size_t)len) == 0);
	}
	close(fd);
	return NULL;
}

static volatile int stop;

static void *compute(void *arg)
{
	unsigned long x = (unsigned long)arg, rounds = 0;
	while (!stop) {
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005UL + 1;
		rounds++;
		sched_yield();
	}
	return (void *)(rounds + (x & 0));
}

int main(void)
{
	alarm(60);
	listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(listen_fd >= 0);
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	addr.sin_port = 0;
	CHECK(bind(listen_fd, (struct sockaddr *)&addr, sizeof addr) == 0);
	socklen_t len = sizeof addr;
	CHECK(getsockname(listen_fd, (struct sockaddr *)&addr, &len) == 0);
	CHECK(listen(listen_fd, NCLIENTS) == 0);

	pthread_t acc, cl[NCLIENTS], co[NCOMPUTE];
	for (int i = 0; i < NCOMPUTE; i++)
		CHECK_OK(pthread_create(&co[i], NULL, compute, (void *)(long)i));
	CHECK_OK(pthread_create(&acc, NULL, acceptor, NULL));
	for (int i = 0; i < NCLIENTS; i++)
		CHECK_OK(pthread_create(&cl[i], NULL, client, (void *)(long)i));
	for (int i = 0; i < NCLIENTS; i++)
		CHECK_OK(pthread_join(cl[i], NULL));
	CHECK_OK(pthread_join(acc, NULL));
	stop = 1;
	unsigned long total = 0;
	for (int i = 0; i < NCOMPUTE; i++) {
		void *r;
		CHECK_OK(pthread_join(co[i], &r));
		total += (unsigned long)r;
	}
	close(listen_fd);
	printf("%d clients x %d messages echoed; compute rounds meanwhile: %lu\n", NCLIENTS, NMSG,
	       total);
	return 0;
}
