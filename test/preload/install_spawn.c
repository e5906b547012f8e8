/* Built by check_install.sh against the installed ppl.h and libppl-ffi with
 * `pkg-config --cflags --libs ppl-ffi`: a typed spawn works. */
#include <stdio.h>

#include <ppl.h>

static double mul(double a, int b)
{
	return a * b;
}

int main(void)
{
	pthread_t t;
	double r = 0;
	int err = ppl_spawn(&t, NULL, mul, "di>d", 1.5, 4);
	if (err == 0)
		err = ppl_join_typed(t, &r);
	if (err || r != 6.0 || ppl_vp_count() < 1) {
		fprintf(stderr, "install_spawn: err %d, result %g, %d VPs\n", err, r, ppl_vp_count());
		return 1;
	}
	printf("install_spawn: ok\n");
	return 0;
}
