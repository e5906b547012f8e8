/* Start-up: read the environment, adopt the main thread, and start the VPs
 * lazily at the first pthread_create, so a single-threaded program pays
 * nothing.  Also resizes the VP set (pthread_setconcurrency) and manages
 * the VPs of SCOPE_SYSTEM threads. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pthread_impl.h"

struct runtime ppl_rt PPL_HIDDEN;

extern char __libc_single_threaded;
void ppl_overflow_init(void) PPL_HIDDEN;

#define VP0_IDLE_STACK (256 * 1024)

void ppl_init(void)
{
	static _Atomic int done;
	if (atomic_exchange(&done, 1))
		return;
	ppl_env_init();
	tls_mode_init(ppl_env_tls_per_thread);
	struct ult *m = &ppl_rt.main_ult;
	m->is_main = true;
	m->foreign = true;
	m->id = 1;
	m->sched_policy = SCHED_OTHER;
	m->inherit_sched = true;
	m->ktid = getpid();
	m->sigmask = vp_get_sigmask();
	atomic_store(&m->state, ULT_RUNNING);
	atomic_store(&ppl_rt.nthreads, 1);
	void *lo;
	size_t size;
	if (vp_kthread_stack(&lo, &size) == 0)
		m->stack = (struct stack){ .lo = lo, .size = size, .user = true };
	m->attr_guard = (size_t)sysconf(_SC_PAGESIZE);
}

static int default_vps(void)
{
	if (ppl_rt.env_vps)
		return ppl_rt.env_vps;
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

static struct vproc *vproc_new(int id)
{
	struct vproc *v = aligned_alloc(64, (sizeof *v + 63) & ~(size_t)63);
	if (v == NULL)
		return NULL;
	memset(v, 0, sizeof *v);
	v->vp.id = id;
	atomic_store(&v->next_deadline, INT64_MAX);
	return v;
}

static void vp0_idle(void *arg)
{
	sched_vp_main(arg);
}

/* Caller holds ppl_rt.lock. */
static int start_vps(int from, int to)
{
	for (int i = from; i < to; i++) {
		struct vproc *v = ppl_rt.vps[i];
		if (v == NULL) {
			v = vproc_new(i);
			if (v == NULL)
				return EAGAIN;
			/* Publish a fully initialised VP: stealers read the array unlocked. */
			atomic_thread_fence(memory_order_release);
			ppl_rt.vps[i] = v;
			if (i >= ppl_rt.nvps_total)
				ppl_rt.nvps_total = i + 1;
			int err = vp_create(&v->vp, sched_vp_main);
			if (err) {
				ppl_rt.vps[i] = NULL;
				ppl_rt.nvps_total = i;
				free(v);
				return EAGAIN;
			}
			monitor_count_kthread();
		} else if (v->spare) {
			/* The monitor's spare becomes a VP of the set for good
			 * (a loan it serves ends without retiring it). */
			v->spare = false;
			atomic_store(&v->retired, false);
			vp_resume(&v->vp);
		} else if (atomic_load(&v->retired)) {
			atomic_store(&v->retired, false);
			vp_resume(&v->vp);
		}
	}
	return 0;
}

int ppl_runtime_start(void)
{
	if (ppl_likely(atomic_load_explicit(&ppl_rt.started, memory_order_acquire)))
		return 0;
	ppl_init();   /* in case the constructor has not run yet (early callers) */
	spin_lock(&ppl_rt.lock);
	if (atomic_load_explicit(&ppl_rt.started, memory_order_relaxed)) {
		spin_unlock(&ppl_rt.lock);
		return 0;
	}
	int n = ppl_rt.concurrency > 0 ? ppl_rt.concurrency : default_vps();
	if (n > PPL_MAX_VPS)
		n = PPL_MAX_VPS;
	struct vproc *v0 = vproc_new(0);
	if (v0 == NULL || stack_alloc(VP0_IDLE_STACK, (size_t)sysconf(_SC_PAGESIZE),
				      &v0->idle_stack) != 0) {
		free(v0);
		spin_unlock(&ppl_rt.lock);
		return EAGAIN;
	}
	ppl_rt.vps[0] = v0;
	ppl_rt.nvps = n;
	ppl_rt.nvps_total = 1;
	ppl_overflow_init();
	preempt_init();
	__libc_single_threaded = 0;   /* user threads interleave on every VP */

	bool adopt_main = vp_current() == NULL && syscall(SYS_gettid) == getpid();
	if (adopt_main) {
		/* The initial thread becomes the main user thread on VP 0; VP 0's
		 * scheduler loop gets a stack of its own. */
		struct ult *m = &ppl_rt.main_ult;
		vp_adopt(&v0->vp);
		/* Whatever the program blocked while it was single-threaded. */
		m->sigmask = vp_get_sigmask();
		m->foreign = false;
		m->vp = v0;
		v0->current = m;
		ctx_make(&v0->idle_ctx, v0->idle_stack.lo, v0->idle_stack.size, vp0_idle, v0);
		if (tls_per_thread) {
			/* The main thread keeps the process's original block and
			 * may migrate; VP 0's loop needs a block of its own. */
			void *tp = tls_block_new();
			if (tp == NULL) {
				spin_unlock(&ppl_rt.lock);
				return EAGAIN;
			}
			tls_block_set_stack(tp, v0->idle_stack.lo, v0->idle_stack.size);
			vp_set_current_in(tp, &v0->vp);
			v0->idle_ctx.tls = tp;
			m->ctx.tls = ctx_tls_self();
			tls_adopt_main();
		} else {
			/* With TLS shared per VP, the main thread keeps the
			 * process's original TLS block (libraries' state from
			 * before start-up, such as a test harness's) by staying
			 * on VP 0. */
			m->home = v0;
		}
		preempt_vp_start(v0);   /* VP 0's kernel thread is this one */
	} else if (vp_create(&v0->vp, sched_vp_main) != 0) {
		spin_unlock(&ppl_rt.lock);
		return EAGAIN;
	} else {
		monitor_count_kthread();
	}
	int err = start_vps(1, n);
	if (err && ppl_rt.nvps_total > 0) {
		ppl_rt.nvps = ppl_rt.nvps_total;   /* run with the VPs we got */
		err = 0;
	}
	if (err == 0)
		monitor_start();
	atomic_store_explicit(&ppl_rt.started, 1, memory_order_release);
	spin_unlock(&ppl_rt.lock);
	return err;
}

/* ---- concurrency ------------------------------------------------------------ */

int ppl_pthread_getconcurrency(void)
{
	return ppl_rt.concurrency;
}

int ppl_pthread_setconcurrency(int level)
{
	if (level < 0)
		return EINVAL;
	spin_lock(&ppl_rt.lock);
	ppl_rt.concurrency = level;
	if (!atomic_load(&ppl_rt.started)) {
		spin_unlock(&ppl_rt.lock);
		return 0;
	}
	int want = level > 0 ? level : default_vps();
	if (want > PPL_MAX_VPS)
		want = PPL_MAX_VPS;
	int err = 0;
	if (want > ppl_rt.nvps) {
		err = start_vps(ppl_rt.nvps, want);
		if (err)
			want = ppl_rt.nvps_total;
	} else {
		for (int i = want; i < ppl_rt.nvps; i++)   /* VP 0 is never retired */
			atomic_store(&ppl_rt.vps[i]->retired, true);
	}
	ppl_rt.nvps = want;
	spin_unlock(&ppl_rt.lock);
	return err;
}

/* ---- VPs of SCOPE_SYSTEM threads ----------------------------------------------- */

int ppl_bind_new_vp(struct ult *t)
{
	spin_lock(&ppl_rt.lock);
	struct vproc *v = ppl_rt.spare_bound;
	if (v)
		ppl_rt.spare_bound = v->spare_next;
	spin_unlock(&ppl_rt.lock);
	t->bound = true;
	t->vp = NULL;
	if (v) {
		v->bound_to = t;
		t->vp = v;
		t->home = v;
		atomic_store(&v->retired, false);
		sched_push(t);
		return 0;
	}
	static _Atomic int bound_ids = PPL_MAX_VPS;   /* never mistaken for a shared VP */
	v = vproc_new(atomic_fetch_add(&bound_ids, 1));
	if (v == NULL)
		return EAGAIN;
	v->bound_to = t;
	t->vp = v;
	t->home = v;
	/* Queue the thread before the VP exists: its loop finds it at once. */
	sched_push(t);
	int err = vp_create(&v->vp, sched_vp_main);
	if (err) {
		free(v);
		t->bound = false;
		t->home = NULL;
		return EAGAIN;
	}
	monitor_count_kthread();
	return 0;
}

void ppl_unbind_vp(struct ult *t)
{
	struct vproc *v = t->vp;
	v->bound_to = NULL;
	atomic_store(&v->retired, true);
	spin_lock(&ppl_rt.lock);
	v->spare_next = ppl_rt.spare_bound;
	ppl_rt.spare_bound = v;
	spin_unlock(&ppl_rt.lock);
}
