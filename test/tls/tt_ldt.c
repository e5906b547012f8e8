/* More threads alive at once than the LDT has entries (8,192), each with
 * its own errno and __thread state, checked before and after every thread
 * has been switched out and back (a barrier, then 80 yields), and in a
 * child forked by one of them.  With PPL_EXPECT_LDT=1 (PPL_TLS_SWITCH=ldt)
 * the threads must by then really run on LDT selectors (%fs nonzero), all
 * but those beyond the entries, which take the arch_prctl fallback.
 * On a machine whose CPU refuses LDT selectors (a PVM guest accepts
 * modify_ldt and faults on the load) there is nothing to expect: skipped.
 * Argument: the number of threads (default 8,300). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <asm/ldt.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp_util.h"

static __thread long mine = -1;
static __thread char pad[256];   /* a static TLS block larger than a word */
static pthread_barrier_t all_up;
static _Atomic long with_selector;

static unsigned fs_selector(void)
{
#if defined(__x86_64__)
	unsigned short s;
	__asm__ volatile("movw %%fs, %0" : "=r"(s));
	return s;
#else
	return 0;
#endif
}

static void check_mine(long id)
{
	CHECK(mine == id);
	CHECK(errno == (int)(id % 1000) + 1);
	CHECK(pad[id % 256] == (char)id);
}

static void *worker(void *arg)
{
	long id = (long)(intptr_t)arg;
	CHECK(mine == -1);   /* the init image */
	mine = id;
	errno = (int)(id % 1000) + 1;
	pad[id % 256] = (char)id;
	int r = pthread_barrier_wait(&all_up);
	CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
	check_mine(id);
	/* libppl gives a block its LDT entry on its thread's 64th resume */
	for (int i = 0; i < 80; i++) {
		sched_yield();
		check_mine(id);
	}
	if (fs_selector() != 0)
		atomic_fetch_add(&with_selector, 1);
	if (id == 1) {
		/* fork from a thread whose %fs may be an LDT selector */
		pid_t p = fork();
		CHECK(p >= 0);
		if (p == 0) {
			int ok = mine == 1 && errno == 2 && pad[1] == 1;
			char *m = malloc(100);
			_exit(ok && m ? 0 : 3);
		}
		int st;
		CHECK(waitpid(p, &st, 0) == p);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		errno = 2;
		check_mine(id);
	}
	return NULL;
}

/* Does loading an LDT selector give its entry's base here?  Tried in a
 * child, on %gs, so that a fault ends only the child. */
static int ldt_works(void)
{
	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0) {
		uintptr_t *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
		if (page == MAP_FAILED)
			_exit(1);
		page[0] = (uintptr_t)page;
		struct user_desc d = { .entry_number = 0, .base_addr = (unsigned)(uintptr_t)page,
				       .limit = 0xfffff, .seg_32bit = 1, .limit_in_pages = 1,
				       .useable = 1 };
		if (syscall(SYS_modify_ldt, 0x11, &d, sizeof d) != 0)
			_exit(1);
		uintptr_t seen;
		__asm__ volatile("movw %w1, %%gs\n\tmovq %%gs:0, %0" : "=r"(seen) : "r"(7));
		_exit(seen == (uintptr_t)page ? 0 : 1);
	}
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(int argc, char **argv)
{
	alarm(120);
	const char *e = getenv("PPL_EXPECT_LDT");
	bool expect = e && strcmp(e, "1") == 0;
	if (expect && !ldt_works()) {
		puts("ldt: this machine cannot switch by LDT selector: skipped");
		return 77;
	}
	long n = argc > 1 ? atol(argv[1]) : 8300;
	pthread_t *t = calloc((size_t)n, sizeof *t);
	CHECK(t != NULL);
	CHECK(pthread_barrier_init(&all_up, NULL, (unsigned)n + 1) == 0);
	pthread_attr_t a;
	CHECK(pthread_attr_init(&a) == 0);
	CHECK(pthread_attr_setstacksize(&a, 64 * 1024) == 0);
	for (long i = 0; i < n; i++)
		CHECK(pthread_create(&t[i], &a, worker, (void *)(intptr_t)i) == 0);
	int r = pthread_barrier_wait(&all_up);
	CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
	for (long i = 0; i < n; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	long sel = atomic_load(&with_selector);
	if (expect) {
		/* most threads got an entry (the last to finish may yield
		 * alone, without being switched out 64 times); the threads
		 * beyond the 8,192 entries (one is VP 0's loop's) ran with the
		 * fallback */
		CHECK(sel >= n / 2);
		CHECK(sel <= 8191);
		CHECK(n <= 8191 || sel < n);
	}
	printf("%ld threads, %ld on an LDT selector\n", n, sel);
	free(t);
	return 0;
}
