/* The C halves of the dlopen/dlmopen wrappers (dl.c), called from
 * arch/<cpu>/dl_call.S around the C library's real function. */
#ifndef PPL_DL_CALL_H
#define PPL_DL_CALL_H

/* Returned in %rax:%rdx. */
struct dl_enter {
	void *(*fn)(void);
	const void *gadget;
};

/* The real function `which` (0: dlopen, 1: dlmopen) and a `ret` gadget in
 * the object that called it from `ret`. */
struct dl_enter ppl_dl_enter(const void *ret, int which);
/* After the real call: initialise the new object's static TLS. */
void ppl_dl_leave(void *handle);

#endif
