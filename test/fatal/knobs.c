/* Starts one thread so that every knob is read and used. */
#include <pthread.h>

static void *nop(void *arg) { return arg; }

int main(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, nop, NULL) != 0)
		return 1;
	return pthread_join(t, NULL);
}
