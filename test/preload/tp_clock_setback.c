/* Timed waits on CLOCK_REALTIME (and clock_nanosleep on CLOCK_REALTIME and
 * CLOCK_TAI) never end before that clock reaches their deadline, even when
 * the clock is set back while they wait: NPTL's waits are the kernel's,
 * on that clock.  Every timed wait of the family, private and
 * process-shared, waits for a deadline 600 ms away; the clock is set back
 * 1 s after 200 ms; each checks, as it returns, that the clock reads its
 * deadline.  Sets the system clock (then forward again by as much), so it
 * runs alone; skipped (77) without the right to set it. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <semaphore.h>

#include "tp_util.h"

#define NS 1000000000LL
#define WAIT_NS 600000000LL
#define SET_AFTER_NS 200000000LL
#define SET_BACK_NS 1000000000LL

enum kind {
	COND, COND_PSHARED, SEM, SEM_PSHARED, MUTEX, MUTEX_PSHARED, MUTEX_ROBUST, RWLOCK_WR,
	RWLOCK_RD_PSHARED, SLEEP_REALTIME, SLEEP_TAI, TIMEDJOIN, NKINDS
};
static const char *const names[NKINDS] = {
	"pthread_cond_timedwait", "pthread_cond_timedwait (pshared)", "sem_timedwait",
	"sem_timedwait (pshared)", "pthread_mutex_timedlock", "pthread_mutex_timedlock (pshared)",
	"pthread_mutex_timedlock (robust)", "pthread_rwlock_timedwrlock",
	"pthread_rwlock_timedrdlock (pshared)", "clock_nanosleep (CLOCK_REALTIME)",
	"clock_nanosleep (CLOCK_TAI)", "pthread_timedjoin_np",
};

static pthread_mutex_t locks[4];     /* cond, cond pshared, held, held pshared */
static pthread_mutex_t robust;       /* held */
static pthread_cond_t conds[2];
static sem_t sems[2];
static pthread_rwlock_t rw[2];       /* held for reading, for writing */
static pthread_t sleeper;            /* never ends until main says */
static sem_t sleeper_go;

static int64_t now_ns(clockid_t c)
{
	struct timespec ts;
	CHECK(clock_gettime(c, &ts) == 0);
	return ts.tv_sec * NS + ts.tv_nsec;
}

static struct timespec ts_of(int64_t ns)
{
	return (struct timespec){ ns / NS, ns % NS };
}

/* Step CLOCK_REALTIME by d ns; errno as clock_settime's. */
static int step_clock(int64_t d)
{
	struct timespec ts = ts_of(now_ns(CLOCK_REALTIME) + d);
	return clock_settime(CLOCK_REALTIME, &ts);
}

static void *wait_one(void *arg)
{
	enum kind k = (enum kind)(long)arg;
	clockid_t clk = k == SLEEP_TAI ? CLOCK_TAI : CLOCK_REALTIME;
	int64_t deadline = now_ns(clk) + WAIT_NS;
	struct timespec abs = ts_of(deadline);
	int err = 0, want = ETIMEDOUT;
	switch (k) {
	case COND:
	case COND_PSHARED:
		CHECK_OK(pthread_mutex_lock(&locks[k - COND]));
		err = pthread_cond_timedwait(&conds[k - COND], &locks[k - COND], &abs);
		CHECK_OK(pthread_mutex_unlock(&locks[k - COND]));
		break;
	case SEM:
	case SEM_PSHARED:
		err = sem_timedwait(&sems[k - SEM], &abs) == 0 ? 0 : errno;
		break;
	case MUTEX:
	case MUTEX_PSHARED:
		err = pthread_mutex_timedlock(&locks[2 + k - MUTEX], &abs);
		break;
	case MUTEX_ROBUST:
		err = pthread_mutex_timedlock(&robust, &abs);
		break;
	case RWLOCK_WR:
		err = pthread_rwlock_timedwrlock(&rw[0], &abs);
		break;
	case RWLOCK_RD_PSHARED:
		err = pthread_rwlock_timedrdlock(&rw[1], &abs);
		break;
	case SLEEP_REALTIME:
	case SLEEP_TAI:
		want = 0;
		err = clock_nanosleep(clk, TIMER_ABSTIME, &abs, NULL);
		break;
	case TIMEDJOIN:
		err = pthread_timedjoin_np(sleeper, NULL, &abs);
		break;
	default:
		CHECK(0);
	}
	int64_t end = now_ns(clk);
	if (err != want || end < deadline) {
		fprintf(stderr, "%s: returned %s at %.3f s before its deadline\n", names[k],
			err ? strerror(err) : "0", (double)(deadline - end) / NS);
		return (void *)1;
	}
	return NULL;
}

static void *sleep_long(void *arg)
{
	(void)arg;
	while (sem_wait(&sleeper_go) != 0)
		;
	return NULL;
}

static void init_objects(void)
{
	pthread_mutexattr_t ma;
	pthread_condattr_t ca;
	pthread_rwlockattr_t ra;
	CHECK_OK(pthread_mutexattr_init(&ma));
	CHECK_OK(pthread_condattr_init(&ca));
	CHECK_OK(pthread_rwlockattr_init(&ra));
	for (int shared = 0; shared < 2; shared++) {
		int ps = shared ? PTHREAD_PROCESS_SHARED : PTHREAD_PROCESS_PRIVATE;
		CHECK_OK(pthread_mutexattr_setpshared(&ma, ps));
		CHECK_OK(pthread_condattr_setpshared(&ca, ps));
		CHECK_OK(pthread_rwlockattr_setpshared(&ra, ps));
		CHECK_OK(pthread_mutex_init(&locks[shared], &ma));
		CHECK_OK(pthread_mutex_init(&locks[2 + shared], &ma));
		CHECK_OK(pthread_cond_init(&conds[shared], &ca));
		CHECK_OK(pthread_rwlock_init(&rw[shared], &ra));
		CHECK(sem_init(&sems[shared], shared, 0) == 0);
	}
	CHECK_OK(pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_PRIVATE));
	CHECK_OK(pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST));
	CHECK_OK(pthread_mutex_init(&robust, &ma));
	/* Held by main for the whole test. */
	CHECK_OK(pthread_mutex_lock(&locks[2]));
	CHECK_OK(pthread_mutex_lock(&locks[3]));
	CHECK_OK(pthread_mutex_lock(&robust));
	CHECK_OK(pthread_rwlock_rdlock(&rw[0]));
	CHECK_OK(pthread_rwlock_wrlock(&rw[1]));
	CHECK(sem_init(&sleeper_go, 0, 0) == 0);
	CHECK_OK(pthread_create(&sleeper, NULL, sleep_long, NULL));
}

int main(void)
{
	alarm(30);
	if (step_clock(0) != 0) {
		printf("cannot set CLOCK_REALTIME (%s): skipped\n", strerror(errno));
		return 77;
	}
	init_objects();
	pthread_t t[NKINDS];
	for (long k = 0; k < NKINDS; k++)
		CHECK_OK(pthread_create(&t[k], NULL, wait_one, (void *)k));
	struct timespec nap = ts_of(SET_AFTER_NS);
	while (nanosleep(&nap, &nap) != 0)
		;
	int set = step_clock(-SET_BACK_NS);
	int failed = 0;
	for (int k = 0; k < NKINDS; k++) {
		void *r;
		CHECK_OK(pthread_join(t[k], &r));
		failed += r != NULL;
	}
	CHECK(step_clock(SET_BACK_NS) == 0);
	CHECK(set == 0);
	CHECK(sem_post(&sleeper_go) == 0);
	CHECK_OK(pthread_join(sleeper, NULL));
	CHECK(failed == 0);
	printf("%d timed waits outlasted CLOCK_REALTIME set back %.1f s\n", NKINDS,
	       (double)SET_BACK_NS / NS);
	return 0;
}
