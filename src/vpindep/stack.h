/* Thread stacks (stack.c). */
#ifndef PPL_STACK_H
#define PPL_STACK_H

#include "base.h"

/* ---- stacks (stack.c) ------------------------------------------------------ */

struct stack {
	void *lo;          /* lowest usable address */
	size_t size;       /* usable bytes, above the guard */
	void *guard_lo;    /* guard region [guard_lo, guard_lo + guard) below lo */
	size_t guard;
	bool user;         /* supplied by the application: never freed or cached */
	unsigned vg_id;    /* valgrind's id for it (stack_vg_register), or 0 */
};

/* Allocate a stack of `size` usable bytes with a guard of `guard` bytes. */
int stack_alloc(size_t size, size_t guard, struct stack *out) PPL_MUST_CHECK;
void stack_free(struct stack *s);
/* Reads RLIMIT_STACK for the default size, once (ppl_init). */
void stack_init(void);
/* The page size (sysconf, once). */
size_t stack_page_size(void);
size_t stack_default_size(void);   /* PPL_STACK_SIZE, else RLIMIT_STACK, else 8 MiB */
bool stack_guard_contains(const struct stack *s, const void *addr);
/* Tell valgrind (when libppl runs under it) that s is a stack, so that a
 * switch onto it is not "client switching stacks?"; stack_alloc and
 * stack_free do it for theirs, thread.c for the application's. */
void stack_vg_register(struct stack *s);
void stack_vg_deregister(struct stack *s);

#endif
