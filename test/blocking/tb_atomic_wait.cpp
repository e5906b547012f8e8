// C++20 std::atomic<int>::wait / notify_one ping-pong between two threads
// (libstdc++ waits with raw futex system calls after a short spin).
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <unistd.h>

static std::atomic<int> turn{0};

int main()
{
	alarm(60);
	const int rounds = 2000;
	std::thread peer([&] {
		for (int i = 0; i < rounds; i++) {
			turn.wait(2 * i);          // until it is our turn: 2i + 1
			turn.store(2 * i + 2);
			turn.notify_one();
		}
	});
	for (int i = 0; i < rounds; i++) {
		turn.store(2 * i + 1);
		turn.notify_one();
		turn.wait(2 * i + 1);             // until the peer answered: 2i + 2
		if (turn.load() != 2 * i + 2) {
			std::fprintf(stderr, "round %d: turn %d\n", i, turn.load());
			return 1;
		}
	}
	peer.join();
	std::printf("%d rounds of wait/notify\n", rounds);
	return 0;
}
