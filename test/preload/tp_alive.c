/* tp_alive [N]: keep N threads (default 10,000) alive at once, each on a
 * 64 KiB stack and blocked on a condition variable, and count the kernel
 * threads while they are: on libppl (PPL_EXPECT_ULT=1) at most one per VP
 * plus a few; natively one per thread.  Then release them and check that
 * every one ran to the end. */
#include <errno.h>
#include <pthread.h>

#include "tp_util.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t all_started = PTHREAD_COND_INITIALIZER;
static pthread_cond_t release_cv = PTHREAD_COND_INITIALIZER;
static long started, finished, want;
static int released;

static void *worker(void *arg)
{
	pthread_mutex_lock(&m);
	if (++started == want)
		pthread_cond_signal(&all_started);
	while (!released)
		CHECK_OK(pthread_cond_wait(&release_cv, &m));
	finished++;
	pthread_mutex_unlock(&m);
	return arg;
}

int main(int argc, char **argv)
{
	want = argc > 1 ? strtol(argv[1], NULL, 10) : 10000;
	CHECK(want > 0);
	pthread_t *t = calloc((size_t)want, sizeof *t);
	CHECK(t != NULL);
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setstacksize(&a, 64 * 1024));
	size_t ss;
	CHECK_OK(pthread_attr_getstacksize(&a, &ss));
	CHECK(ss == 64 * 1024);
	for (long i = 0; i < want; i++) {
		int err = pthread_create(&t[i], &a, worker, NULL);
		if (err == EAGAIN && !tp_expect_ult()) {
			/* The machine's limit on kernel threads, not a bug in the
			 * C library: skip (after cleaning up). */
			fprintf(stderr, "native pthread_create failed at thread %ld: %s\n", i,
				strerror(err));
			pthread_mutex_lock(&m);
			want = i;
			released = 1;
			pthread_cond_broadcast(&release_cv);
			pthread_mutex_unlock(&m);
			for (long j = 0; j < i; j++)
				pthread_join(t[j], NULL);
			return 77;
		}
		CHECK_OK(err);
	}
	CHECK_OK(pthread_attr_destroy(&a));

	pthread_mutex_lock(&m);
	while (started < want)
		CHECK_OK(pthread_cond_wait(&all_started, &m));
	pthread_mutex_unlock(&m);
	tp_check_kernel_threads((int)want);

	pthread_mutex_lock(&m);
	released = 1;
	CHECK_OK(pthread_cond_broadcast(&release_cv));
	pthread_mutex_unlock(&m);
	for (long i = 0; i < want; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK(finished == want);
	free(t);
	printf("alive: ok (%ld threads)\n", want);
	return 0;
}
