/* PPL_STATS=1: scheduler counters summed over the VPs, printed at exit. */
#include <stdio.h>
#include <unistd.h>

#include "base.h"
#include "monitor.h"
#include "ppl.h"
#include "runtime.h"
#include "vproc.h"

void ppl_stats_report(void)
{
	if (!ppl_rt.stats)
		return;
	unsigned long sw = 0, st = 0, pk = 0, wk = 0, cr = 0, sc = 0, pe = 0, pd = 0, mw = 0, mk = 0;
	for (int i = 0; i < ppl_rt.nvps_total; i++) {
		struct vproc *v = ppl_rt.vps[i];
		if (v == NULL)
			continue;
		sw += atomic_load_explicit(&v->stats.switches, memory_order_relaxed);
		st += v->stats.steals;
		pk += v->stats.parks;
		wk += v->stats.wakes;
		cr += v->stats.creates;
		sc += v->stats.syscalls;
		pe += v->stats.preempts;
		pd += v->stats.preempts_deferred;
		mw += v->stats.mutex_waits;
		mk += v->stats.mutex_wakes;
	}
	char buf[512];
	int n = snprintf(buf, sizeof buf,
			 "libppl stats: vps=%d backend=%s threads-created=%lu switches=%lu "
			 "parks=%lu wakes=%lu steals=%lu syscalls=%lu handoffs=%lu handoffs-failed=%lu "
			 "preemptions=%lu preemptions-deferred=%lu mutex-waits=%lu mutex-wakes=%lu "
			 "tls=%s ldt-entries=%u\n",
			 ppl_rt.nvps, vp_backend_name(), cr, sw, pk, wk, st, sc, monitor_handoffs(),
			 monitor_handoff_fails(), pe, pd, mw, mk, tls_mode_name(), ctx_tls_selectors_used());
	if (n > 0)
		vp_write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

PPL_API void ppl_stats_print(void)
{
	bool was = ppl_rt.stats;
	ppl_rt.stats = true;
	ppl_stats_report();
	ppl_rt.stats = was;
}

PPL_API int ppl_vp_count(void)
{
	return atomic_load_explicit(&ppl_rt.started, memory_order_acquire) ? ppl_rt.nvps : 0;
}

PPL_API int ppl_current_vp(void)
{
	struct vp *v = vp_current();
	return v ? v->id : -1;
}
