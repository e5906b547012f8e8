/* What a burst of threads leaves behind once they are joined: NPTL keeps
 * a bounded stack cache and unmaps the rest, so the process's anonymous
 * memory comes back to about what it was.  libppl's pooled TCBs must not
 * keep a page each (fork copies every one of them): under 1 KiB a thread
 * is allowed, three times what either library needs.  Then the pool still
 * works: a process-directed signal finds the one thread that takes it
 * (libppl walks every TCB for it), and a forked child makes threads. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "tp_util.h"

#define BURST 3000

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int go, arrived;

static void *waiter(void *arg)
{
	pthread_mutex_lock(&m);
	arrived++;
	pthread_cond_broadcast(&c);
	while (!go)
		pthread_cond_wait(&c, &m);
	pthread_mutex_unlock(&m);
	return arg;
}

static long rss_anon_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	CHECK(f != NULL);
	char line[256];
	long kb = -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "RssAnon: %ld kB", &kb) == 1)
			break;
	fclose(f);
	CHECK(kb >= 0);
	return kb;
}

static void burst(pthread_t *t, int n)
{
	go = arrived = 0;
	for (int i = 0; i < n; i++)
		CHECK_OK(pthread_create(&t[i], NULL, waiter, NULL));
	pthread_mutex_lock(&m);
	while (arrived < n)
		pthread_cond_wait(&c, &m);
	go = 1;
	pthread_cond_broadcast(&c);
	pthread_mutex_unlock(&m);
	for (int i = 0; i < n; i++)
		CHECK_OK(pthread_join(t[i], NULL));
}

static volatile sig_atomic_t got_usr1;
static _Atomic int unblocked;

static void on_usr1(int sig)
{
	got_usr1 = sig;
}

/* The one thread that does not block SIGUSR1. */
static void *take_usr1(void *arg)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	CHECK_OK(pthread_sigmask(SIG_UNBLOCK, &s, NULL));
	unblocked = 1;
	while (!got_usr1)
		usleep(1000);
	return arg;
}

static void *nothing(void *arg)
{
	return arg;
}

int main(void)
{
	alarm(60);
	static pthread_t t[BURST];
	/* A few threads first, for what both libraries make once. */
	burst(t, 100);
	long before = rss_anon_kb();
	burst(t, BURST);
	long after = rss_anon_kb();
	printf("RssAnon %ld kB -> %ld kB after a burst of %d threads\n", before, after, BURST);
	CHECK(after - before < BURST);

	struct sigaction sa = { .sa_handler = on_usr1 };
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &s, NULL));
	pthread_t w;
	CHECK_OK(pthread_create(&w, NULL, take_usr1, NULL));
	while (!unblocked)
		usleep(1000);
	CHECK(kill(getpid(), SIGUSR1) == 0);
	CHECK_OK(pthread_join(w, NULL));

	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0) {
		for (int i = 0; i < 100; i++) {
			CHECK_OK(pthread_create(&w, NULL, nothing, NULL));
			CHECK_OK(pthread_join(w, NULL));
		}
		_exit(0);
	}
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	puts("burst-memory: ok");
	return 0;
}
