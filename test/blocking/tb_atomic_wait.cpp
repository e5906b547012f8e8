// C++20 std::atomic<int>::wait / notify_one ping-pong between two threads
// (libstdc++ waits with raw futex system calls after a short spin), then
// libstdc++'s wait_notify/100334: four std::async threads wait on atomic
// chars that share one waiter-pool futex while main sleeps 100 ms and
// wakes them one by one.  main's sleep used to sit on a VP whose kernel
// thread then blocked in a waiter's futex, and never ended.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <thread>
#include <unistd.h>

static std::atomic<int> turn{0};

static int shared_pool()
{
	// 16 * 4 bytes apart: the same slot of libstdc++'s 16-entry pool.
	static std::atomic<char> tmp[49 * 4];
	std::atomic<char> *a[4] = { &tmp[0], &tmp[16 * 4], &tmp[32 * 4], &tmp[48 * 4] };
	std::future<void> f[4];
	for (int i = 0; i < 4; i++)
		f[i] = std::async(std::launch::async, [p = a[i]] { p->wait(0); });
	std::this_thread::sleep_for(std::chrono::milliseconds(100));
	a[2]->store(1);
	a[2]->notify_one();
	if (f[2].wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
		std::fprintf(stderr, "the notified waiter did not return\n");
		return 1;
	}
	for (int i : { 0, 1, 3 })
		if (f[i].wait_for(std::chrono::milliseconds(1)) != std::future_status::timeout) {
			std::fprintf(stderr, "waiter %d returned without a change\n", i);
			return 1;
		}
	for (int i : { 0, 1, 3 }) {
		a[i]->store(1);
		a[i]->notify_one();
	}
	for (auto &x : f)
		x.get();
	return 0;
}

int main()
{
	alarm(60);
	if (shared_pool() != 0)
		return 1;
	// 2,000 rounds, or fewer if 20 s pass first: on a loaded machine
	// (load 65 to 95 on 2 CPUs) a round's spin-then-yield can take tens
	// of ms; a lost wake-up still hangs until the alarm.
	const int max_rounds = 2000;
	static std::atomic<int> rounds{max_rounds};
	const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
	std::thread peer([&] {
		for (int i = 0; i < rounds.load(); i++) {
			turn.wait(2 * i);          // until it is our turn: 2i + 1
			turn.store(2 * i + 2);
			turn.notify_one();
		}
	});
	for (int i = 0; i < rounds.load(); i++) {
		if (i + 1 < max_rounds && std::chrono::steady_clock::now() > give_up)
			rounds.store(i + 1);    // this round is the last: the peer sees it first
		turn.store(2 * i + 1);
		turn.notify_one();
		turn.wait(2 * i + 1);             // until the peer answered: 2i + 2
		if (turn.load() != 2 * i + 2) {
			std::fprintf(stderr, "round %d: turn %d\n", i, turn.load());
			return 1;
		}
	}
	peer.join();
	std::printf("%d rounds of wait/notify\n", rounds.load());
	return 0;
}
