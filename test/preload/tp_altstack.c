/* sigaltstack is per thread, as on NPTL: a new thread has none; a thread's
 * SA_ONSTACK handler runs on its own alternate stack, never on another
 * thread's, also when the threads share a kernel thread (one VP) and
 * switch between sigaltstack calls; sigaltstack reports SS_ONSTACK and
 * refuses a change (EPERM) inside a handler running on it.
 *
 * libppl used to leave sigaltstack to the kernel thread: a new thread saw
 * main's alternate stack (or its VP's), and its SA_ONSTACK handler ran on
 * main's small stack (glibc's tst-cancel20/21 crashed now and then). */

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "tp_util.h"

#define ROUNDS 200
#define ALT_SIZE (64 * 1024)

struct who {
	const char *name;
	char *alt;            /* its alternate stack, or NULL */
	pthread_t th;
};

static struct who mainw = { "main" }, withw = { "with" }, nonew = { "none" };
static __thread struct who *me;
static atomic_int bad;
static atomic_int handled;

static bool within(const char *p, const char *lo)
{
	return lo != NULL && p >= lo && p < lo + ALT_SIZE;
}

static void on_usr1(int sig)
{
	(void)sig;
	char here;
	struct who *w = me;
	if (w == NULL) {
		atomic_fetch_add(&bad, 1);
		return;
	}
	/* On its own alternate stack if it has one, on no other thread's. */
	bool ok = w->alt ? within(&here, w->alt) : true;
	for (struct who *o = &mainw; o != NULL; o = o == &mainw ? &withw : o == &withw ? &nonew : NULL)
		if (o != w && within(&here, o->alt))
			ok = false;
	stack_t cur;
	CHECK(sigaltstack(NULL, &cur) == 0);
	if (w->alt != NULL) {
		if (!(cur.ss_flags & SS_ONSTACK) || cur.ss_sp != w->alt)
			ok = false;
		/* No change while on it. */
		stack_t other = { .ss_sp = malloc(ALT_SIZE), .ss_size = ALT_SIZE };
		if (sigaltstack(&other, NULL) != -1 || errno != EPERM)
			ok = false;
		free(other.ss_sp);
	} else if (!(cur.ss_flags & SS_DISABLE)) {
		ok = false;
	}
	if (!ok) {
		fprintf(stderr, "%s: handler at %p (main's %p, with's %p), flags %d\n", w->name,
			(void *)&here, (void *)mainw.alt, (void *)withw.alt, cur.ss_flags);
		atomic_fetch_add(&bad, 1);
	}
	/* Give the VP to the other threads while on this stack. */
	sched_yield();
	atomic_fetch_add(&handled, 1);
}

static void give_alt(struct who *w)
{
	w->alt = malloc(ALT_SIZE);
	CHECK(w->alt != NULL);
	stack_t s = { .ss_sp = w->alt, .ss_size = ALT_SIZE, .ss_flags = 0 };
	CHECK(sigaltstack(&s, NULL) == 0);
	stack_t back;
	CHECK(sigaltstack(NULL, &back) == 0);
	CHECK(back.ss_sp == w->alt && back.ss_size == ALT_SIZE && back.ss_flags == 0);
}

static pthread_barrier_t bar;

static void *run(void *arg)
{
	me = arg;
	stack_t cur;
	CHECK(sigaltstack(NULL, &cur) == 0);
	if (!(cur.ss_flags & SS_DISABLE)) {
		fprintf(stderr, "%s: a new thread has an alternate stack (%p, flags %d)\n", me->name,
			cur.ss_sp, cur.ss_flags);
		exit(1);
	}
	if (me == &withw)
		give_alt(me);
	pthread_barrier_wait(&bar);
	for (int i = 0; i < ROUNDS; i++) {
		CHECK_OK(pthread_kill(pthread_self(), SIGUSR1));
		sched_yield();
	}
	pthread_barrier_wait(&bar);
	return NULL;
}

int main(void)
{
	alarm(30);
	me = &mainw;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	give_alt(&mainw);
	pthread_barrier_init(&bar, NULL, 3);
	CHECK_OK(pthread_create(&withw.th, NULL, run, &withw));
	CHECK_OK(pthread_create(&nonew.th, NULL, run, &nonew));
	pthread_barrier_wait(&bar);
	for (int i = 0; i < ROUNDS; i++) {
		CHECK_OK(pthread_kill(pthread_self(), SIGUSR1));
		sched_yield();
	}
	pthread_barrier_wait(&bar);
	CHECK_OK(pthread_join(withw.th, NULL));
	CHECK_OK(pthread_join(nonew.th, NULL));
	/* Disabled again: none. */
	stack_t off = { .ss_flags = SS_DISABLE }, cur;
	CHECK(sigaltstack(&off, NULL) == 0);
	CHECK(sigaltstack(NULL, &cur) == 0 && (cur.ss_flags & SS_DISABLE));
	if (atomic_load(&bad) != 0 || atomic_load(&handled) != 3 * ROUNDS) {
		fprintf(stderr, "%d bad of %d handled\n", atomic_load(&bad), atomic_load(&handled));
		return 1;
	}
	puts("ok");
	return 0;
}
