// The C++ standard library's threads, which reach pthreads through
// libstdc++'s own references (GLIBC_2.34-versioned pthread_create, ...):
// std::thread, std::mutex, std::condition_variable, std::unique_lock.
// No thread_local: libppl shares TLS between user threads for now.
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "tp_util.h"

int main()
{
	// A work queue: producers push numbers, consumers sum them.
	std::mutex m;
	std::condition_variable cv;
	std::deque<long> q;
	int producers_left = 4;
	long long sum = 0;
	const long per_producer = 20000;

	std::vector<std::thread> threads;
	for (int c = 0; c < 4; c++)
		threads.emplace_back([&] {
			long long local = 0;
			std::unique_lock<std::mutex> lk(m);
			for (;;) {
				cv.wait(lk, [&] { return !q.empty() || producers_left == 0; });
				if (q.empty())
					break;
				local += q.front();
				q.pop_front();
			}
			sum += local;
		});
	for (int p = 0; p < 4; p++)
		threads.emplace_back([&, p] {
			for (long i = 1; i <= per_producer; i++) {
				std::lock_guard<std::mutex> g(m);
				q.push_back(p * per_producer + i);
				cv.notify_one();
			}
			std::lock_guard<std::mutex> g(m);
			if (--producers_left == 0)
				cv.notify_all();
		});
	for (auto &t : threads)
		t.join();
	long long n = 4 * per_producer;
	CHECK(sum == n * (n + 1) / 2);

	// Threads parked on a condition variable while the kernel threads are
	// counted: std::thread must create user-level threads on libppl too.
	const int parked = 64;
	int waiting = 0;
	bool go = false;
	threads.clear();
	for (int i = 0; i < parked; i++)
		threads.emplace_back([&] {
			std::unique_lock<std::mutex> lk(m);
			waiting++;
			cv.notify_all();
			cv.wait(lk, [&] { return go; });
		});
	{
		std::unique_lock<std::mutex> lk(m);
		cv.wait(lk, [&] { return waiting == parked; });
	}
	tp_check_kernel_threads(parked);
	{
		std::lock_guard<std::mutex> g(m);
		go = true;
	}
	cv.notify_all();
	for (auto &t : threads)
		t.join();
	CHECK(std::this_thread::get_id() != std::thread::id());
	std::puts("cxx: ok");
	return 0;
}
