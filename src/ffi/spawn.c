/* ppl_spawn: a thread that runs any C function with typed arguments and
 * keeps its typed return value for ppl_join_typed (Ariadne's a_create).
 *
 * This is libppl-ffi.so, apart from libppl.so: only programs that spawn
 * typed threads load libffi, and preloading libppl.so needs no more than
 * before.  It uses nothing but the public pthread API, so its threads are
 * libppl's when libppl is linked or preloaded (NPTL's otherwise).
 *
 * A spawn is a record: the call interface, the argument types (with the
 * ffi_types of a signature's structs), the argument values and the return
 * buffer.  The thread's start routine makes the call; ppl_join_typed finds
 * the record of a joinable thread in a small table (so a pthread_t that
 * ppl_spawn did not make is EINVAL, not a wild read), joins, copies the
 * return value out and frees the record.  A joinable spawn that the program
 * joins with pthread_join or detaches with pthread_detach instead is found
 * released later (ppl_thread_serial: its TCB no longer names it) and freed
 * then: each table sweep runs once the table has doubled since the last,
 * so the records outstanding stay within twice the threads alive. */
#include <errno.h>
#include <ffi.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ppl.h"

#define API __attribute__((visibility("default")))
#define MAX_DEPTH 8            /* struct nesting in a signature */
#define ALIGN 16               /* of every value slot: enough for any C type */

struct spawn {
	ffi_cif cif;
	ffi_cif *cifp;             /* &cif, or the caller's (ppl_spawn_cif) */
	void (*fn)(void);
	void **argv;               /* argv[i] points into vals */
	char *vals;                /* the argument values, then the return buffer */
	void *ret;
	bool returned;             /* fn returned (not pthread_exit, not cancelled) */
	bool detached;
	pthread_t id;
	unsigned long serial;      /* ppl_thread_serial(id) at the spawn, or 0 */
	struct spawn *next;        /* in the table of joinable spawns */
	_Alignas(ALIGN) char mem[]; /* argument types, struct types, element lists */
};

static size_t round_up(size_t n)
{
	return (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
}

/* ---- signature strings ------------------------------------------------------- */

static ffi_type *scalar(char c)
{
	switch (c) {
	case 'c': return &ffi_type_schar;
	case 'C': return &ffi_type_uchar;
	case 's': return &ffi_type_sshort;
	case 'S': return &ffi_type_ushort;
	case 'i': return &ffi_type_sint;
	case 'I': return &ffi_type_uint;
	case 'l': return &ffi_type_slong;
	case 'L': return &ffi_type_ulong;
	case 'q': return &ffi_type_sint64;
	case 'Q': return &ffi_type_uint64;
	case 'z': return sizeof(size_t) == 8 ? &ffi_type_uint64 : &ffi_type_uint32;
	case 'p': return &ffi_type_pointer;
	case 'f': return &ffi_type_float;
	case 'd': return &ffi_type_double;
	case 'D': return &ffi_type_longdouble;
	}
	return NULL;
}

/* Past one type at p, or NULL if none parses there; *nmem counts the
 * members of a struct it is. */
static const char *skip(const char *p, int depth, int *nmem)
{
	*nmem = 0;
	if (*p != '{')
		return scalar(*p) ? p + 1 : NULL;
	if (depth >= MAX_DEPTH)
		return NULL;
	p++;
	while (*p != '}') {
		int ignored;
		if ((p = skip(p, depth + 1, &ignored)) == NULL)
			return NULL;
		++*nmem;
	}
	return *nmem ? p + 1 : NULL;
}

/* Space for struct types and element lists, from mem (NULL: only count). */
struct arena {
	char *mem;
	size_t used;
};

static void *take(struct arena *a, size_t n)
{
	void *p = a->mem ? a->mem + a->used : NULL;
	a->used += round_up(n);
	return p;
}

/* The type at *pp (which parses: skip said so), advancing *pp. */
static ffi_type *build(const char **pp, int depth, struct arena *a)
{
	int n;
	const char *end = skip(*pp, depth, &n);
	if (**pp != '{') {
		*pp = end;
		return scalar(end[-1]);
	}
	ffi_type *t = take(a, sizeof *t);
	ffi_type **elems = take(a, (size_t)(n + 1) * sizeof *elems);
	const char *p = *pp + 1;
	for (int i = 0; i < n; i++) {
		ffi_type *m = build(&p, depth + 1, a);
		if (elems)
			elems[i] = m;
	}
	*pp = end;
	if (t == NULL)
		return &ffi_type_void;   /* counting */
	elems[n] = NULL;
	*t = (ffi_type){ .size = 0, .alignment = 0, .type = FFI_TYPE_STRUCT, .elements = elems };
	return t;
}

/* Checks sig: the number of arguments, the return type's place (NULL:
 * void) and where the types stop; -1 if it does not parse. */
static int check(const char *sig, const char **ret)
{
	const char *p = sig;
	int nargs = 0, n;
	while (*p && *p != '>') {
		if ((p = skip(p, 0, &n)) == NULL)
			return -1;
		nargs++;
	}
	*ret = NULL;
	if (*p == '>') {
		p++;
		if (*p == 'v')
			return p[1] ? -1 : nargs;
		*ret = p;
		if ((p = skip(p, 0, &n)) == NULL || *p)
			return -1;
	}
	return nargs;
}

/* ---- running ----------------------------------------------------------------- */

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct spawn *table[64];
static size_t nrecords, sweep_at = 64;   /* under table_lock */

/* libppl's (weak: under NPTL alone there is none, and a typed thread
 * joined with pthread_join keeps its record). */
extern unsigned long ppl_thread_serial(pthread_t) __attribute__((weak));

static struct spawn **bucket(pthread_t id)
{
	uintptr_t h = (uintptr_t)id;
	return &table[(h ^ (h >> 6) ^ (h >> 12)) % 64];
}

/* A fork while another thread holds table_lock would leave the child's
 * copy held by a thread that is not there: fork takes it first. */
static void table_prepare(void)
{
	pthread_mutex_lock(&table_lock);
}

static void table_parent(void)
{
	pthread_mutex_unlock(&table_lock);
}

static void table_child(void)
{
	pthread_mutex_init(&table_lock, NULL);
}

/* Registered on first use, not in a constructor: registered before
 * libppl's own fork handlers, the prepare would run after libppl's has
 * locked the runtime, and take a libppl mutex there (spawn tests hung). */
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void register_fork_handlers(void)
{
	pthread_atfork(table_prepare, table_parent, table_child);
}

static void lock_table(void)
{
	pthread_once(&fork_once, register_fork_handlers);
	pthread_mutex_lock(&table_lock);
}

static void spawn_free(struct spawn *s)
{
	free(s->vals);
	free(s);
}

/* Frees the records of threads the program joined or detached itself
 * (caller holds table_lock). */
static void sweep(void)
{
	for (size_t i = 0; i < sizeof table / sizeof *table; i++)
		for (struct spawn **pp = &table[i]; *pp;) {
			struct spawn *s = *pp;
			if (s->serial != 0 && ppl_thread_serial(s->id) != s->serial) {
				*pp = s->next;
				nrecords--;
				spawn_free(s);
			} else {
				pp = &s->next;
			}
		}
	sweep_at = nrecords * 2 > 64 ? nrecords * 2 : 64;
}

static void detached_end(void *arg)
{
	struct spawn *s = arg;
	if (s->detached)
		spawn_free(s);
}

static void *trampoline(void *arg)
{
	struct spawn *s = arg;
	pthread_cleanup_push(detached_end, s);
	ffi_call(s->cifp, s->fn, s->ret, s->argv);
	s->returned = true;
	pthread_cleanup_pop(1);
	return NULL;
}

/* Lays out the values of s's arguments (cif prepared) and the return
 * buffer; 0 or ENOMEM. */
static int layout(struct spawn *s)
{
	ffi_cif *cif = s->cifp;
	size_t n = 0;
	for (unsigned i = 0; i < cif->nargs; i++)
		n += round_up(cif->arg_types[i]->size);
	size_t rsize = cif->rtype->size < sizeof(ffi_arg) ? sizeof(ffi_arg) : cif->rtype->size;
	if ((s->vals = aligned_alloc(ALIGN, n + round_up(rsize))) == NULL)
		return ENOMEM;
	n = 0;
	for (unsigned i = 0; i < cif->nargs; i++) {
		s->argv[i] = s->vals + n;
		n += round_up(cif->arg_types[i]->size);
	}
	s->ret = s->vals + n;
	memset(s->ret, 0, rsize);
	return 0;
}

static int start(struct spawn *s, pthread_t *th, const pthread_attr_t *attr, void *fn)
{
	int state = PTHREAD_CREATE_JOINABLE;
	if (attr && pthread_attr_getdetachstate(attr, &state) != 0) {
		spawn_free(s);
		return EINVAL;
	}
	s->fn = (void (*)(void))fn;
	s->detached = state == PTHREAD_CREATE_DETACHED;
	pthread_t id;
	/* Published in the table before it can end: a detached one frees
	 * itself and is never there. */
	int err = pthread_create(&id, attr, trampoline, s);
	if (err) {
		spawn_free(s);
		return err;
	}
	if (!s->detached) {
		s->id = id;
		/* Read before anyone but the caller may join or detach it. */
		s->serial = ppl_thread_serial ? ppl_thread_serial(id) : 0;
		lock_table();
		if (++nrecords > sweep_at && ppl_thread_serial)
			sweep();
		struct spawn **b = bucket(id);
		s->next = *b;
		*b = s;
		pthread_mutex_unlock(&table_lock);
	}
	*th = id;
	return 0;
}

/* The next vararg as a value of type t, stored at dst. */
static void fetch(va_list *ap, ffi_type *t, void *dst)
{
	switch (t->type) {
	case FFI_TYPE_SINT8: *(int8_t *)dst = (int8_t)va_arg(*ap, int); break;
	case FFI_TYPE_UINT8: *(uint8_t *)dst = (uint8_t)va_arg(*ap, int); break;
	case FFI_TYPE_SINT16: *(int16_t *)dst = (int16_t)va_arg(*ap, int); break;
	case FFI_TYPE_UINT16: *(uint16_t *)dst = (uint16_t)va_arg(*ap, int); break;
	case FFI_TYPE_SINT32: *(int32_t *)dst = va_arg(*ap, int32_t); break;
	case FFI_TYPE_UINT32: *(uint32_t *)dst = va_arg(*ap, uint32_t); break;
	case FFI_TYPE_SINT64: *(int64_t *)dst = va_arg(*ap, int64_t); break;
	case FFI_TYPE_UINT64: *(uint64_t *)dst = va_arg(*ap, uint64_t); break;
	case FFI_TYPE_POINTER: *(void **)dst = va_arg(*ap, void *); break;
	case FFI_TYPE_FLOAT: *(float *)dst = (float)va_arg(*ap, double); break;
	case FFI_TYPE_DOUBLE: *(double *)dst = va_arg(*ap, double); break;
	case FFI_TYPE_LONGDOUBLE: *(long double *)dst = va_arg(*ap, long double); break;
	case FFI_TYPE_STRUCT: memcpy(dst, va_arg(*ap, const void *), t->size); break;
	}
}

API int ppl_vspawn(pthread_t *th, const pthread_attr_t *attr, void *fn, const char *sig,
		   va_list ap)
{
	const char *rsig;
	int nargs;
	if (th == NULL || fn == NULL || sig == NULL || (nargs = check(sig, &rsig)) < 0)
		return EINVAL;
	/* Counting pass, then the one that fills the record. */
	struct arena a = { NULL, 0 };
	const char *p = sig;
	for (int i = 0; i < nargs; i++)
		build(&p, 0, &a);
	if (rsig)
		p = rsig, build(&p, 0, &a);
	size_t types = round_up((size_t)nargs * sizeof(ffi_type *));
	size_t argv = round_up((size_t)nargs * sizeof(void *));
	struct spawn *s = aligned_alloc(ALIGN, round_up(sizeof *s) + types + argv + a.used);
	if (s == NULL)
		return ENOMEM;
	memset(s, 0, sizeof *s);
	ffi_type **atypes = (ffi_type **)s->mem;
	s->argv = (void **)(s->mem + types);
	a = (struct arena){ s->mem + types + argv, 0 };
	p = sig;
	for (int i = 0; i < nargs; i++)
		atypes[i] = build(&p, 0, &a);
	ffi_type *rtype = &ffi_type_void;
	if (rsig)
		p = rsig, rtype = build(&p, 0, &a);
	s->cifp = &s->cif;
	int err = 0;
	if (ffi_prep_cif(&s->cif, FFI_DEFAULT_ABI, (unsigned)nargs, rtype, atypes) != FFI_OK)
		err = EINVAL;
	else
		err = layout(s);
	if (err) {
		spawn_free(s);
		return err;
	}
	va_list aq;
	va_copy(aq, ap);
	for (int i = 0; i < nargs; i++)
		fetch(&aq, atypes[i], s->argv[i]);
	va_end(aq);
	return start(s, th, attr, fn);
}

API int ppl_spawn(pthread_t *th, const pthread_attr_t *attr, void *fn, const char *sig, ...)
{
	va_list ap;
	va_start(ap, sig);
	int err = ppl_vspawn(th, attr, fn, sig, ap);
	va_end(ap);
	return err;
}

API int ppl_spawn_cif(pthread_t *th, const pthread_attr_t *attr, ffi_cif *cif, void *fn,
		      void **args)
{
	if (th == NULL || cif == NULL || fn == NULL || (cif->nargs && args == NULL) ||
	    cif->rtype == NULL)
		return EINVAL;
	struct spawn *s = aligned_alloc(ALIGN, round_up(sizeof *s) +
					round_up(cif->nargs * sizeof(void *)));
	if (s == NULL)
		return ENOMEM;
	memset(s, 0, sizeof *s);
	s->cifp = cif;
	s->argv = (void **)s->mem;
	int err = layout(s);
	if (err) {
		spawn_free(s);
		return err;
	}
	for (unsigned i = 0; i < cif->nargs; i++)
		memcpy(s->argv[i], args[i], cif->arg_types[i]->size);
	return start(s, th, attr, fn);
}

/* libffi widens an integral return value narrower than ffi_arg: give the
 * caller exactly its type's bytes. */
static void copy_ret(const struct spawn *s, void *dst)
{
	ffi_type *t = s->cifp->rtype;
	ffi_arg w = *(const ffi_arg *)s->ret;
	union { int8_t i8; uint8_t u8; int16_t i16; uint16_t u16; int32_t i32; uint32_t u32; } v;
	switch (t->type) {
	case FFI_TYPE_VOID: return;
	case FFI_TYPE_SINT8: v.i8 = (int8_t)w; break;
	case FFI_TYPE_UINT8: v.u8 = (uint8_t)w; break;
	case FFI_TYPE_SINT16: v.i16 = (int16_t)w; break;
	case FFI_TYPE_UINT16: v.u16 = (uint16_t)w; break;
	case FFI_TYPE_SINT32: v.i32 = (int32_t)w; break;
	case FFI_TYPE_UINT32: v.u32 = (uint32_t)w; break;
	default:
		memcpy(dst, s->ret, t->size);
		return;
	}
	memcpy(dst, &v, t->size);
}

API int ppl_join_typed(pthread_t th, void *ret)
{
	lock_table();
	struct spawn **pp = bucket(th);
	while (*pp && !pthread_equal((*pp)->id, th))
		pp = &(*pp)->next;
	struct spawn *s = *pp;
	if (s) {
		*pp = s->next;   /* ours: no second joiner finds it */
		nrecords--;
	}
	pthread_mutex_unlock(&table_lock);
	if (s == NULL)
		return EINVAL;
	int err = pthread_join(th, NULL);
	if (err) {
		lock_table();
		s->next = *bucket(th);
		*bucket(th) = s;
		nrecords++;
		pthread_mutex_unlock(&table_lock);
		return err;
	}
	err = s->returned ? 0 : ECANCELED;
	if (s->returned && ret)
		copy_ret(s, ret);
	spawn_free(s);
	return err;
}
