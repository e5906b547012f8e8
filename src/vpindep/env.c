/* The environment knobs, read once at start-up.  A bad value is fatal:
 * one line naming the variable and what was expected.  A program in
 * secure-execution mode (setuid or setgid, AT_SECURE) ignores them all and
 * takes the defaults, as glibc ignores its tunables there: the user who
 * runs it must not choose its stacks, VPs or what it prints. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base.h"
#include "config.h"
#include "monitor.h"
#include "runtime.h"
#include "schedhooks.h"
#include "scheduler.h"
#include "sig.h"

size_t ppl_env_stack_size PPL_HIDDEN;
long ppl_env_timeslice_us PPL_HIDDEN = 10000;
long ppl_env_retire_ms PPL_HIDDEN = 20;
bool ppl_env_tls_per_thread PPL_HIDDEN;
bool ppl_env_system_bound PPL_HIDDEN;
enum ctx_tls_switch ppl_env_tls_switch PPL_HIDDEN;   /* PPL_TLS_SWITCH; AUTO by default */
unsigned ppl_env_tls_ldt_after PPL_HIDDEN = 64;          /* PPL_TLS_LDT_AFTER */

static _Noreturn void bad(const char *var, const char *val, const char *expected)
{
	/* Pieces, not a fixed buffer: a long value is printed whole. */
	struct iovec iov[] = {
		{ (void *)"libppl: ", 8 }, { (void *)var, strlen(var) }, { (void *)"=", 1 },
		{ (void *)val, strlen(val) }, { (void *)": ", 2 },
		{ (void *)expected, strlen(expected) }, { (void *)"\n", 1 },
	};
	vp_writev(2, iov, sizeof iov / sizeof iov[0]);
	_exit(2);
}

static const char *env(const char *var)
{
	return secure_getenv(var);
}

/* A decimal number with an optional K/M/G suffix (powers of 1024). */
static bool parse_size(const char *s, unsigned long long *out)
{
	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return false;
	int shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if (*end != '\0' || v > (ULLONG_MAX >> shift))
		return false;
	*out = v << shift;
	return true;
}

static long int_var(const char *var, long lo, long hi, long dflt, const char *expected)
{
	const char *s = env(var);
	if (s == NULL)
		return dflt;
	unsigned long long v;
	if (!isdigit((unsigned char)*s) || !parse_size(s, &v) || strpbrk(s, "kKmMgG") ||
	    (long long)v < lo || (long long)v > hi)
		bad(var, s, expected);
	return (long)v;
}

/* PPL_SCHED_SEED, PPL_SCHED_CHAOS, PPL_TRACE (docs/debugging.md).  A seed
 * forces one VP and replaces the time-slice timer (detsched.c). */
static void sched_debug_env(void)
{
	const char *seed = env("PPL_SCHED_SEED");
	const char *chaos = env("PPL_SCHED_CHAOS");
	if (seed) {
		errno = 0;
		char *end;
		unsigned long long v = strtoull(seed, &end, 10);
		if (!isdigit((unsigned char)*seed) || *end != '\0' || errno)
			bad("PPL_SCHED_SEED", seed, "expected a seed from 0 to 18446744073709551615");
		uint64_t p = 0;
		if (chaos) {
			errno = 0;
			double d = strtod(chaos, &end);
			if (!(isdigit((unsigned char)*chaos) || *chaos == '.') || *end != '\0' || errno ||
			    !(d >= 0 && d <= 1))
				bad("PPL_SCHED_CHAOS", chaos,
				    "expected a probability from 0 to 1 (such as 0.05)");
			p = d >= 1 ? UINT64_MAX : (uint64_t)(d * 18446744073709551616.0);
		}
		ppl_rt.env_vps = 1;
		ppl_env_timeslice_us = 0;
		detsched_init(v, p);
		ppl_hooks |= PPL_HOOK_SEED;
	} else if (chaos) {
		bad("PPL_SCHED_CHAOS", chaos, "needs PPL_SCHED_SEED (the seed decides where the yields go)");
	}
	const char *sched = env("PPL_SCHED");
	if (sched) {
		if (ppl_hook_on(PPL_HOOK_SEED))
			bad("PPL_SCHED", sched, "no other scheduler with PPL_SCHED_SEED");
		if (plug_select(sched) != 0)
			bad("PPL_SCHED", sched, "expected fifo, lifo, prio or timestamp");
	}
	const char *trace = env("PPL_TRACE");
	if (trace) {
		if (*trace == '\0')
			bad("PPL_TRACE", trace, "expected the name of a file to write the trace to");
		if (trace_open(trace) != 0)
			bad("PPL_TRACE", trace, strerror(errno));
	}
}

void ppl_env_init(void)
{
	ppl_rt.env_vps = (int)int_var("PPL_VPS", 1, PPL_MAX_VPS, 0,
				      "expected a number of virtual processors from 1 to 1024");

	const char *s = env("PPL_VP_BACKEND");
	if (s && vp_backend_select(s) != 0)
		bad("PPL_VP_BACKEND", s, "unknown VP backend (available: " PPL_VP_BACKENDS ")");
	if (!s && vp_backend_select(NULL) != 0)
		bad("PPL_VP_BACKEND", "(default)", "the build's default VP backend is unavailable");

	s = env("PPL_STACK_SIZE");
	if (s) {
		unsigned long long v;
		if (!parse_size(s, &v) || v < (unsigned long long)PTHREAD_STACK_MIN || v > (1ULL << 40))
			bad("PPL_STACK_SIZE", s,
			    "expected a stack size in bytes (K, M, G suffixes allowed), at least 16384");
		ppl_env_stack_size = (size_t)v;
	}

	s = env("PPL_TLS");
	const char *tls = s ? s : PPL_DEFAULT_TLS;
	if (strcmp(tls, "shared") != 0 && strcmp(tls, "per-thread") != 0)
		bad("PPL_TLS", tls, "expected 'shared' or 'per-thread'");
	ppl_env_tls_per_thread = strcmp(tls, "per-thread") == 0;
	/* ThreadSanitizer keeps each thread's state in its own thread-local
	 * storage and sets it up in its pthread_create wrapper: with one TLS
	 * block per VP, every new thread would take over its VP's state
	 * (docs/debugging.md). */
	if (!ppl_env_tls_per_thread && vp_symbol_present("__tsan_init"))
		bad("PPL_TLS", tls, "not supported under ThreadSanitizer, which needs 'per-thread'");
	s = env("PPL_TLS_SWITCH");
	if (s) {
		static const char *const names[] = { "auto", "wrfsbase", "ldt", "arch_prctl" };
		int k = 0;
		while (k < 4 && strcmp(s, names[k]) != 0)
			k++;
		if (k == 4)
			bad("PPL_TLS_SWITCH", s, "expected 'auto', 'wrfsbase', 'ldt' or 'arch_prctl'");
		ppl_env_tls_switch = (enum ctx_tls_switch)k;
	}
	ppl_env_tls_ldt_after = (unsigned)int_var("PPL_TLS_LDT_AFTER", 0, 1000000, 64,
						  "expected a number of resumes from 0 to 1000000");

	/* 0 turns preemption off. */
	const char *ts_expected = "expected a time slice in microseconds from 100 to 10000000, "
				  "or 0 for no preemption";
	ppl_env_timeslice_us = int_var("PPL_TIMESLICE_US", 0, 10000000, 10000, ts_expected);
	if (ppl_env_timeslice_us > 0 && ppl_env_timeslice_us < 100)
		bad("PPL_TIMESLICE_US", env("PPL_TIMESLICE_US"), ts_expected);
	ppl_env_retire_ms = int_var("PPL_RETIRE_MS", 0, 60000, 20,
				    "expected milliseconds from 0 to 60000 (0: never retire)");
	ppl_rt.stats = int_var("PPL_STATS", 0, 1, 0, "expected 0 or 1") == 1;
	s = env("PPL_DEADLOCK");
	if (s) {
		if (strcmp(s, "off") == 0)
			ppl_env_deadlock = 0;
		else if (strcmp(s, "warn") == 0)
			ppl_env_deadlock = 1;
		else if (strcmp(s, "abort") == 0)
			ppl_env_deadlock = 2;
		else
			bad("PPL_DEADLOCK", s, "expected 'abort', 'warn' or 'off'");
	}
	/* PTHREAD_SCOPE_SYSTEM: the only scope NPTL has, so programs ask for
	 * it without meaning a kernel thread (CPython does): scheduled M:N
	 * like the others unless binding is asked for (docs/scheduling.md). */
	s = env("PPL_SYSTEM_SCOPE");
	if (s) {
		if (strcmp(s, "bound") == 0)
			ppl_env_system_bound = true;
		else if (strcmp(s, "m:n") != 0)
			bad("PPL_SYSTEM_SCOPE", s, "expected 'm:n' or 'bound'");
	}
	s = env("PPL_PROCESS_SIGNALS");
	if (s) {
		if (strcmp(s, "thread") == 0)
			ppl_env_sigroute = true;
		else if (strcmp(s, "vp") == 0)
			ppl_env_sigroute = false;
		else
			bad("PPL_PROCESS_SIGNALS", s, "expected 'thread' or 'vp'");
	}
	ppl_env_work_first = int_var("PPL_WORK_FIRST", 0, 1, 0, "expected 0 or 1") == 1;
	ppl_rt.debug = (int)int_var("PPL_DEBUG", 0, 3, 0, "expected a debug level from 0 to 3");
	sched_debug_env();
}
