/* The library constructor.  It runs after the C library's and before
 * main; early callers (constructors of other libraries that run first) are
 * safe because every entry point starts the runtime on first use. */
#include <stdlib.h>

#include "../vpindep/vpindep.h"

__attribute__((constructor)) static void preload_start(void)
{
	ppl_init();
	/* Registered before main, so it runs after the program's own atexit
	 * handlers: the counters include their work. */
	if (atexit(ppl_stats_report) != 0)
		abort();
}
