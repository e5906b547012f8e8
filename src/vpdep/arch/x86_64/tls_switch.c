/* How ctx_switch_tls* installs a thread pointer on x86_64 (docs/tls.md).
 *
 * wrfsbase      FSGSBASE enabled by the kernel (AT_HWCAP2 bit 1): one
 *               unprivileged instruction.
 * ldt           no FSGSBASE: each TLS block below 4 GiB gets an LDT entry
 *               whose base is its thread pointer (modify_ldt, once per block:
 *               the entry stays with the pooled block), and the switch loads
 *               the selector into %fs.  In 64-bit mode a segment load takes
 *               the base from the descriptor, 32 bits zero-extended, hence
 *               "below 4 GiB".  The kernel keeps a nonzero %fs selector across
 *               its own context switches (it reloads the selector, which
 *               reloads the base), leaves %fs alone on signal delivery and
 *               sigreturn, copies the LDT to a fork child and drops it at
 *               exec.  Blocks above 4 GiB (the main thread's, the VPs' kernel
 *               threads', blocks beyond the 8,192 entries) have selector 0
 *               and get the system call.
 * arch_prctl    the system call on every switch.
 *
 * Entries are never rewritten while a block lives (blocks are never freed),
 * so no VP can hold a stale cached base: the kernel does not reload %fs when
 * another thread changes the LDT, and need not. */
#include <asm/ldt.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "syscall_raw.h"
#include "context.h"

/* Read by context.S's SET_FS: nonzero when wrfsbase may be used. */
unsigned char ctx_have_wrfsbase __attribute__((visibility("hidden")));

static enum ctx_tls_switch method = CTX_TLS_SYSCALL;

/* Entries go lazily to the blocks that switch (the caller decides when), so
 * more blocks than entries are placed low: a hot block made after many cold
 * ones can still get one.  32,768 blocks are about 150 MB of address space
 * below 4 GiB, reserved as used. */
enum { LDT_SLOTS = LDT_ENTRIES, LOW_BLOCKS = 4 * LDT_ENTRIES, LOW_CHUNK = 1 << 20 };
#define LOW_LIMIT ((uintptr_t)1 << 32)

static _Atomic unsigned next_entry;   /* LDT entries handed out */
static _Atomic unsigned low_blocks;   /* low blocks handed out (at most LOW_BLOCKS) */

/* The low arena: 1 MiB chunks below 4 GiB, carved in order without a lock
 * (the caller may be a user thread that is preempted at any point): a
 * chunk's first word counts its bytes handed out; a full chunk is replaced
 * by whoever maps the next one first. */
struct low_chunk {
	_Atomic size_t used;
};
static struct low_chunk *_Atomic low_chunk;

static unsigned selector_of(unsigned entry)
{
	return entry << 3 | 4 /* TI: LDT */ | 3 /* RPL 3 */;
}

/* A 32-bit data segment based at tp; 0 or -errno. */
static long ldt_write(unsigned entry, uintptr_t base)
{
	struct user_desc d = {
		.entry_number = entry,
		.base_addr = (unsigned)base,
		.limit = 0xfffff,
		.seg_32bit = 1,
		.contents = 0,           /* data, expand-up */
		.read_exec_only = 0,
		.limit_in_pages = 1,
		.seg_not_present = 0,
		.useable = 1,
	};
	/* 0x11: write an entry, "new" mode (the useable bit is honoured). */
	long r = vp_syscall(SYS_modify_ldt, 0x11, &d, sizeof d);
	return r == 0 ? 0 : -errno;
}

/* Low memory: MAP_32BIT (the kernel places it within the first 2 GiB), or
 * failing that a hint below 4 GiB that the kernel honoured. */
static void *low_map(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT,
		       -1, 0);
	if (p != MAP_FAILED && (uintptr_t)p + size <= LOW_LIMIT)
		return p;
	if (p != MAP_FAILED)
		munmap(p, size);
	p = mmap((void *)(uintptr_t)0x80000000u, size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED && (uintptr_t)p + size <= LOW_LIMIT)
		return p;
	if (p != MAP_FAILED)
		munmap(p, size);
	return NULL;
}

/* The probe's selector load and read, and where they resume if the CPU
 * refuses them (probe_fault). */
extern const char ppl_ldt_probe_load[], ppl_ldt_probe_resume[];
static volatile sig_atomic_t probe_faulted;

/* SIGSEGV during the probe: a hypervisor may accept the LDT entry and still
 * fault on loading its selector (seen on a PVM guest, Linux 6.18: #GP), or
 * give a base that faults.  Go on at the arch_prctl that puts the thread
 * pointer back.  A fault anywhere else is not the probe's: back to the
 * default action, and the instruction faults again. */
static void probe_fault(int sig, siginfo_t *si, void *ucv)
{
	(void)si;
	ucontext_t *uc = ucv;
	greg_t *rip = &uc->uc_mcontext.gregs[REG_RIP];
	if (*rip >= (greg_t)ppl_ldt_probe_load && *rip < (greg_t)ppl_ldt_probe_resume) {
		probe_faulted = 1;
		*rip = (greg_t)ppl_ldt_probe_resume;
		return;
	}
	struct vp_ksigaction dfl = { .handler = NULL /* SIG_DFL */ };
	/* raw: %fs may be the probe's, errno out of reach */
	vp_syscall_raw(SYS_rt_sigaction, sig, (long)&dfl, 0, sizeof dfl.mask, 0, 0);
}

/* Does a selector load really give the entry's base?  modify_ldt may be
 * compiled out (CONFIG_MODIFY_LDT_SYSCALL=n: ENOSYS) or refused by a
 * seccomp filter (EPERM, as container runtimes do), and the load may fault.
 * NULL or the reason.  Not inlined: the asm's labels must exist once. */
static __attribute__((noinline, noclone)) const char *ldt_probe(void)
{
	uintptr_t *page = low_map(4096);
	if (page == NULL)
		return "no memory below 4 GiB";
	page[0] = (uintptr_t)page;
	long e = ldt_write(0, (uintptr_t)page);
	if (e != 0) {
		munmap(page, 4096);
		return e == -ENOSYS ? "modify_ldt: not in this kernel"
		       : e == -EPERM ? "modify_ldt: not permitted" : "modify_ldt failed";
	}
	void *own;
	__asm__ volatile("movq %%fs:0, %0" : "=r"(own));
	/* No signal handler but probe_fault may run on the probe page as its
	 * TLS, and a SIGSEGV the load raises must reach probe_fault (blocked,
	 * the kernel would kill the process).  The system calls themselves:
	 * libppl interposes sigprocmask and sigaction. */
	struct vp_ksigaction ka = {
		.handler = probe_fault,
		.flags = SA_SIGINFO | VP_SA_RESTORER,
		.restorer = ctx_sigreturn,
		.mask = ~(uint64_t)0,
	}, old_ka;
	vp_syscall(SYS_rt_sigaction, SIGSEGV, &ka, &old_ka, sizeof ka.mask);
	uint64_t all_but_segv = ~((uint64_t)1 << (SIGSEGV - 1)), old;
	vp_syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all_but_segv, &old, sizeof old);
	probe_faulted = 0;
	uintptr_t seen = 0;
	long rc;
	__asm__ volatile(".globl ppl_ldt_probe_load\n\t.hidden ppl_ldt_probe_load\n"
			 "ppl_ldt_probe_load:\n\t"
			 "movw %w[sel], %%fs\n\t"
			 "movq %%fs:0, %[seen]\n"
			 ".globl ppl_ldt_probe_resume\n\t.hidden ppl_ldt_probe_resume\n"
			 "ppl_ldt_probe_resume:\n\t"
			 "syscall"   /* arch_prctl(ARCH_SET_FS, own): selector 0, base back */
			 : [seen] "+&r"(seen), "=a"(rc)
			 : [sel] "r"(selector_of(0)), "a"((long)SYS_arch_prctl), "D"(0x1002L), "S"(own)
			 : "rcx", "r11", "memory");
	vp_syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof old);
	vp_syscall(SYS_rt_sigaction, SIGSEGV, &old_ka, NULL, sizeof ka.mask);
	munmap(page, 4096);
	if (rc != 0)
		return "arch_prctl failed";
	if (probe_faulted)
		return "loading an LDT selector faults";
	return seen == (uintptr_t)page ? NULL : "a selector load does not give the entry's base";
}

enum ctx_tls_switch ctx_tls_setup(enum ctx_tls_switch want, const char **why)
{
	/* HWCAP2_FSGSBASE (bit 1): the kernel has set CR4.FSGSBASE, so the
	 * instruction works in user mode (Linux 5.9 and later). */
	bool insn = (getauxval(AT_HWCAP2) & 2) != 0;
	const char *no_ldt = NULL;
	if (want == CTX_TLS_INSN && !insn && why)
		*why = "no FSGSBASE";
	if (want == CTX_TLS_LDT || (want != CTX_TLS_SYSCALL && !insn))
		no_ldt = ldt_probe();
	if (want == CTX_TLS_LDT && no_ldt && why)
		*why = no_ldt;
	if (want == CTX_TLS_SYSCALL)
		method = CTX_TLS_SYSCALL;
	else if (want == CTX_TLS_LDT && !no_ldt)
		method = CTX_TLS_LDT;
	else if (insn)
		method = CTX_TLS_INSN;
	else
		method = no_ldt ? CTX_TLS_SYSCALL : CTX_TLS_LDT;
	/* With `ldt` the blocks without an entry take the system call even
	 * when FSGSBASE is there: the method is then what a CPU without it
	 * does (PPL_TLS_SWITCH=ldt is how it is tested on one with it). */
	ctx_have_wrfsbase = method == CTX_TLS_INSN;
	return method;
}

enum ctx_tls_switch ctx_tls_switch_in_use(void)
{
	return method;
}

const char *ctx_tls_switch_name(enum ctx_tls_switch m)
{
	switch (m) {
	case CTX_TLS_INSN:
		return "wrfsbase";
	case CTX_TLS_LDT:
		return "ldt";
	case CTX_TLS_SYSCALL:
		return "arch_prctl";
	default:
		return "auto";
	}
}

void *ctx_tls_low_alloc(size_t size, size_t align)
{
	if (method != CTX_TLS_LDT || align == 0 || (align & (align - 1)) != 0)
		return NULL;
	if (atomic_fetch_add_explicit(&low_blocks, 1, memory_order_relaxed) >= LOW_BLOCKS)
		return NULL;
	size_t need = size + align;   /* room to align inside the claim */
	if (need > LOW_CHUNK / 4) {
		/* a program with a large static TLS: a mapping of its own */
		char *p = low_map(need);
		return p ? (void *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1)) : NULL;
	}
	for (;;) {
		struct low_chunk *c = atomic_load_explicit(&low_chunk, memory_order_acquire);
		if (c != NULL) {
			size_t off = atomic_fetch_add_explicit(&c->used, need, memory_order_relaxed);
			if (off + need <= LOW_CHUNK)
				return (void *)(((uintptr_t)c + off + align - 1) & ~(uintptr_t)(align - 1));
		}
		struct low_chunk *n = low_map(LOW_CHUNK);
		if (n == NULL)
			return NULL;
		atomic_store_explicit(&n->used, 64, memory_order_relaxed);   /* the header */
		if (!atomic_compare_exchange_strong_explicit(&low_chunk, &c, n, memory_order_acq_rel,
							     memory_order_acquire))
			munmap(n, LOW_CHUNK);   /* another thread replaced it first */
	}
}

bool ctx_tls_selectable(const void *tp)
{
	return method == CTX_TLS_LDT && tp != NULL && (uintptr_t)tp < LOW_LIMIT &&
	       atomic_load_explicit(&next_entry, memory_order_relaxed) < LDT_SLOTS;
}

unsigned ctx_tls_selector(void *tp)
{
	if (!ctx_tls_selectable(tp))
		return 0;
	unsigned e = atomic_fetch_add_explicit(&next_entry, 1, memory_order_relaxed);
	if (e >= LDT_SLOTS)
		return 0;
	return ldt_write(e, (uintptr_t)tp) == 0 ? selector_of(e) : 0;
}

unsigned ctx_tls_selectors_used(void)
{
	unsigned n = atomic_load_explicit(&next_entry, memory_order_relaxed);
	return n < LDT_SLOTS ? n : LDT_SLOTS;
}
