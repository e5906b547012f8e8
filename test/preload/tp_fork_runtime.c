/* A child forked by a non-main thread while another thread computes gets
 * the whole runtime back: in the child, a thread blocked in read does not
 * stop a compute thread (hand-off, with one VP), the compute thread is
 * preempted for the others, and the child exits cleanly. */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp_util.h"

static int fds[2];
static atomic_int computed;

static void *reader(void *arg)
{
	char c;
	CHECK(read(fds[0], &c, 1) == 1 && c == 'x');
	return NULL;
}

static void *compute(void *arg)
{
	volatile unsigned long x = 0;
	for (unsigned long i = 0; i < 100000000UL; i++)
		x += i;
	atomic_fetch_add(&computed, 1);
	return NULL;
}

static void *forker(void *arg)
{
	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0) {
		pthread_t r, c;
		/* The parent's compute thread may have counted itself in
		 * before the fork: only the child's own counts here. */
		int before = atomic_load(&computed);
		CHECK(pipe(fds) == 0);
		CHECK_OK(pthread_create(&r, NULL, reader, NULL));
		CHECK_OK(pthread_create(&c, NULL, compute, NULL));
		CHECK_OK(pthread_join(c, NULL));
		CHECK(write(fds[1], "x", 1) == 1);
		CHECK_OK(pthread_join(r, NULL));
		_exit(atomic_load(&computed) == before + 1 ? 0 : 2);
	}
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	return NULL;
}

int main(void)
{
	pthread_t t, u;
	CHECK_OK(pthread_create(&u, NULL, compute, NULL));
	CHECK_OK(pthread_create(&t, NULL, forker, NULL));
	CHECK_OK(pthread_join(t, NULL));
	CHECK_OK(pthread_join(u, NULL));
	CHECK(atomic_load(&computed) == 1);
	puts("fork-runtime: ok");
	return 0;
}
