// C++ per-thread state under per-thread TLS: thread_local objects with
// constructors and destructors, and exception handling (__cxa_get_globals)
// with catch blocks interleaved by switches and migrations between VPs.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <pthread.h>
#include <sched.h>
#include <stdexcept>
#include <string>

#define CHECK(c)                                                                   \
	do {                                                                       \
		if (!(c)) {                                                        \
			std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
				     __LINE__, #c);                                \
			std::exit(1);                                              \
		}                                                                  \
	} while (0)

static std::atomic<int> constructed, destroyed;

struct Tracked {
	long id = -1;
	std::string name;
	Tracked() { constructed++; }
	~Tracked() { destroyed++; }
};

static thread_local Tracked tl;
static thread_local int tl_counter = 5;

static void deep(long id, int depth)
{
	if (depth == 0)
		throw std::runtime_error("thread " + std::to_string(id));
	sched_yield();
	deep(id, depth - 1);
}

static void *worker(void *arg)
{
	long id = (long)arg;
	CHECK(tl_counter == 5);
	CHECK(tl.id == -1);
	tl.id = id;
	tl.name = "worker " + std::to_string(id);
	for (int r = 0; r < 50; r++) {
		try {
			deep(id, 3);
		} catch (const std::runtime_error &e) {
			// Stay inside the catch block across switches: another
			// thread's throw/catch must not disturb ours.
			CHECK(std::uncaught_exceptions() == 0);
			for (int i = 0; i < 5; i++) {
				sched_yield();
				CHECK(std::current_exception() != nullptr);
				CHECK(std::string(e.what()) == "thread " + std::to_string(id));
			}
			try {
				throw std::logic_error("nested");
			} catch (const std::logic_error &) {
				sched_yield();
			}
			CHECK(std::string(e.what()) == "thread " + std::to_string(id));
		}
		CHECK(std::current_exception() == nullptr);
		CHECK(tl.id == id);
		tl_counter++;
	}
	CHECK(tl_counter == 55);
	return nullptr;
}

int main()
{
	const int n = 16;
	for (int round = 0; round < 3; round++) {
		pthread_t t[n];
		for (long i = 0; i < n; i++)
			CHECK(pthread_create(&t[i], nullptr, worker, (void *)(i + 1)) == 0);
		for (int i = 0; i < n; i++)
			CHECK(pthread_join(t[i], nullptr) == 0);
	}
	// Every thread's thread_local was constructed once and destroyed at its exit.
	CHECK(constructed.load() == 3 * n);
	CHECK(destroyed.load() == 3 * n);
	std::puts("ok");
	return 0;
}
