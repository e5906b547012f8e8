/* Once a second thread runs, the C library must know the process is
 * multi-threaded, also in a program that has its own copy of
 * __libc_single_threaded.  This one reads it, as every C++ program's
 * shared_ptr does, so the link gives it a copy relocation: the program's
 * copy and the C library's own object are then two, and glibc reads its
 * own (its SINGLE_THREAD_P) to decide whether malloc, fork and its
 * internal mutexes lock at all.  A thread library that clears only the
 * copy leaves ld.so's locks taken and released with plain stores: a thread
 * that waited for one while another held it was never woken
 * (tb_atomic_wait's main thread hung in dlsym on raw-clone VPs).
 *
 * The holder keeps ld.so's lock (dl_iterate_phdr's callback runs under
 * it) for 300 ms while the contender asks for it; the contender must get
 * it within 10 s of its release. */
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <sys/single_threaded.h>

#include "tp_util.h"

static atomic_int held, done;

static int hold_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info, (void)size, (void)arg;
	atomic_store(&held, 1);
	struct timespec ts = { 0, 300 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	return 1;
}

static void *holder(void *arg)
{
	(void)arg;
	dl_iterate_phdr(hold_cb, NULL);
	return NULL;
}

static int count_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info, (void)size;
	++*(int *)arg;
	return 0;
}

static void *contender(void *arg)
{
	(void)arg;
	while (!atomic_load(&held))
		sched_yield();
	int n = 0;
	dl_iterate_phdr(count_cb, &n);
	atomic_store(&done, n);
	return NULL;
}

static void *nothing(void *arg)
{
	return arg;
}

int main(void)
{
	alarm(30);
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, nothing, NULL));
	CHECK_OK(pthread_join(t, NULL));
	/* The program's copy, and the C library's own (a handle's lookup
	 * starts at the library itself, not at the program). */
	CHECK(__libc_single_threaded == 0);
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	CHECK(libc != NULL);
	char *own = dlsym(libc, "__libc_single_threaded");
	CHECK(own != NULL);
	if (*own != 0) {
		fprintf(stderr, "the C library's own __libc_single_threaded is %d after a thread ran\n",
			*own);
		return 1;
	}

	pthread_t h, c;
	CHECK_OK(pthread_create(&h, NULL, holder, NULL));
	CHECK_OK(pthread_create(&c, NULL, contender, NULL));
	CHECK_OK(pthread_join(h, NULL));
	for (int i = 0; i < 1000 && atomic_load(&done) == 0; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	if (atomic_load(&done) == 0) {
		fprintf(stderr, "a waiter for ld.so's lock was not woken when it was released\n");
		return 1;
	}
	CHECK_OK(pthread_join(c, NULL));
	printf("ld.so's lock handed over; the C library's flag is clear\n");
	return 0;
}
