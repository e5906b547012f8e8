/* bench_ctxswitch [N]: the raw cost of one context switch (vpdep's
 * ctx_switch*, no scheduler), as a ping-pong between two contexts, N round
 * trips (default 1000000).  Six variants in the same run, interleaved
 * over 11 repetitions; the minimum (the machine's cost, free of
 * interference from other processes) and the median are printed:
 *   shared        ctx_switch           (shared TLS mode)
 *   tls-wrfsbase  ctx_switch_tls       with the wrfsbase instruction
 *   tls-prctl     ctx_switch_tls       with the arch_prctl system call
 *   tls-ldt       ctx_switch_tls       loading an LDT selector into %fs (a
 *                 copy of the thread's TCB header below 4 GiB; only where
 *                 modify_ldt works)
 *   call-shared / call-tls: ctx_switch_call[_tls] with an empty callback,
 *                 the form the scheduler uses.
 * Both contexts use the calling thread's own TLS block, so the FS write is
 * real but harmless. */
#define _GNU_SOURCE 1
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "context.h"

extern unsigned char ctx_have_wrfsbase;

static struct ctx main_ctx, peer_ctx;
static long rounds;
static int mode;   /* 0 plain, 1 tls, 2 call, 3 call+tls */

static void nop_cb(void *arg)
{
	(void)arg;
}

static void bounce(struct ctx *from, struct ctx *to)
{
	switch (mode) {
	case 0: ctx_switch(from, to); break;
	case 1: ctx_switch_tls(from, to); break;
	case 2: ctx_switch_call(from, to, nop_cb, NULL); break;
	default: ctx_switch_call_tls(from, to, nop_cb, NULL); break;
	}
}

static void peer(void *arg)
{
	(void)arg;
	for (;;)
		bounce(&peer_ctx, &main_ctx);
}

/* sel: the contexts load selectors sel (peer) and sel2 (main) during the
 * timed loop (their blocks hold copies of the TCB header: self pointers,
 * canary); the last switch back gives main its own thread pointer again. */
static double run_sel(int m, unsigned sel, unsigned sel2)
{
	static char stack[65536] __attribute__((aligned(16)));
	mode = m;
	ctx_make(&peer_ctx, stack, sizeof stack, peer, NULL);
	peer_ctx.tls = ctx_tls_self();
	main_ctx.tls = ctx_tls_self();
	peer_ctx.tls_sel = sel;
	main_ctx.tls_sel = sel2;
	bounce(&main_ctx, &peer_ctx);   /* warm up, and start the peer */
	long long t0 = bench_now_ns();
	for (long i = 0; i < rounds; i++)
		bounce(&main_ctx, &peer_ctx);
	long long t1 = bench_now_ns();
	main_ctx.tls_sel = 0;
	bounce(&main_ctx, &peer_ctx);
	return (double)(t1 - t0) / (2.0 * rounds);
}

static double run(int m)
{
	return run_sel(m, 0, 0);
}

/* Selectors for two low copies of this thread's TCB header (sel2 the
 * second), or 0. */
static unsigned sel2;

static unsigned ldt_selector(void)
{
	unsigned sel = 0;
	if (ctx_tls_setup(CTX_TLS_LDT, NULL) == CTX_TLS_LDT) {
		uintptr_t *blk = ctx_tls_low_alloc(4096, 64);
		if (blk) {
			memcpy(blk, ctx_tls_self(), 0x40);
			blk[0] = blk[2] = (uintptr_t)blk;
			sel = ctx_tls_selector(blk);
		}
		if (sel && (blk = ctx_tls_low_alloc(4096, 64)) != NULL) {
			memcpy(blk, ctx_tls_self(), 0x40);
			blk[0] = blk[2] = (uintptr_t)blk;
			sel2 = ctx_tls_selector(blk);
		}
	}
	return sel;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	rounds = bench_arg(argc, argv, 1, 1000000);
	unsigned sel = ldt_selector();
	bool wrfs = ctx_tls_setup(CTX_TLS_AUTO, NULL) == CTX_TLS_INSN;
	enum { REPS = 11, NV = 6 };
	const char *names[NV] = { "shared", "tls-wrfsbase", "tls-prctl", "call-shared", "call-tls",
				  "tls-ldt" };
	double r[NV][REPS];
	for (int k = 0; k < REPS; k++) {
		r[0][k] = run(0);
		ctx_have_wrfsbase = wrfs;
		r[1][k] = run(1);
		ctx_have_wrfsbase = 0;
		r[2][k] = run(1);
		r[5][k] = sel && sel2 ? run_sel(1, sel, sel2) : 0;
		ctx_have_wrfsbase = wrfs;
		r[3][k] = run(2);
		r[4][k] = run(3);
	}
	for (int v = 0; v < NV; v++) {
		if ((v == 1 && !wrfs) || (v == 5 && !(sel && sel2)))
			continue;
		qsort(r[v], REPS, sizeof r[v][0], cmp);
		printf("ctxswitch-%s %.1f ns/op median=%.1f n=%ld\n", names[v], r[v][0], r[v][REPS / 2],
		       rounds);
	}
	return 0;
}
