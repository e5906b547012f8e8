/* Scheduler traces (PPL_TRACE=file; docs/debugging.md): events in the
 * Chrome trace-event format (the JSON array form), which Perfetto and
 * chrome://tracing open.  One track per VP: a slice for each stretch a
 * thread runs there, instant events for create, exit, park, wake, steal,
 * preemption and hand-off to a spare kernel thread.
 *
 * Invariants
 *  - Each VP records into a buffer of its own (no lock, no atomic RMW but
 *    its `busy` flag), turned into JSON and written when full and at exit,
 *    under wlock.  Threads without a VP (foreign kernel threads, the
 *    monitor) share one more buffer, taken with a try-lock.
 *  - `busy` is set while a VP records: an event from a signal handler that
 *    interrupted a recording on the same kernel thread is dropped (and
 *    counted), and trace_finish waits for it to clear after setting
 *    `closed`, so no VP appends to a buffer being written for the last time.
 *  - The file is opened at start-up but written only from the runtime's
 *    start (trace_start), under an flock held to the end: a wrapper that
 *    inherits PPL_TRACE and never makes a thread (timeout, a shell) leaves
 *    it to the program it runs, and a threaded program started by a
 *    traced one writes FILE.PID instead of clobbering its parent's.
 *  - The file is "[" + events separated by ",\n" + "]": valid JSON once
 *    trace_finish ran (exit() from any thread, or return from main).  After
 *    _exit or a crash the events still buffered are lost and the closing
 *    "]" is missing, which both viewers accept. */
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "runtime.h"
#include "schedhooks.h"
#include "ult.h"
#include "vproc.h"

#define TBUF_EVENTS 4096                  /* per VP, 48 bytes each */
#define NSLOTS (2 * PPL_MAX_VPS + 1)      /* shared VPs and spares, bound VPs, the rest */
#define OTHER (NSLOTS - 1)

struct tev {
	int64_t ts;                /* CLOCK_MONOTONIC ns */
	uint64_t a, b;
	unsigned long cur;         /* thread running when it was recorded, 0: none */
	int kind;
	int vp;                    /* track: the VP, or -1 (no VP) */
	char name[16];             /* TR_SWITCH: the name of the thread switched in */
};

struct tslot {
	_Atomic int busy;
	unsigned n;
	bool named;                /* its track's name was written */
	bool open;                 /* a slice is open on its track (written part) */
	int64_t first;             /* ts of its first event */
	struct tev *ev;
};

unsigned char ppl_hooks PPL_HIDDEN;

static struct tslot slots[NSLOTS];
static int fd = -1;
static int64_t t0;
static int pid;
static spin_t wlock;           /* the file */
static spin_t other_lock;      /* slots[OTHER] */
static char path[4096];
static _Atomic bool started;   /* trace_start wrote the header: events are recorded */
static _Atomic bool closed;
static _Atomic unsigned long dropped;

static void put_all(const char *s, size_t n)
{
	vp_write(fd, s, n);   /* an error (disk full, say) cuts the trace short */
}

/* ---- JSON --------------------------------------------------------------------- */

struct out {
	char buf[8192];
	size_t n;
};

static void out_flush(struct out *o)
{
	put_all(o->buf, o->n);
	o->n = 0;
}

static void outf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void outf(struct out *o, const char *fmt, ...)
{
	if (o->n > sizeof o->buf - 512)
		out_flush(o);
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(o->buf + o->n, sizeof o->buf - o->n, fmt, ap);
	va_end(ap);
	if (k > 0)
		o->n += (size_t)k < sizeof o->buf - o->n ? (size_t)k : sizeof o->buf - o->n - 1;
}

/* Appending without printf: formatting is most of the cost of a trace. */
static inline void ap_n(struct out *o, const char *s, size_t n)
{
	if (o->n + n > sizeof o->buf)
		out_flush(o);
	for (size_t i = 0; i < n; i++)   /* short pieces: no call */
		o->buf[o->n + i] = s[i];
	o->n += n;
}

#define AP(o, lit) ap_n((o), (lit), sizeof(lit) - 1)

static void ap(struct out *o, const char *s)
{
	ap_n(o, s, strlen(s));
}

static void ap_u(struct out *o, uint64_t v)
{
	char t[24];
	int i = sizeof t;
	do
		t[--i] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	ap_n(o, t + i, sizeof t - i);
}

static void ap_i(struct out *o, long long v)
{
	if (v < 0) {
		ap_n(o, "-", 1);
		v = -v;
	}
	ap_u(o, (uint64_t)v);
}

static void ap_hex(struct out *o, uint64_t v)
{
	char t[24];
	int i = sizeof t;
	do
		t[--i] = "0123456789abcdef"[v & 15];
	while ((v >>= 4) != 0);
	ap_n(o, "\"0x", 3);
	ap_n(o, t + i, sizeof t - i);
	ap_n(o, "\"", 1);
}

/* A thread's name as a JSON string body: printable ASCII, escaped. */
static void ap_name(struct out *o, const char *src)
{
	for (size_t i = 0; i < 15 && src[i]; i++) {
		unsigned char c = (unsigned char)src[i];
		if (c == '"' || c == '\\')
			ap_n(o, "\\", 1);
		char ch = c >= 0x20 && c < 0x7f ? (char)c : '?';
		ap_n(o, &ch, 1);
	}
}

/* The fields every event has, the name written between the two halves,
 * up to "ts" (µs, to the ns), the object left open. */
static void head_open(struct out *o, const char *ph)
{
	AP(o, ",\n{\"ph\":\"");
	ap(o, ph);
	AP(o, "\",\"name\":\"");
}

static void head_close(struct out *o, int vp, int64_t ts)
{
	int64_t d = ts > t0 ? ts - t0 : 0;
	AP(o, "\",\"pid\":");
	ap_i(o, pid);
	AP(o, ",\"tid\":");
	ap_i(o, vp);
	AP(o, ",\"ts\":");
	ap_u(o, (uint64_t)d / 1000);
	char frac[4] = { '.', (char)('0' + d / 100 % 10), (char)('0' + d / 10 % 10), (char)('0' + d % 10) };
	ap_n(o, frac, 4);
}

static void head(struct out *o, const char *ph, const char *name, int vp, int64_t ts)
{
	head_open(o, ph);
	ap(o, name);
	head_close(o, vp, ts);
}

/* An instant event on track vp: its thread, and one more argument. */
static void instant(struct out *o, const char *name, int vp, const struct tev *e, const char *key)
{
	head(o, "i", name, vp, e->ts);
	AP(o, ",\"s\":\"t\",\"args\":{\"thread\":");
	ap_u(o, e->a);
	if (key) {
		AP(o, ",\"");
		ap(o, key);
		AP(o, "\":");
	}
}

/* The start of the slice of thread `id` (named nm, if any) on track vp. */
static void slice(struct out *o, uint64_t id, const char *nm, int vp, int64_t ts)
{
	head_open(o, "B");
	AP(o, "thread ");
	ap_u(o, id);
	if (nm && nm[0]) {
		AP(o, " (");
		ap_name(o, nm);
		AP(o, ")");
	}
	head_close(o, vp, ts);
	AP(o, ",\"args\":{\"thread\":");
	ap_u(o, id);
	AP(o, "}}");
}

static const char *const why_names[] = { "tick", "priority", "deferred", "seed", "chaos" };

static void emit(struct out *o, struct tslot *s, const struct tev *e)
{
	int tid = e->vp;
	if (!s->named) {
		s->named = true;
		if (tid >= 0)
			outf(o, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
			     "\"args\":{\"name\":\"VP %d\"}}", pid, tid, tid);
		else
			outf(o, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":-1,"
			     "\"args\":{\"name\":\"no VP (foreign kernel threads)\"}}", pid);
	}
	switch (e->kind) {
	case TR_SWITCH:
		if (e->a != 0) {
			if (!s->open)   /* it ran before the trace saw it start */
				slice(o, e->a, NULL, tid, s->first);
			head(o, "E", "", tid, e->ts);
			AP(o, "}");
			s->open = false;
		}
		if (e->b != 0) {
			slice(o, e->b, e->name, tid, e->ts);
			s->open = true;
		}
		return;
	case TR_CREATE:
	case TR_EXIT:
	case TR_WAKE:
		instant(o, e->kind == TR_CREATE ? "create" : e->kind == TR_EXIT ? "exit" : "wake",
			tid, e, "by");
		ap_u(o, e->cur);
		break;
	case TR_PARK:
		instant(o, "park", tid, e, "on");
		if (e->b)
			ap_hex(o, e->b);
		else
			AP(o, "\"sleep\"");
		break;
	case TR_STEAL:
		instant(o, "steal", tid, e, "from_vp");
		ap_u(o, e->b);
		break;
	case TR_HANDOFF:
		head(o, "i", "handoff", (int)e->a, e->ts);
		AP(o, ",\"s\":\"t\",\"args\":{\"vp\":");
		ap_u(o, e->a);
		AP(o, ",\"spare_vp\":");
		ap_u(o, e->b);
		break;
	case TR_PREEMPT:
		instant(o, "preempt", tid, e, "why");
		AP(o, "\"");
		ap(o, e->b < sizeof why_names / sizeof why_names[0] ? why_names[e->b] : "?");
		AP(o, "\"");
		break;
	default:
		return;
	}
	AP(o, "}}");
}

/* Write slot s's events (caller holds wlock and owns s: its VP, or
 * trace_finish once `busy` is clear). */
static void write_slot(struct tslot *s)
{
	static struct out o;   /* under wlock */
	for (unsigned i = 0; i < s->n; i++)
		emit(&o, s, &s->ev[i]);
	s->n = 0;
	out_flush(&o);
}

static void flush_slot(struct tslot *s)
{
	spin_lock(&wlock);
	write_slot(s);
	spin_unlock(&wlock);
}

/* ---- recording ------------------------------------------------------------------ */

static int slot_of(struct vproc *v)
{
	if (v == NULL)
		return OTHER;
	int id = v->vp.id;
	return id >= 0 && id < OTHER ? id : OTHER;
}

/* The slot to record into, busy; NULL: drop the event. */
static struct tslot *begin(struct vproc *v, int *idx)
{
	int i = slot_of(v);
	if (i == OTHER && !spin_try_lock(&other_lock)) {
		atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
		return NULL;
	}
	struct tslot *s = &slots[i];
	if (atomic_exchange_explicit(&s->busy, 1, memory_order_seq_cst) != 0) {
		/* A signal handler interrupted this kernel thread's recording. */
		atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
		goto fail;
	}
	if (atomic_load_explicit(&closed, memory_order_seq_cst) ||
	    !atomic_load_explicit(&started, memory_order_acquire)) {
		atomic_store_explicit(&s->busy, 0, memory_order_release);
		goto fail;
	}
	if (s->ev == NULL) {
		void *p = vp_mem_map(TBUF_EVENTS * sizeof(struct tev));
		if (p == NULL) {
			atomic_store_explicit(&s->busy, 0, memory_order_release);
			atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
			goto fail;
		}
		s->ev = p;
	}
	*idx = i;
	return s;
fail:
	if (i == OTHER)
		spin_unlock(&other_lock);
	return NULL;
}

static void end(struct tslot *s, int i)
{
	if (s->n == TBUF_EVENTS)
		flush_slot(s);
	atomic_store_explicit(&s->busy, 0, memory_order_release);
	if (i == OTHER)
		spin_unlock(&other_lock);
}

static struct tev *next_ev(struct tslot *s, struct vproc *v, int kind)
{
	struct tev *e = &s->ev[s->n++];
	e->ts = clock_now_ns(CLOCK_MONOTONIC);
	if (s->n == 1 && s->first == 0)
		s->first = e->ts;
	e->kind = kind;
	e->vp = v ? v->vp.id : -1;
	e->cur = v && v->current ? v->current->id : 0;
	return e;
}

void trace_event(int kind, uint64_t a, uint64_t b)
{
	struct vproc *v = (struct vproc *)vp_current();
	int i;
	struct tslot *s = begin(v, &i);
	if (s == NULL)
		return;
	struct tev *e = next_ev(s, v, kind);
	e->a = a;
	e->b = b;
	e->name[0] = '\0';
	end(s, i);
}

void trace_switch(struct vproc *v, struct ult *from, struct ult *to)
{
	int i;
	struct tslot *s = begin(v, &i);
	if (s == NULL)
		return;
	struct tev *e = next_ev(s, v, TR_SWITCH);
	e->a = from ? from->id : 0;
	e->b = to ? to->id : 0;
	if (to)
		memcpy(e->name, to->name, sizeof e->name);
	else
		e->name[0] = '\0';
	end(s, i);
}

/* ---- start, fork, exit ------------------------------------------------------------ */

static void at_exit(void)
{
	trace_finish();
}

/* At start-up: the file is opened (created if need be) but left as it is,
 * so that a process that never starts a thread (a wrapper such as
 * timeout(1) or a shell, which inherit PPL_TRACE) does not clobber the
 * trace of the program it runs. */
int trace_open(const char *p)
{
	if (strlen(p) >= sizeof path) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(path, p);
	fd = vp_file_open(path, false);
	if (fd < 0)
		return -1;
	atexit(at_exit);
	ppl_hooks |= PPL_HOOK_TRACE;
	return 0;
}

/* At the runtime's start, before any VP runs: the file becomes this
 * process's.  One that another live process writes (it holds the lock: a
 * parent that ran this program) is left to it: this one writes FILE.PID. */
void trace_start(void)
{
	if (fd < 0 || atomic_load_explicit(&started, memory_order_relaxed))
		return;
	pid = vp_process_id();
	if (!vp_file_lock(fd)) {
		vp_file_close(fd);
		char alt[sizeof path + 16];
		snprintf(alt, sizeof alt, "%s.%d", path, pid);
		fd = vp_file_open(alt, true);
		if (fd < 0)
			return;   /* nothing is recorded */
		vp_file_lock(fd);
	} else {
		vp_file_truncate(fd);
	}
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	char buf[160];
	int n = snprintf(buf, sizeof buf,
			 "[{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"libppl %d\"}}",
			 pid, pid);
	put_all(buf, (size_t)n);
	atomic_store_explicit(&started, true, memory_order_release);
}

/* The child of fork does not write the parent's events (the parent does)
 * nor events of its own into the parent's file. */
void trace_fork_child(void)
{
	if (fd < 0)
		return;
	ppl_hooks &= (unsigned char)~PPL_HOOK_TRACE;
	atomic_store_explicit(&closed, true, memory_order_relaxed);
	vp_file_close(fd);
	fd = -1;
}

void trace_finish(void)
{
	if (fd < 0 || atomic_exchange_explicit(&closed, true, memory_order_seq_cst))
		return;
	if (!atomic_load_explicit(&started, memory_order_acquire)) {
		/* No thread was ever started: a file nobody else writes or
		 * wrote gets an empty array. */
		if (vp_file_lock(fd) && vp_file_size(fd) == 0)
			put_all("[]\n", 3);
		return;
	}
	/* Later events find `closed` (ppl_hooks stays: other VPs read it). */
	int64_t end_ts = clock_now_ns(CLOCK_MONOTONIC);
	/* exit() from a signal handler that interrupted a flush: give up the
	 * file rather than wait for ourselves. */
	for (int k = 0; !spin_try_lock(&wlock); k++)
		if (k > 1000000)
			return;
	static struct out o;
	for (int i = 0; i < NSLOTS; i++) {
		struct tslot *s = &slots[i];
		if (s->ev == NULL)
			continue;
		/* A VP in the middle of an event finishes it in a few
		 * instructions, unless it is this kernel thread, interrupted. */
		for (int k = 0; atomic_load_explicit(&s->busy, memory_order_seq_cst) && k < 100000; k++)
			cpu_relax();
		if (atomic_load_explicit(&s->busy, memory_order_seq_cst))
			continue;
		write_slot(s);
		if (s->open) {
			head(&o, "E", "", i == OTHER ? -1 : i, end_ts);
			outf(&o, "}");
			s->open = false;
		}
	}
	unsigned long d = atomic_load_explicit(&dropped, memory_order_relaxed);
	if (d)
		outf(&o, ",\n{\"ph\":\"M\",\"name\":\"libppl_dropped_events\",\"pid\":%d,"
		     "\"args\":{\"dropped\":%lu}}", pid, d);
	outf(&o, "\n]\n");
	out_flush(&o);
	spin_unlock(&wlock);
}
