/* Per-thread CPU clocks (cpuclock.c) and CPU-time timers (cputimer.c). */
#ifndef PPL_CPUCLOCK_H
#define PPL_CPUCLOCK_H

#include "base.h"
#include "ult.h"

/* cpuclock.c: CPU time accounting at a switch, once a program asked for
 * a thread's CPU clock (from or to may be NULL: the VP's idle loop). */
extern _Atomic bool cpu_counting;
void cpu_switch_slow(struct ult *from, struct ult *to);
static inline void cpu_switch(struct ult *from, struct ult *to)
{
	if (ppl_unlikely(atomic_load_explicit(&cpu_counting, memory_order_relaxed)))
		cpu_switch_slow(from, to);
}
/* cpuclock.c: the thread a CPU clock id names (*ours false: not a user
 * thread's clock, the kernel's to handle; NULL with *ours: gone), its CPU
 * time in ns, and the start of CPU time accounting. */
struct ult *cpuclock_thread(clockid_t c, bool *ours);
int64_t cpuclock_ns(struct ult *t);
void cpuclock_counting_start(void);
/* t runs on the calling VP: if it has not been counted since counting
 * began (running then, or switched in by a VP that had not seen it
 * begin), it counts from now.  At each tick, and when it reads its clock. */
void cpuclock_tick(struct ult *t);
/* cputimer.c: t's CPU-time timers due by its CPU time `now` expire; the
 * check of the running thread at its VP's tick (not inside a lock). */
void cputimer_expire(struct ult *t, int64_t now);
/* A forked child has none of the parent's CPU-time timers. */
void cputimer_fork_child(void);
static inline void cputimer_tick(struct ult *t)
{
	if (ppl_unlikely(atomic_load_explicit(&t->cputimer_due, memory_order_relaxed) != 0))
		cputimer_expire(t, cpuclock_ns(t));
}

/* procwide.c: the C library's timer_create (real), timer_settime, ...
 * on a kernel clock, made and used in the initial process; the program's
 * getrusage(RUSAGE_SELF or RUSAGE_CHILDREN). */
int ktimer_create(void *real, clockid_t clk, struct sigevent *ev, timer_t *id);
int ktimer_settime(void *real, timer_t id, int flags, const struct itimerspec *nv,
		   struct itimerspec *ov);
int ktimer_gettime(void *real, timer_t id, struct itimerspec *v);
int ktimer_id_call(void *real, timer_t id);
int procwide_rusage(int who, struct rusage *r);

/* retire.c: a CPU-time timer was ever created (they keep the helpers). */
bool cputimer_used(void);

#endif
