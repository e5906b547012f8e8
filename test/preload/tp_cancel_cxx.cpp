// C++: cancellation and pthread_exit unwind through RAII destructors and
// catch (...) { throw; }, with pthread_cleanup_push handlers in order; the
// cancel acts in pthread_testcancel, in fgets blocked on an empty pipe (the
// C library's own read, interrupted in the kernel) and in a write inside
// fprintf after pthread_cancel(pthread_self()).
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <initializer_list>

#include "tp_util.h"

static std::atomic<int> order[8], norder, started;

static void record(void *arg)
{
	int i = norder.fetch_add(1);
	if (i < 8)
		order[i] = (int)(intptr_t)arg;
}

struct Guard {
	int v;
	explicit Guard(int x) : v(x) {}
	~Guard() { record((void *)(intptr_t)v); }
};

static std::atomic<int> rethrown;
enum where { TESTCANCEL, FGETS, SELF_FPRINTF };
static where at;
static int pipe_fds[2];

static void inner()
{
	Guard g(3);
	try {
		pthread_cleanup_push(record, (void *)2);
		started = 1;
		if (at == FGETS) {
			FILE *f = fdopen(pipe_fds[0], "r");
			char buf[8];
			if (f != nullptr)
				(void)fgets(buf, sizeof buf, f);
		} else if (at == SELF_FPRINTF) {
			FILE *f = fopen("/dev/null", "w");
			pthread_cancel(pthread_self());
			if (f != nullptr) {
				setvbuf(f, nullptr, _IONBF, 0);
				fprintf(f, "not cancelled\n");
			}
		}
		for (;;)
			pthread_testcancel();
		pthread_cleanup_pop(0);
	} catch (...) {
		rethrown = 1;
		throw;
	}
}

static void *canceled(void *)
{
	Guard g(1);
	inner();
	return nullptr;
}

static void *exiting(void *)
{
	Guard g(5);
	pthread_cleanup_push(record, (void *)4);
	pthread_exit((void *)9);
	pthread_cleanup_pop(0);
	return nullptr;
}

int main()
{
	pthread_t t;
	void *res;
	alarm(30);
	CHECK(pipe(pipe_fds) == 0);
	for (where w : { TESTCANCEL, FGETS, SELF_FPRINTF }) {
		at = w;
		started = 0;
		rethrown = 0;
		norder = 0;
		CHECK_OK(pthread_create(&t, nullptr, canceled, nullptr));
		if (w != SELF_FPRINTF) {
			while (!started)
				sched_yield();
			if (w == FGETS) {   // into the kernel
				long long until = tp_now_ns() + 20000000;
				while (tp_now_ns() < until)
					sched_yield();
			}
			CHECK_OK(pthread_cancel(t));
		}
		CHECK_OK(pthread_join(t, &res));
		CHECK(res == PTHREAD_CANCELED);
		CHECK(rethrown == 1);
		CHECK(norder == 3);
		CHECK(order[0] == 2 && order[1] == 3 && order[2] == 1);
	}

	norder = 0;
	CHECK_OK(pthread_create(&t, nullptr, exiting, nullptr));
	CHECK_OK(pthread_join(t, &res));
	CHECK(res == (void *)9);
	CHECK(norder == 2);
	CHECK(order[0] == 4 && order[1] == 5);
	return 0;
}
