/* Thread-specific data with every key the process can have (up to
 * PTHREAD_KEYS_MAX): libppl keeps a few slots in the TCB and allocates
 * the others on demand, so this covers keys on both sides, on threads
 * that reuse pooled TCBs.  Checks: unset keys read NULL on every new
 * thread (a recycled TCB carries no value of its predecessor), each
 * destructor runs once with its own value, a destructor that stores a
 * value (in a key never set before on that thread) gets another round,
 * a deleted key runs no destructor, and a key re-created in its place
 * reads NULL, also on a thread that held a value of the deleted one. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>

#include "tp_util.h"

#define ROUNDS 40

static pthread_key_t keys[PTHREAD_KEYS_MAX];
static int nkeys;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long calls[PTHREAD_KEYS_MAX];   /* destructor calls, per key index */
static long bad;                        /* destructor calls with a wrong value */

/* Values are tagged with the key's index and the round: (round << 16) | i + 1. */
static void *value_of(int i, int round)
{
	return (void *)(((uintptr_t)round << 16) | (uintptr_t)(i + 1));
}

static int my_round;   /* of the one thread that runs at a time */

static void destr(void *v)
{
	uintptr_t x = (uintptr_t)v;
	int i = (int)(x & 0xffff) - 1;
	pthread_mutex_lock(&m);
	if (i < 0 || i >= nkeys || (int)(x >> 16) != my_round)
		bad++;
	else
		calls[i]++;
	pthread_mutex_unlock(&m);
}

/* Sets every key, after checking they all read NULL. */
static void *set_all(void *arg)
{
	my_round = (int)(intptr_t)arg;
	for (int i = 0; i < nkeys; i++)
		CHECK(pthread_getspecific(keys[i]) == NULL);
	for (int i = 0; i < nkeys; i++)
		CHECK_OK(pthread_setspecific(keys[i], value_of(i, my_round)));
	for (int i = nkeys - 1; i >= 0; i--)
		CHECK(pthread_getspecific(keys[i]) == value_of(i, my_round));
	/* Storing NULL clears, and runs no destructor. */
	CHECK_OK(pthread_setspecific(keys[nkeys - 1], NULL));
	CHECK(pthread_getspecific(keys[nkeys - 1]) == NULL);
	return NULL;
}

/* Sets only the last key (far beyond any inline slots), or nothing. */
static void *set_last(void *arg)
{
	my_round = (int)(intptr_t)arg;
	for (int i = 0; i < nkeys; i++)
		CHECK(pthread_getspecific(keys[i]) == NULL);
	if (my_round & 1)
		CHECK_OK(pthread_setspecific(keys[nkeys - 1], value_of(nkeys - 1, my_round)));
	else   /* NULL into a key whose storage the thread does not have */
		CHECK_OK(pthread_setspecific(keys[nkeys - 1], NULL));
	return NULL;
}

/* A destructor of key 0 stores into the last key: a second round. */
static pthread_key_t chain_lo, chain_hi;
static int chain_hi_calls;

static void chain_hi_destr(void *v)
{
	CHECK(v == (void *)&chain_hi);
	chain_hi_calls++;
}

static void chain_lo_destr(void *v)
{
	CHECK(v == (void *)&chain_lo);
	CHECK(pthread_getspecific(chain_hi) == NULL);
	CHECK_OK(pthread_setspecific(chain_hi, &chain_hi));
}

static void *chain(void *arg)
{
	CHECK_OK(pthread_setspecific(chain_lo, &chain_lo));
	return arg;
}

/* Holds a value of `victim` while main deletes it. */
static pthread_barrier_t bar;
static pthread_key_t victim, again;
static int victim_calls;

static void victim_destr(void *v)
{
	(void)v;
	victim_calls++;
}

static void *hold_victim(void *arg)
{
	CHECK_OK(pthread_setspecific(victim, &victim_calls));
	pthread_barrier_wait(&bar);   /* main deletes the key */
	pthread_barrier_wait(&bar);   /* and made another, maybe in its place */
	if (arg == NULL)   /* the other holder exits with the value in place */
		CHECK(pthread_getspecific(again) == NULL);
	return NULL;
}

static void *read_new(void *arg)
{
	pthread_key_t k = *(pthread_key_t *)arg;
	CHECK(pthread_getspecific(k) == NULL);
	return NULL;
}

int main(void)
{
	alarm(60);
	while (nkeys < PTHREAD_KEYS_MAX) {
		int err = pthread_key_create(&keys[nkeys], destr);
		if (err == EAGAIN)
			break;
		CHECK_OK(err);
		nkeys++;
	}
	/* The C library and libppl may hold a few keys themselves. */
	CHECK(nkeys >= PTHREAD_KEYS_MAX - 16);

	/* One thread at a time: each reuses the last one's TCB. */
	for (int r = 1; r <= ROUNDS; r++) {
		pthread_t t;
		CHECK_OK(pthread_create(&t, NULL, (r % 3) ? set_all : set_last, (void *)(intptr_t)r));
		CHECK_OK(pthread_join(t, NULL));
	}
	long full = 0, last = 0;
	for (int r = 1; r <= ROUNDS; r++) {
		if (r % 3)
			full++;
		else if (r & 1)
			last++;
	}
	CHECK(bad == 0);
	for (int i = 0; i < nkeys - 1; i++)
		CHECK(calls[i] == full);
	CHECK(calls[nkeys - 1] == last);
	/* The main thread's values are its own. */
	for (int i = 0; i < nkeys; i++)
		CHECK(pthread_getspecific(keys[i]) == NULL);
	CHECK_OK(pthread_setspecific(keys[nkeys - 1], &bad));
	CHECK(pthread_getspecific(keys[nkeys - 1]) == &bad);
	CHECK_OK(pthread_setspecific(keys[nkeys - 1], NULL));

	/* Free two keys: one low, one high, for the next checks. */
	CHECK_OK(pthread_key_delete(keys[0]));
	CHECK_OK(pthread_key_delete(keys[nkeys - 1]));
	CHECK_OK(pthread_key_create(&chain_lo, chain_lo_destr));
	CHECK_OK(pthread_key_create(&chain_hi, chain_hi_destr));
	pthread_t t;
	for (int r = 0; r < 4; r++) {
		CHECK_OK(pthread_create(&t, NULL, chain, NULL));
		CHECK_OK(pthread_join(t, NULL));
	}
	CHECK(chain_hi_calls == 4);

	/* A deleted key runs no destructor; its re-creation reads NULL. */
	CHECK_OK(pthread_key_delete(chain_hi));
	CHECK_OK(pthread_key_create(&victim, victim_destr));
	CHECK_OK(pthread_barrier_init(&bar, NULL, 3));
	pthread_t t2;
	CHECK_OK(pthread_create(&t, NULL, hold_victim, NULL));
	CHECK_OK(pthread_create(&t2, NULL, hold_victim, &victim));
	pthread_barrier_wait(&bar);
	CHECK_OK(pthread_key_delete(victim));
	CHECK_OK(pthread_key_create(&again, victim_destr));
	pthread_barrier_wait(&bar);
	CHECK_OK(pthread_join(t, NULL));
	CHECK_OK(pthread_join(t2, NULL));
	CHECK(victim_calls == 0);
	CHECK_OK(pthread_create(&t, NULL, read_new, &again));
	CHECK_OK(pthread_join(t, NULL));
	CHECK(pthread_getspecific(again) == NULL);
	CHECK(victim_calls == 0);
	CHECK_OK(pthread_barrier_destroy(&bar));
	puts("tsd-many: ok");
	return 0;
}
