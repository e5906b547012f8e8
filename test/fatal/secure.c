/* Run setuid/setgid by check_secure.sh (AT_SECURE) with every PPL_ knob set
 * to a bad or visible value: libppl must ignore them all and take its
 * defaults.  Exit 77 (skipped) if the kernel did not mark it secure. */
#include <pthread.h>
#include <stdio.h>
#include <sys/auxv.h>
#include <sys/resource.h>

#include <ppl.h>

static void *nop(void *arg) { return arg; }

int main(void)
{
	if (getauxval(AT_SECURE) == 0) {
		puts("not in secure-execution mode");
		return 77;
	}
	/* PPL_STACK_SIZE=20000 would make this the default. */
	pthread_attr_t a;
	size_t size;
	if (pthread_getattr_default_np(&a) != 0 || pthread_attr_getstacksize(&a, &size) != 0)
		return 1;
	struct rlimit rl;
	getrlimit(RLIMIT_STACK, &rl);
	size_t want = rl.rlim_cur == RLIM_INFINITY ? 8u << 20 : rl.rlim_cur;
	if (size != want) {
		printf("default stack size %zu, expected %zu\n", size, want);
		return 1;
	}
	pthread_t t;
	if (pthread_create(&t, NULL, nop, NULL) != 0 || pthread_join(t, NULL) != 0)
		return 1;
	printf("secure: %d VPs, stack %zu: ok\n", ppl_vp_count(), size);
	return 0;
}
