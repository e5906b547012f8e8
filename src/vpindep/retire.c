/* Retiring the helper kernel threads: the VPs other than VP 0, the
 * monitor's spares and the monitor end when the program is back to one
 * thread, so that /proc/self/task lists what an NPTL program's would (the
 * thread left, nothing else); the next pthread_create starts them again as
 * at first start (init.c's restart_vps, as in a forked child).
 *
 * VP 0's idle loop decides, on the initial kernel thread, while the thread
 * left is parked (sleeping, waiting, joining): nothing runs anywhere and
 * that thread cannot call pthread_create meanwhile.  It retires after
 * PPL_RETIRE_MS of that, if VP 0 runs on the initial kernel thread, and
 * nothing needs a helper: no thread queued or running elsewhere, no call
 * handed off, no SCOPE_SYSTEM VP kept for reuse,
 * no signal handler installed (a process-directed signal the kernel gave a
 * VP's kernel thread as it stopped would be lost with it; the signal
 * catcher stays too) and no CPU-time timer ever created (they fire from
 * the VPs' ticks).  Then the helpers stay, as before.
 *
 * The protocol: started becomes STARTED_RETIRING (ppl_runtime_start waits
 * for it to end), every other VP is marked retired (so sched_push queues
 * nowhere but VP 0) and asked to stop at the top of its loop (halt 1), as
 * the monitor is at the top of its own.  Once all have stopped, nothing
 * can change what the check saw but a waker from outside (a foreign
 * thread): if the check still holds, their timers (the parked thread's
 * timeout, armed where it parked) move to VP 0 and they end (halt 2), handing anything
 * queued on them to VP 0; if not, or if one of them picked a thread up
 * before it saw the request, all go on as before (halt 0). */
#include "cpuclock.h"
#include "monitor.h"
#include "runq.h"
#include "runtime.h"
#include "sig.h"
#include "timer.h"
#include "vproc.h"

#define STOP_WAIT_NS 200000000LL   /* a VP or the monitor slower than this to stop: give up */
#define NAP_NS 50000LL

static int64_t quiet_since;   /* VP 0's loop only */
static bool was_retired[PPL_MAX_VPS];

static bool enabled(void)
{
	return ppl_env_retire_ms > 0 && ppl_rt.vp0_initial &&
	       atomic_load_explicit(&ppl_rt.started, memory_order_seq_cst) == 1 &&
	       atomic_load_explicit(&ppl_rt.nthreads, memory_order_seq_cst) == 1 &&
	       ppl_rt.spare_bound == NULL && !sig_catcher_running() &&
	       sig_wrapped_set() == 0 && !cputimer_used();
}

/* Nothing for a helper to do, and nothing running but VP 0's loop. */
static bool quiet(void)
{
	if (atomic_load_explicit(&ppl_rt.nthreads, memory_order_seq_cst) != 1)
		return false;
	for (int i = 0; i < ppl_rt.nvps_total; i++) {
		struct vproc *o = ppl_rt.vps[i];
		if (o == NULL)
			continue;
		if (atomic_load_explicit(&o->rq_len, memory_order_seq_cst) > 0 ||
		    atomic_load_explicit(&o->lent_to, memory_order_seq_cst) != NULL ||
		    atomic_load_explicit(&o->lender, memory_order_seq_cst) != NULL)
			return false;
		if (i == 0)
			continue;
		if (o->dedicated || o->bound_to != NULL ||
		    atomic_load_explicit(&o->cur_prio, memory_order_seq_cst) >= 0 ||
		    atomic_load_explicit(&o->in_syscall, memory_order_seq_cst) != SYS_OUT)
			return false;
	}
	return true;
}

/* 50 us, doubling to 1 ms: the helpers answer within a wake-up each. */
static void nap(int k)
{
	struct timespec ts = ns_to_timespec(NAP_NS << (k < 5 ? k : 5));
	vp_kthread_sleep(CLOCK_MONOTONIC, 0, &ts, NULL);
}

/* Every helper answered `want`.  Stopping (want 1) gives up when a thread
 * runs or waits somewhere (a VP took it before it saw the request). */
static bool wait_acks(int n, int want)
{
	int64_t until = clock_now_ns(CLOCK_MONOTONIC) + STOP_WAIT_NS;
	for (int k = 0;; k++) {
		bool all = monitor_halt_ack() == want ||
			   (want == 1 && monitor_halt_ack() == 2);   /* no monitor */
		for (int i = 1; i < n && all; i++) {
			struct vproc *o = ppl_rt.vps[i];
			if (o != NULL && atomic_load_explicit(&o->halt_ack, memory_order_seq_cst) != want)
				all = false;
		}
		if (all)
			return true;
		if (want == 1 && (!quiet() || clock_now_ns(CLOCK_MONOTONIC) > until))
			return false;
		nap(k);
	}
}

static bool retire_all(void)
{
	spin_lock(&ppl_rt.lock);
	if (atomic_load_explicit(&ppl_rt.started, memory_order_relaxed) != 1 || !quiet()) {
		spin_unlock(&ppl_rt.lock);
		return false;
	}
	atomic_store_explicit(&ppl_rt.started, STARTED_RETIRING, memory_order_seq_cst);
	int n = ppl_rt.nvps_total;
	spin_unlock(&ppl_rt.lock);

	for (int i = 1; i < n; i++) {
		struct vproc *o = ppl_rt.vps[i];
		if (o == NULL)
			continue;
		was_retired[i] = atomic_load(&o->retired);
		atomic_store_explicit(&o->retired, true, memory_order_seq_cst);
		atomic_store_explicit(&o->halt, 1, memory_order_seq_cst);
		vp_resume(&o->vp);
	}
	monitor_halt(1);
	/* A spare the monitor made before it stopped is one more VP: its
	 * loop was not asked to stop. */
	bool ok = wait_acks(n, 1) && quiet() &&
		  __atomic_load_n(&ppl_rt.nvps_total, __ATOMIC_SEQ_CST) == n;
	int verdict = ok ? 2 : 0;
	for (int i = 1; i < n; i++) {
		struct vproc *o = ppl_rt.vps[i];
		if (o == NULL)
			continue;
		if (ok)
			timer_move_all(o, ppl_rt.vps[0]);
		else
			atomic_store_explicit(&o->retired, was_retired[i], memory_order_seq_cst);
		atomic_store_explicit(&o->halt, verdict, memory_order_seq_cst);
		vp_resume(&o->vp);
	}
	monitor_halt(verdict);
	if (!ok) {
		atomic_store_explicit(&ppl_rt.started, 1, memory_order_seq_cst);
		return false;
	}
	wait_acks(n, 2);
	vp_retired();   /* the VP backend's own helpers */
	ppl_runtime_retired();
	return true;
}

static void shorten(int64_t *left, int64_t ns)
{
	if (*left < 0 || ns < *left)
		*left = ns;
}

void retire_poll(struct vproc *v0, int64_t *left)
{
	if (v0 != ppl_rt.vps[0])
		return;
	if (!enabled()) {
		quiet_since = 0;
		return;
	}
	/* The delay counts from the first look with one thread left and
	 * nothing else to do; that thread may run meanwhile (it is still
	 * the only one), but the helpers end only while it is parked. */
	int64_t delay = ppl_env_retire_ms * 1000000LL;
	int64_t now = clock_now_ns(CLOCK_MONOTONIC);
	bool q = quiet();
	if (quiet_since == 0) {
		if (q)
			quiet_since = now;
		shorten(left, delay);
		return;
	}
	if (now - quiet_since < delay) {
		shorten(left, quiet_since + delay - now);
		return;
	}
	if (!q) {
		/* It runs or is queued somewhere: look again soon (a VP
		 * going to sleep also makes this loop look). */
		shorten(left, delay / 4 + 1);
		return;
	}
	quiet_since = 0;
	if (retire_all())
		*left = 0;   /* back to the loop: anything handed over is queued here */
	else
		shorten(left, delay);
}

void retire_nudge(struct vproc *v)
{
	struct vproc *v0 = ppl_rt.vps[0];
	int one = 1;
	if (v != v0 && v0 != NULL && enabled() &&
	    atomic_compare_exchange_strong(&v0->sleeping, &one, 0))
		vp_resume(&v0->vp);
}

void retire_halt_point(struct vproc *v)
{
	atomic_store_explicit(&v->halt_ack, 1, memory_order_seq_cst);
	for (;;) {
		uint32_t seen = vp_wake_count(&v->vp);
		int h = atomic_load_explicit(&v->halt, memory_order_seq_cst);
		if (h == 0) {
			atomic_store_explicit(&v->halt_ack, 0, memory_order_seq_cst);
			return;
		}
		if (h == 2)
			break;
		vp_suspend(&v->vp, seen, -1);
	}
	/* Queued by a waker from outside after the check: VP 0 runs it. */
	struct ult *q;
	while ((q = rq_pop(v)) != NULL)
		rq_push(ppl_rt.vps[0], q);
	vp_terminate_notify(&v->halt_ack, 2);
}
