/* References bound to explicit glibc symbol versions, as old binaries have
 * them: pthread_create@GLIBC_2.2.5 (the default is GLIBC_2.34 now),
 * pthread_cond_*@GLIBC_2.3.2, pthread_mutex_*@GLIBC_2.2.5.  libppl's
 * unversioned definitions must catch them: while 32 threads wait on the
 * condition variable, the kernel thread count shows whose threads they are.
 * x86_64 only (the version names are that architecture's). */
#include <pthread.h>

#include "tp_util.h"

#define THREADS 32

int old_create(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
int old_join(pthread_t, void **);
int old_mutex_lock(pthread_mutex_t *);
int old_mutex_unlock(pthread_mutex_t *);
int cond_wait_232(pthread_cond_t *, pthread_mutex_t *);
int cond_broadcast_232(pthread_cond_t *);
__asm__(".symver old_create, pthread_create@GLIBC_2.2.5");
__asm__(".symver old_join, pthread_join@GLIBC_2.2.5");
__asm__(".symver old_mutex_lock, pthread_mutex_lock@GLIBC_2.2.5");
__asm__(".symver old_mutex_unlock, pthread_mutex_unlock@GLIBC_2.2.5");
__asm__(".symver cond_wait_232, pthread_cond_wait@GLIBC_2.3.2");
__asm__(".symver cond_broadcast_232, pthread_cond_broadcast@GLIBC_2.3.2");

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int waiting, go;

static void *waiter(void *arg)
{
	CHECK_OK(old_mutex_lock(&m));
	waiting++;
	CHECK_OK(cond_broadcast_232(&cv));
	while (!go)
		CHECK_OK(cond_wait_232(&cv, &m));
	CHECK_OK(old_mutex_unlock(&m));
	return arg;
}

int main(void)
{
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(old_create(&t[i], NULL, waiter, &t[i]));
	CHECK_OK(old_mutex_lock(&m));
	while (waiting < THREADS)
		CHECK_OK(cond_wait_232(&cv, &m));
	CHECK_OK(old_mutex_unlock(&m));
	tp_check_kernel_threads(THREADS);
	CHECK_OK(old_mutex_lock(&m));
	go = 1;
	CHECK_OK(cond_broadcast_232(&cv));
	CHECK_OK(old_mutex_unlock(&m));
	for (int i = 0; i < THREADS; i++) {
		void *r;
		CHECK_OK(old_join(t[i], &r));
		CHECK(r == &t[i]);
	}
	puts("versions: ok");
	return 0;
}
