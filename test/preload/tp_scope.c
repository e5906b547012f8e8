/* tp_scope: threads created with PTHREAD_SCOPE_SYSTEM, the scope programs
 * ask for because it is NPTL's only one (CPython does), are user-level
 * threads on libppl unless PPL_SYSTEM_SCOPE=bound asks for a kernel thread
 * each: 48 of them alive at once fit on the VPs' kernel threads.  Each
 * reports the scope it was created with (pthread_getattr_np), and all of
 * them run to the end.  Natively each is a kernel thread. */
#include <pthread.h>

#include "tp_util.h"

#define N 48

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int started, finished, released;

static void *worker(void *arg)
{
	pthread_attr_t a;
	int scope = -1;
	CHECK_OK(pthread_getattr_np(pthread_self(), &a));
	CHECK_OK(pthread_attr_getscope(&a, &scope));
	CHECK_OK(pthread_attr_destroy(&a));
	CHECK(scope == PTHREAD_SCOPE_SYSTEM);
	pthread_mutex_lock(&m);
	started++;
	pthread_cond_broadcast(&cv);
	while (!released)
		CHECK_OK(pthread_cond_wait(&cv, &m));
	finished++;
	pthread_mutex_unlock(&m);
	return arg;
}

int main(void)
{
	alarm(30);
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setscope(&a, PTHREAD_SCOPE_SYSTEM));
	CHECK_OK(pthread_attr_setstacksize(&a, 64 * 1024));
	pthread_t t[N];
	for (int i = 0; i < N; i++)
		CHECK_OK(pthread_create(&t[i], &a, worker, NULL));
	CHECK_OK(pthread_attr_destroy(&a));
	pthread_mutex_lock(&m);
	while (started < N)
		CHECK_OK(pthread_cond_wait(&cv, &m));
	pthread_mutex_unlock(&m);

	const char *knob = getenv("PPL_SYSTEM_SCOPE");
	if (tp_expect_ult() && knob != NULL && strcmp(knob, "bound") == 0) {
		/* Binding asked for: a kernel thread each, as natively, in the
		 * program's process or, with the process VP backend, in a VP
		 * process of its own. */
		int k = tp_program_kernel_threads();
		CHECK(k >= N + 1);
		printf("bound: %d threads alive, %d kernel threads\n", N, k);
	} else {
		tp_check_kernel_threads(N);
	}

	pthread_mutex_lock(&m);
	released = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&m);
	for (int i = 0; i < N; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK(finished == N);
	puts("ok");
	return 0;
}
