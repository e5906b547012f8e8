/* The per-thread TLS switch (ctx_switch_tls, ctx_switch_call_tls): the
 * resumed context and a ctx_switch_call_tls callback run with the target's
 * thread pointer, and the caller gets its own back.  The target's "block"
 * is a fake: a page whose first word points at itself (what ctx_tls_self
 * reads) and that carries the real stack-protector canary; the code run on
 * it touches no other TLS.  On x86_64 both ways of writing the FS base are
 * tested (wrfsbase when the kernel allows it, arch_prctl, and an LDT
 * selector for a block below 4 GiB when modify_ldt works). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "context.h"

/* context.S (x86_64 assembly only): nonzero selects wrfsbase. */
extern unsigned char ctx_have_wrfsbase __attribute__((weak));

static struct ctx main_ctx, peer_ctx;
static char peer_stack[64 * 1024] __attribute__((aligned(16)));
static uintptr_t fake[512] __attribute__((aligned(64)));
static void *seen_in_peer, *seen_in_cb;
static bool use_call;

static void cb(void *arg)
{
	seen_in_cb = ctx_tls_self();
	*(int *)arg += 1;
}

static void peer(void *arg)
{
	int calls = 0;
	for (;;) {
		seen_in_peer = ctx_tls_self();
		if (use_call)
			ctx_switch_call_tls(&peer_ctx, &main_ctx, cb, &calls);
		else
			ctx_switch_tls(&peer_ctx, &main_ctx);
	}
}

static void setup_fake(uintptr_t *blk)
{
	void *tp = ctx_tls_self();
	memcpy(blk, tp, 0x40);             /* canary (0x28), pointer guard (0x30) */
	blk[0] = (uintptr_t)blk;           /* header.tcb */
	blk[2] = (uintptr_t)blk;           /* header.self */
}

/* decoy: what peer_ctx.tls says (blk but for the ldt test, where the
 * selector alone must decide) */
static void round_trips_on(uintptr_t *blk, unsigned sel, void *decoy)
{
	void *own = ctx_tls_self();
	setup_fake(blk);
	main_ctx.tls = own;
	ctx_make(&peer_ctx, peer_stack, sizeof peer_stack, peer, NULL);
	peer_ctx.tls = decoy;
	peer_ctx.tls_sel = sel;
	for (int i = 0; i < 3; i++) {
		seen_in_peer = seen_in_cb = NULL;
		use_call = i % 2;
		if (use_call)
			ctx_switch_call_tls(&main_ctx, &peer_ctx, cb, &(int){ 0 });
		else
			ctx_switch_tls(&main_ctx, &peer_ctx);
		assert_ptr_equal(seen_in_peer, blk);
		assert_ptr_equal(ctx_tls_self(), own);
		if (use_call && i > 0)
			assert_ptr_equal(seen_in_cb, own);   /* peer's callback ran on main's TLS */
	}
}

static void round_trips(void)
{
	round_trips_on(fake, 0, fake);
}

static void test_default_way(void **state)
{
	(void)ctx_tls_setup(CTX_TLS_AUTO, NULL);
	round_trips();
}

static void test_syscall_way(void **state)
{
	if (&ctx_have_wrfsbase == NULL)
		skip();
	(void)ctx_tls_setup(CTX_TLS_SYSCALL, NULL);
	unsigned char saved = ctx_have_wrfsbase;
	ctx_have_wrfsbase = 0;
	round_trips();
	ctx_have_wrfsbase = saved;
}

/* The ldt method: the peer's block below 4 GiB with a selector of its own;
 * the way back to main (above 4 GiB, selector 0) is the system call. */
static void test_ldt_way(void **state)
{
	if (ctx_tls_setup(CTX_TLS_LDT, NULL) != CTX_TLS_LDT)
		skip();   /* no modify_ldt here (or not x86_64, or ucontext) */
	uintptr_t *blk = ctx_tls_low_alloc(4096, 64);
	assert_non_null(blk);
	assert_true((uintptr_t)blk < ((uintptr_t)1 << 32));
	unsigned sel = ctx_tls_selector(blk);
	assert_true(sel != 0 && (sel & 7) == 7);   /* LDT, RPL 3 */
	assert_int_equal(ctx_tls_selectors_used(), 1);
	setup_fake(fake);
	round_trips_on(blk, sel, fake);   /* the base comes from the LDT entry */
	/* and a context whose block has no entry still gets its own */
	round_trips();
	(void)ctx_tls_setup(CTX_TLS_AUTO, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_way),
		cmocka_unit_test(test_syscall_way),
		cmocka_unit_test(test_ldt_way),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
