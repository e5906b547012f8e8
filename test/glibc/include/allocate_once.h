/* test/glibc/include/allocate_once.h: glibc's include/allocate_once.h
   without its internal atomic.h, for support_small_stack_thread_attribute.c:
   the fast path is an acquire load, the slow path the installed libc's own
   __libc_allocate_once_slow (GLIBC_PRIVATE).  */
#ifndef PPL_ALLOCATE_ONCE_H
#define PPL_ALLOCATE_ONCE_H
#include <stddef.h>

void *__libc_allocate_once_slow (void **place, void *(*allocate) (void *),
                                 void (*deallocate) (void *, void *),
                                 void *closure);

static inline void *
allocate_once (void **place, void *(*allocate) (void *),
               void (*deallocate) (void *, void *), void *closure)
{
  void *result = __atomic_load_n (place, __ATOMIC_ACQUIRE);
  if (result != NULL)
    return result;
  return __libc_allocate_once_slow (place, allocate, deallocate, closure);
}
#endif
