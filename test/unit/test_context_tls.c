/* The per-thread TLS switch (ctx_switch_tls, ctx_switch_call_tls): the
 * resumed context and a ctx_switch_call_tls callback run with the target's
 * thread pointer, and the caller gets its own back.  The target's "block"
 * is a fake: a page whose first word points at itself (what ctx_tls_self
 * reads) and that carries the real stack-protector canary; the code run on
 * it touches no other TLS.  On x86_64 both ways of writing the FS base are
 * tested (wrfsbase when the kernel allows it, and arch_prctl). */
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

static void setup_fake(void)
{
	void *tp = ctx_tls_self();
	memcpy(fake, tp, 0x40);            /* canary (0x28), pointer guard (0x30) */
	fake[0] = (uintptr_t)fake;         /* header.tcb */
	fake[2] = (uintptr_t)fake;         /* header.self */
}

static void round_trips(void)
{
	void *own = ctx_tls_self();
	setup_fake();
	main_ctx.tls = own;
	ctx_make(&peer_ctx, peer_stack, sizeof peer_stack, peer, NULL);
	peer_ctx.tls = fake;
	for (int i = 0; i < 3; i++) {
		seen_in_peer = seen_in_cb = NULL;
		use_call = i % 2;
		if (use_call)
			ctx_switch_call_tls(&main_ctx, &peer_ctx, cb, &(int){ 0 });
		else
			ctx_switch_tls(&main_ctx, &peer_ctx);
		assert_ptr_equal(seen_in_peer, fake);
		assert_ptr_equal(ctx_tls_self(), own);
		if (use_call && i > 0)
			assert_ptr_equal(seen_in_cb, own);   /* peer's callback ran on main's TLS */
	}
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_way),
		cmocka_unit_test(test_syscall_way),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
