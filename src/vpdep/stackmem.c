/* The memory of user-thread stacks: mappings, guard pages, giving pages
 * back, and the limits that size them.  vpdep's because a backend whose
 * VPs are processes must map stacks shared (docs/vpdep.md); vpindep's
 * stack.c keeps the size classes, arenas and caches.
 *
 * A guard is installed with MADV_GUARD_INSTALL (Linux 6.13+), which does
 * not split the mapping; older kernels fall back to mprotect, which does. */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "vpdep.h"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

static _Atomic int guard_mode;     /* 0 unknown, 1 madvise, 2 mprotect */

void *vp_stack_map(size_t bytes)
{
	void *a = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	return a == MAP_FAILED ? NULL : a;
}

bool vp_stack_punch(void *lo, size_t bytes)
{
	int saved = errno;
	bool ok = munmap(lo, bytes) == 0;
	errno = saved;
	return ok;
}

bool vp_stack_refill(void *lo, size_t bytes)
{
	int saved = errno;
	/* NOREPLACE: whatever was mapped there since stays (EEXIST); a
	 * kernel before 4.17 takes the address as a hint only. */
	void *a = mmap(lo, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK | MAP_FIXED_NOREPLACE,
		       -1, 0);
	if (a != MAP_FAILED && a != lo)
		munmap(a, bytes);
	errno = saved;
	return a == lo;
}

void *vp_mem_map(size_t bytes)
{
	void *a = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return a == MAP_FAILED ? NULL : a;
}

void vp_stack_unmap(void *lo, size_t bytes)
{
	int saved = errno;
	munmap(lo, bytes);
	errno = saved;
}

int vp_stack_guard(void *lo, size_t len)
{
	int mode = atomic_load_explicit(&guard_mode, memory_order_relaxed);
	if (mode != 2) {
		if (madvise(lo, len, MADV_GUARD_INSTALL) == 0) {
			atomic_store_explicit(&guard_mode, 1, memory_order_relaxed);
			return 0;
		}
		if (errno != EINVAL)
			return errno;
		atomic_store_explicit(&guard_mode, 2, memory_order_relaxed);
	}
	return mprotect(lo, len, PROT_NONE) == 0 ? 0 : errno;
}

bool vp_stack_guard_remove(void *lo, size_t len)
{
	return atomic_load_explicit(&guard_mode, memory_order_relaxed) == 1 &&
	       madvise(lo, len, MADV_GUARD_REMOVE) == 0;
}

void vp_stack_release(void *lo, size_t len)
{
	int saved = errno;
	madvise(lo, len, MADV_DONTNEED);
	errno = saved;
}

size_t vp_limit_stack(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_STACK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return 0;
	return rl.rlim_cur > SIZE_MAX ? SIZE_MAX : (size_t)rl.rlim_cur;
}

size_t vp_limit_address_space(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return 0;
	return rl.rlim_cur > SIZE_MAX ? SIZE_MAX : (size_t)rl.rlim_cur;
}

long vp_limit_nice(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NICE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return -1;
	return rl.rlim_cur > LONG_MAX ? -1 : (long)rl.rlim_cur;
}
