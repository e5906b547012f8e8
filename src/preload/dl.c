/* dlopen and dlmopen, wrapped: glibc initialises the static TLS of a newly
 * loaded module only in the threads it created, so libppl copies the
 * module's init image into the TLS blocks of its user threads afterwards
 * (ppl_dl_leave).
 *
 * The wrappers must not change how names resolve: glibc reads the caller's
 * link map (RUNPATH, $ORIGIN, the namespace) from its dlopen's return
 * address.  On x86_64 the wrappers (arch/x86_64/dl_call.S) enter the real
 * function with a return address inside the caller's object (a `ret`
 * byte of it, found here), so glibc sees the caller and not libppl.so.
 * Elsewhere they call it plainly, and a bare name is searched along
 * libppl's RUNPATH instead of the caller's (docs/tls.md). */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../vpdep/syscall_raw.h"
#include "../vpindep/vpindep.h"
#include "dl_call.h"

#define PPL_API __attribute__((visibility("default")))

enum { DL_OPEN, DL_MOPEN };

static void *_Atomic real_fn[2];
static const char *const real_name[2] = { "dlopen", "dlmopen" };

/* The C library's default version (GLIBC_2.34 on glibc 2.36). */
static void *(*real(int which))(void)
{
	return (void *(*)(void))ppl_next_fn(&real_fn[which], real_name[which], NULL);
}

/* ---- the gadget -------------------------------------------------------------------------- */

struct find {
	uintptr_t pc;        /* the caller's return address */
	const unsigned char *gadget;
	bool main_done;      /* the main program was looked at (glibc's default) */
	const unsigned char *main_gadget;
};

/* A `ret` (0xc3) in the readable, executable segment [lo, hi), nearest
 * after pc if pc is inside, else anywhere. */
static const unsigned char *find_ret(uintptr_t lo, uintptr_t hi, uintptr_t pc)
{
	uintptr_t from = pc >= lo && pc < hi ? pc : lo;
	for (uintptr_t a = from; a < hi; a++)
		if (*(const unsigned char *)a == 0xc3)
			return (const unsigned char *)a;
	for (uintptr_t a = from; a > lo; a--)
		if (*(const unsigned char *)(a - 1) == 0xc3)
			return (const unsigned char *)(a - 1);
	return NULL;
}

static int find_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct find *f = arg;
	bool is_main = !f->main_done;   /* dl_iterate_phdr lists it first */
	f->main_done = true;
	bool inside = false;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (f->pc >= lo && f->pc < hi)
			inside = true;
	}
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || (ph->p_flags & (PF_X | PF_R)) != (PF_X | PF_R))
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_filesz;
		const unsigned char *g = NULL;
		if (inside || is_main)
			g = find_ret(lo, hi, f->pc);
		if (g != NULL && inside) {
			f->gadget = g;
			return 1;
		}
		if (g != NULL && is_main && f->main_gadget == NULL)
			f->main_gadget = g;
	}
	return inside;   /* the caller's object has no usable text: stop */
}

/* A shadow stack (CET) would refuse the return through the gadget. */
static bool shadow_stack(void)
{
#ifdef __x86_64__
	static int state = -1;   /* racing first callers store the same value */
	if (state < 0) {
		unsigned long features = 0;
		/* ARCH_SHSTK_STATUS: EINVAL on kernels without shadow stacks. */
		long r = vp_syscall(SYS_arch_prctl, 0x5005, &features);
		state = r == 0 && (features & 1) != 0;
	}
	return state;
#else
	return false;
#endif
}

/* The caller's object, or the main program if pc lies in none (glibc's
 * own choice then); NULL to call plainly. */
static const void *gadget_for(const void *pc)
{
	if (shadow_stack())
		return NULL;
	struct find f = { .pc = (uintptr_t)pc };
	dl_iterate_phdr(find_cb, &f);
	return f.gadget != NULL ? f.gadget : f.main_gadget;
}

/* ---- the wrappers' halves ---------------------------------------------------------------- */

/* Returned in %rax:%rdx.  Without the real function (no libdl?), fail as
 * the C library does: call a stub that returns NULL. */
static void *no_dl(void)
{
	return NULL;
}

struct dl_enter ppl_dl_enter(const void *ret, int which)
{
	int e = errno;
	struct dl_enter r = { real(which), NULL };
	if (r.fn == NULL)
		r.fn = no_dl;
	else
		r.gadget = gadget_for(ret);
	errno = e;
	return r;
}

void ppl_dl_leave(void *handle)
{
	if (handle == NULL)
		return;
	int e = errno;
	ppl_after_dlopen();
	errno = e;
}

#ifndef PPL_DL_TRAMPOLINE
/* No trampoline for this architecture: plain calls from libppl.  Exported
 * under the C library's versions of both names (as arch/x86_64/dl_call.S). */
PPL_API void *export_dlopen(const char *file, int mode);
void *export_dlopen(const char *file, int mode)
{
	void *(*fn)(const char *, int) = (void *(*)(const char *, int))real(DL_OPEN);
	void *h = fn != NULL ? fn(file, mode) : NULL;
	ppl_dl_leave(h);
	return h;
}

PPL_API void *export_dlmopen(Lmid_t lmid, const char *file, int mode);
void *export_dlmopen(Lmid_t lmid, const char *file, int mode)
{
	void *(*fn)(Lmid_t, const char *, int) = (void *(*)(Lmid_t, const char *, int))real(DL_MOPEN);
	void *h = fn != NULL ? fn(lmid, file, mode) : NULL;
	ppl_dl_leave(h);
	return h;
}

extern __typeof__(export_dlopen) compat_dlopen __attribute__((alias("export_dlopen"), visibility("default")));
extern __typeof__(export_dlmopen) compat_dlmopen __attribute__((alias("export_dlmopen"), visibility("default")));
__asm__(".symver export_dlopen, dlopen@@GLIBC_2.34");
__asm__(".symver compat_dlopen, dlopen@GLIBC_2.2.5");
__asm__(".symver export_dlmopen, dlmopen@@GLIBC_2.34");
__asm__(".symver compat_dlmopen, dlmopen@GLIBC_2.3.4");
#endif

/* dlclose: the cached list of modules with TLS (glibcabi's, read at every
 * thread start) is collected again after it.  No caller identity needed. */
PPL_API int export_dlclose(void *handle);
int export_dlclose(void *handle)
{
	static void *_Atomic real_close;
	int (*fn)(void *) = (int (*)(void *))ppl_next_fn(&real_close, "dlclose", NULL);
	int r = fn(handle);
	int e = errno;
	ppl_after_dlclose();
	errno = e;
	return r;
}

extern __typeof__(export_dlclose) compat_dlclose __attribute__((alias("export_dlclose"), visibility("default")));
__asm__(".symver export_dlclose, dlclose@@GLIBC_2.34");
__asm__(".symver compat_dlclose, dlclose@GLIBC_2.2.5");
