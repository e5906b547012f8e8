/* Raw set_robust_list and get_robust_list (src/preload/syscall.c,
 * src/vpindep/robustlist.c) answer for the calling thread, as on NPTL,
 * where each thread is a kernel thread of its own:
 *
 * - stress-ng's pthread stressor: read the head, set one on the stack, set
 *   the old one back.  Eight threads at once, yielding between the steps so
 *   that on libppl they share VPs: each sees its own head (before, libppl
 *   changed the VP's kernel thread's: a thread read another's stack, a
 *   SIGSEGV once that thread had ended);
 * - get_robust_list by another thread's id gives that thread's head;
 * - a bad length is EINVAL, a bad pointer EFAULT;
 * - a thread that ends with entries on its list: the word that holds its
 *   id gets FUTEX_OWNER_DIED with FUTEX_WAITERS kept, the word that holds
 *   another id is left alone, as the kernel does at a kernel thread's end;
 * - in a fork child the forking thread has its first head back. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <linux/futex.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "tp_util.h"

#define THREADS 8
#define ROUNDS 200

struct entry {
	struct robust_list list;
	uint32_t word;
};

static pthread_barrier_t start;
static struct robust_list_head *volatile shown[THREADS];
static volatile pid_t tids[THREADS];

static struct robust_list_head *get_head(pid_t tid)
{
	struct robust_list_head *h = NULL;
	size_t len = 0;
	CHECK(syscall(SYS_get_robust_list, tid, &h, &len) == 0);
	CHECK(len == sizeof(struct robust_list_head));
	return h;
}

static void set_head(struct robust_list_head *h)
{
	CHECK(syscall(SYS_set_robust_list, h, sizeof *h) == 0);
}

static void *swapper(void *arg)
{
	int i = (int)(intptr_t)arg;
	struct robust_list_head *first = get_head(0), mine;
	mine.list.next = &mine.list;
	mine.futex_offset = 0;
	mine.list_op_pending = NULL;
	tids[i] = gettid();
	pthread_barrier_wait(&start);
	for (int r = 0; r < ROUNDS; r++) {
		struct robust_list_head *old = get_head(0);
		CHECK(old == first);
		set_head(&mine);
		sched_yield();
		CHECK(get_head(0) == &mine);
		shown[i] = &mine;
		sched_yield();
		CHECK(get_head(0) == &mine);
		set_head(old);
		CHECK(get_head(0) == first);
	}
	/* Held for main to read by this thread's id. */
	set_head(&mine);
	shown[i] = &mine;
	pthread_barrier_wait(&start);
	pthread_barrier_wait(&start);
	set_head(first);
	return NULL;
}

static struct entry held, other;
static struct robust_list_head dying_head;

static void *dier(void *arg)
{
	(void)arg;
	uint32_t me = (uint32_t)gettid();
	held.word = me | FUTEX_WAITERS;
	other.word = (me + 1) & FUTEX_TID_MASK;
	dying_head.list.next = &held.list;
	held.list.next = &other.list;
	other.list.next = &dying_head.list;
	dying_head.futex_offset = offsetof(struct entry, word) - offsetof(struct entry, list);
	dying_head.list_op_pending = NULL;
	set_head(&dying_head);
	sched_yield();
	return NULL;   /* ends holding held */
}

int main(void)
{
	alarm(60);
	struct robust_list_head *first = get_head(0);

	/* Errors, as the kernel gives them. */
	struct robust_list_head h;
	errno = 0;
	CHECK(syscall(SYS_set_robust_list, &h, sizeof h + 1) == -1 && errno == EINVAL);
	errno = 0;
	CHECK(syscall(SYS_get_robust_list, 0, (void *)16, &(size_t){ 0 }) == -1 && errno == EFAULT);
	CHECK(get_head(0) == first);

	pthread_t th[THREADS];
	CHECK_OK(pthread_barrier_init(&start, NULL, THREADS + 1));
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(pthread_create(&th[i], NULL, swapper, (void *)(intptr_t)i));
	pthread_barrier_wait(&start);
	pthread_barrier_wait(&start);
	for (int i = 0; i < THREADS; i++)
		CHECK(get_head(tids[i]) == shown[i]);
	CHECK(get_head(0) == first);
	pthread_barrier_wait(&start);
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(pthread_join(th[i], NULL));

	pthread_t d;
	CHECK_OK(pthread_create(&d, NULL, dier, NULL));
	CHECK_OK(pthread_join(d, NULL));
	uint32_t dead = __atomic_load_n(&held.word, __ATOMIC_SEQ_CST);
	CHECK(dead == (FUTEX_OWNER_DIED | FUTEX_WAITERS));
	CHECK((other.word & FUTEX_OWNER_DIED) == 0);

	/* fork: the child's thread has its first head again. */
	set_head(&h);
	h.list.next = &h.list;
	h.futex_offset = 0;
	h.list_op_pending = NULL;
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(get_head(0) == first ? 0 : 3);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(get_head(0) == &h);
	set_head(first);
	puts("ok");
	return 0;
}
