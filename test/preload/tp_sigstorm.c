/* Process-directed signals whose handlers call sem_post, sent while every
 * thread runs the library's locked paths (contended mutexes, condition
 * variables, yields, thread creation).  Under libppl a signal may land on a
 * VP that holds one of its spin locks; the handler must not run there (it
 * would take the lock again and spin forever), so this program hangs if
 * libppl runs it.  The signals come from a child process.  Also: the handler gets the siginfo kill() made, oldact
 * and signal() report the application's handlers, SA_RESETHAND and
 * sysv_signal reset after one delivery. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "tp_util.h"

enum { WORKERS = 6, SIGNALS = 3000 };

static sem_t posted;
static atomic_int handled, bad_info, stop;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long shared;

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	if (sig != SIGUSR1 || si->si_code != SI_USER || si->si_pid == getpid() || uc == NULL)
		atomic_fetch_add(&bad_info, 1);
	atomic_fetch_add(&handled, 1);
	sem_post(&posted);   /* async-signal-safe; under libppl it takes a lock */
	errno = saved;
}

static void *yielder(void *arg)
{
	sched_yield();
	return arg;
}

static void *worker(void *arg)
{
	long id = (long)arg;
	while (!atomic_load(&stop)) {
		CHECK_OK(pthread_mutex_lock(&mu));
		shared++;
		if (id == 0)
			pthread_cond_broadcast(&cv);
		else if (shared % 7 == 0) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 100000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			int r = pthread_cond_timedwait(&cv, &mu, &ts);
			CHECK(r == 0 || r == ETIMEDOUT);
		}
		CHECK_OK(pthread_mutex_unlock(&mu));
		sched_yield();
		if (id == 1) {
			pthread_t t;
			CHECK_OK(pthread_create(&t, NULL, yielder, NULL));
			CHECK_OK(pthread_join(t, NULL));
		}
	}
	return NULL;
}

static atomic_int hup, term;
static void on_hup(int sig)
{
	atomic_fetch_add(&hup, 1);
}
static void on_term(int sig)
{
	atomic_fetch_add(&term, 1);
}

static void handler_bookkeeping(void)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_hup;
	sa.sa_flags = SA_RESETHAND;
	CHECK(sigaction(SIGHUP, &sa, NULL) == 0);
	CHECK(sigaction(SIGHUP, NULL, &old) == 0);
	CHECK(old.sa_handler == on_hup && (old.sa_flags & SA_RESETHAND));
	CHECK(raise(SIGHUP) == 0);
	CHECK(atomic_load(&hup) == 1);
	CHECK(sigaction(SIGHUP, NULL, &old) == 0);
	CHECK(old.sa_handler == SIG_DFL);   /* reset by the delivery */

	CHECK(signal(SIGTERM, on_term) == SIG_DFL);
	CHECK(signal(SIGTERM, SIG_IGN) == on_term);
	CHECK(signal(SIGTERM, SIG_DFL) == SIG_IGN);
	CHECK(sysv_signal(SIGTERM, on_term) == SIG_DFL);
	CHECK(raise(SIGTERM) == 0);
	CHECK(atomic_load(&term) == 1);
	CHECK(signal(SIGTERM, SIG_DFL) == SIG_DFL);   /* one-shot */
	CHECK(signal(0, on_term) == SIG_ERR && errno == EINVAL);
	CHECK(sigaction(65, &sa, NULL) == -1 && errno == EINVAL);
	/* libppl keeps 63 and 64 for itself, above SIGRTMAX, as glibc keeps
	 * 32 and 33 below SIGRTMIN (tp_sigreserved.c checks the rest). */
	if (tp_expect_ult()) {
		CHECK(sigaction(__SIGRTMAX, &sa, NULL) == -1 && errno == EINVAL);
		CHECK(sigaction(__SIGRTMAX - 1, &sa, NULL) == -1 && errno == EINVAL);
	}
}

int main(void)
{
	handler_bookkeeping();

	CHECK(sem_init(&posted, 0, 0) == 0);
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_usr1;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	CHECK(sigaction(SIGUSR1, NULL, &old) == 0);
	CHECK(old.sa_sigaction == on_usr1 && (old.sa_flags & SA_SIGINFO));

	/* The sender is another process: a kill() from a thread of this one
	 * would be handled by that thread, on its way out of the call, never
	 * inside a lock.  It waits for each signal to be handled (ack, a
	 * process-shared semaphore) before it sends the next. */
	sem_t *ack = mmap(NULL, sizeof *ack, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			  -1, 0);
	CHECK(ack != MAP_FAILED && sem_init(ack, 1, 0) == 0);
	pthread_t w[WORKERS];
	for (long i = 0; i < WORKERS; i++)
		CHECK_OK(pthread_create(&w[i], NULL, worker, (void *)i));
	pid_t parent = getpid(), child = fork();
	CHECK(child >= 0);
	if (child == 0) {
		for (int i = 0; i < SIGNALS; i++) {
			if (kill(parent, SIGUSR1) != 0)
				_exit(2);
			while (sem_wait(ack) != 0)
				if (errno != EINTR)
					_exit(3);
		}
		_exit(0);
	}
	for (int i = 0; i < SIGNALS; i++) {
		while (sem_wait(&posted) != 0)
			CHECK(errno == EINTR);
		CHECK(sem_post(ack) == 0);
	}
	int status;
	CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0);
	atomic_store(&stop, 1);
	for (int i = 0; i < WORKERS; i++)
		CHECK_OK(pthread_join(w[i], NULL));
	CHECK(atomic_load(&handled) == SIGNALS);
	CHECK(atomic_load(&bad_info) == 0);
	CHECK(sem_destroy(&posted) == 0);
	printf("sigstorm: ok (%ld critical sections)\n", shared);
	return 0;
}
