/* Debugging hooks of the scheduler: deterministic schedules (detsched.c,
 * PPL_SCHED_SEED, PPL_SCHED_CHAOS) and scheduler traces (trace.c,
 * PPL_TRACE).  Both are off unless asked for; a hook site then costs one
 * load of ppl_hooks and a branch that is never taken. */
#ifndef PPL_SCHEDHOOKS_H
#define PPL_SCHEDHOOKS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define PPL_HOOK_SEED  1           /* PPL_SCHED_SEED: seeded one-VP schedule */
#define PPL_HOOK_TRACE 2           /* PPL_TRACE: events recorded */
#define PPL_HOOK_SCHED 4           /* a scheduler installed (PPL_SCHED, ppl_sched_install) */

/* Written only while the process runs one thread: at start-up (env.c)
 * and in a forked child.  So a plain read, which compiles to one
 * `testb $bit, ppl_hooks(%rip)` and a branch. */
extern unsigned char ppl_hooks __attribute__((visibility("hidden")));

#define ppl_hook_on(bit) __builtin_expect((ppl_hooks & (bit)) != 0, 0)

struct ult;
struct vproc;

/* ---- detsched.c ----------------------------------------------------------- */
void detsched_init(uint64_t seed, uint64_t chaos);   /* chaos: p * 2^64, saturated */
/* A library entry point: maybe switch to another thread (chaos, or the
 * end of a seeded time slice). */
void detsched_point(void);
/* Caller holds v->rq_lock and is about to take the head of v's queue:
 * move a thread chosen by the seed to the head. */
void detsched_pick(struct vproc *v);

static inline void sched_point(void)
{
	if (ppl_hook_on(PPL_HOOK_SEED))
		detsched_point();
}

/* ---- schedplug.c ------------------------------------------------------------
 * The installed scheduler (ppl_sched_install, PPL_SCHED) holds the ready
 * threads of priority 0 with no home VP; sched.c's run queue keeps the
 * others and calls these, with v->rq_lock held, when PPL_HOOK_SCHED is on. */
/* t (queued_on v, counted in rq_len) becomes ready: true if the scheduler
 * took it, false if it goes on v's own lists. */
bool plug_put(struct vproc *v, struct ult *t);
/* The scheduler's next thread queued on v, for v itself (thief NULL) or
 * for an idle thief; NULL if none.  Checked: fatal if not one of v's. */
struct ult *plug_take(struct vproc *v, struct vproc *thief);
/* Take t (the scheduler's, queued on v) back; false if it cannot. */
bool plug_remove(struct vproc *v, struct ult *t);
void plug_blocked(struct ult *t);
void plug_exited(struct ult *t);
const char *ppl_sched_name_hidden(void);
/* a and b run threads under the same scheduler (a group of VPs). */
bool plug_same_group(struct vproc *a, struct vproc *b);
/* v's scheduler keeps one order for its group (prio, timestamp). */
bool plug_ordered(struct vproc *v);
/* For self yielding on v (v->rq_lock held), v's scheduler keeping one
 * order: the group's best thread for v if not worse than self, taken
 * (counted out of v's rq_len by the caller); NULL: self runs on. */
struct ult *plug_take_before(struct vproc *v, struct ult *self);
/* The forked child: the schedulers' shared lists emptied. */
void plug_fork_child(void);
/* PPL_SCHED=name (env.c): 0, or -1 for an unknown name. */
int plug_select(const char *name);

/* ---- trace.c -------------------------------------------------------------- */
enum trace_kind {
	TR_SWITCH = 1,   /* a: thread out (0: idle loop), b: thread in */
	TR_CREATE,       /* a: new thread */
	TR_EXIT,         /* a: exiting thread */
	TR_PARK,         /* a: thread, b: object (wait queue or lock), 0 for a sleep */
	TR_WAKE,         /* a: thread made ready */
	TR_STEAL,        /* a: thread, b: VP it was taken from */
	TR_HANDOFF,      /* a: VP stuck in the kernel, b: spare VP taking its work */
	TR_PREEMPT,      /* a: thread, b: why (enum trace_why) */
};
enum trace_why { TW_TICK, TW_PRIO, TW_DEFERRED, TW_SEED, TW_CHAOS };

int trace_open(const char *path);   /* env.c; -1 (errno) if it cannot be created */
void trace_start(void);              /* init.c: the runtime starts */
void trace_event(int kind, uint64_t a, uint64_t b);
void trace_switch(struct vproc *v, struct ult *from, struct ult *to);
void trace_fork_child(void);
void trace_finish(void);              /* at exit: write what is buffered, close the array */

#define ppl_trace(kind, a, b)                                        \
	do {                                                         \
		if (ppl_hook_on(PPL_HOOK_TRACE))                     \
			trace_event((kind), (uint64_t)(a), (uint64_t)(b)); \
	} while (0)

#endif
