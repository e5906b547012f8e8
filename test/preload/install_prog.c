/* Built by check_install.sh with the flags of the installed ppl.pc: it
 * must get libppl's headers and library, including the extensions. */
#include <pthread.h>
#include <ppl.h>
#include <stdio.h>

static void *run(void *arg)
{
	return arg;
}

int main(void)
{
	int x = 42;
	void *r = NULL;
	pthread_t t;
	if (pthread_create(&t, NULL, run, &x) != 0 || pthread_join(t, &r) != 0 || r != &x) {
		fprintf(stderr, "install_prog: create/join failed\n");
		return 1;
	}
	if (ppl_vp_count() < 1) {
		fprintf(stderr, "install_prog: ppl_vp_count() = %d after pthread_create\n",
			ppl_vp_count());
		return 1;
	}
	printf("install_prog: ok (%d VPs)\n", ppl_vp_count());
	return 0;
}
