# libppl's gdb extension: libppl's user-level threads, which gdb's own
# "info threads" cannot see (it lists kernel threads: the VPs).
#
#   info ppl-threads           every thread: id, name, state, VP, what it
#                              waits on and since when
#   ppl-thread N [CMD...]      run CMD (default: bt) in thread N's context:
#                              a parked or ready thread's saved registers,
#                              a running one's kernel thread
#   ppl-thread apply all CMD   the same for every thread
#
# gdb loads it from libppl.so's .debug_gdb_scripts section (src/preload/
# gdb_script.py embeds it) or from its auto-load directory.  It needs
# libppl's debug information (struct ult, ppl_rt, ppl_tcb_pool).  A parked
# thread's frames come from a Python unwinder that makes frame #0's caller
# the saved context, so it works on a core file too, where registers
# cannot be written.  docs/debugging.md shows it in use.
import time

import gdb
from gdb.unwinder import Unwinder

# enum ult_state in src/vpindep/ult.h, in order
_STATES = ["free", "running", "ready", "blocked", "exiting", "zombie"]
_FREE, _RUNNING, _READY, _BLOCKED, _EXITING, _ZOMBIE = range(6)

# x86_64, src/vpdep/arch/x86_64/context.S: the frame at ctx.sp
_X86_FRAME = [("r15", 0x08), ("r14", 0x10), ("r13", 0x18), ("r12", 0x20),
              ("rbx", 0x28), ("rbp", 0x30), ("rip", 0x38)]
# ucontext variant: indices into uc_mcontext.gregs (<sys/ucontext.h>)
_X86_GREGS = [("r8", 0), ("r9", 1), ("r10", 2), ("r11", 3), ("r12", 4),
              ("r13", 5), ("r14", 6), ("r15", 7), ("rdi", 8), ("rsi", 9),
              ("rbp", 10), ("rbx", 11), ("rdx", 12), ("rax", 13), ("rcx", 14),
              ("rsp", 15), ("rip", 16)]


def _u64(v):
    return int(v.cast(gdb.lookup_type("unsigned long")))


def _word(addr):
    ptr = gdb.lookup_type("unsigned long").pointer()
    return int(gdb.Value(addr).cast(ptr).dereference())


def _pool_tcbs():
    """Every carved TCB of src/vpindep/tcbpool.c, skipping released groups."""
    pool = gdb.parse_and_eval("ppl_tcb_pool")
    ult_p = gdb.lookup_type("struct ult").pointer()
    stride, per_group = int(pool["stride"]), int(pool["per_group"])
    group_bytes, meta = int(pool["group_bytes"]), int(pool["meta_bytes"])
    for ci in range(int(pool["nchunks"])):
        c = pool["chunk"][ci]
        base = _u64(c)
        for k in range(int(c["carved"])):
            if bool(c["g"][k // per_group]["released"]):
                continue
            addr = base + meta + (k // per_group) * group_bytes + (k % per_group) * stride
            yield gdb.Value(addr).cast(ult_p)


def _threads():
    """The live TCBs: main, then the pool's (oldest first)."""
    rt = gdb.parse_and_eval("ppl_rt")
    gen = int(rt["fork_gen"])
    out = [rt["main_ult"].address]
    out.extend(_pool_tcbs())
    live = []
    for t in out:
        st = int(t["state"])
        if st == _FREE or int(t["fork_gen"]) != gen:
            continue
        live.append(t)
    return live


def _find(n):
    for t in _threads():
        if int(t["id"]) == n:
            return t
    raise gdb.GdbError("no libppl thread %d (see info ppl-threads)" % n)


def _name(t):
    if bool(t["is_main"]):
        return "main"
    return t["name"].string(length=16).split("\0")[0]


def _symbol(addr):
    s = gdb.execute("info symbol 0x%x" % addr, to_string=True).strip()
    if s.startswith("No symbol"):
        return ""
    return " <%s>" % s.split(" in section")[0].replace(" ", "")


def _kthread_tid(t):
    """LWP of the kernel thread a running thread is on."""
    if bool(t["foreign"]):
        return int(t["ktid"])
    vp = t["vp"]
    if _u64(vp) == 0:
        return 0
    return int(vp["vp"]["tid"])


def _api_call(t):
    """The libppl entry point a parked thread called: its outermost frame in libppl."""
    _unwinder.regs = _saved_regs(t)
    gdb.invalidate_cached_frames()
    try:
        name, f = "", gdb.newest_frame().older()
        while f is not None:
            lib = gdb.solib_name(f.pc()) or ""
            if "libppl" not in lib:
                break
            name = f.name() or name
            f = f.older()
        return name
    except gdb.error:
        return ""
    finally:
        _unwinder.regs = None
        gdb.invalidate_cached_frames()


def _waits_on(t):
    s = _waits_on_object(t)
    if int(t["state"]) == _BLOCKED and not bool(t["foreign"]):
        api = _api_call(t)
        if api:
            s = "%s: %s" % (api, s)
    return s


def _waits_on_object(t):
    st = int(t["state"])
    if st == _RUNNING:
        tid = _kthread_tid(t)
        return "on its kernel thread (LWP %d)" % tid if tid else ""
    if st != _BLOCKED:
        return ""
    j = t["joining"]
    if _u64(j) != 0:
        return "joins thread %d" % int(j["id"])
    lock = _u64(t["wait_lock"])
    timed = int(t["timer"]["state"]) != 0
    if lock == 0:
        return "sleeps" if timed else "parked"
    return "%sobject at 0x%x%s" % ("timed wait on " if timed else "", lock, _symbol(lock))


def _live_target():
    inf = gdb.selected_inferior()
    conn = getattr(inf, "connection", None)
    if conn is not None:
        return conn.type != "core"
    return "core" not in gdb.execute("info target", to_string=True).split("\n")[0]


def _since(t):
    if int(t["state"]) != _BLOCKED:
        return ""
    ns = int(t["park_since"])
    if ns == 0:
        return ""
    if _live_target():
        now = time.clock_gettime_ns(getattr(time, "CLOCK_MONOTONIC_COARSE", 6))
        return "%.3fs ago" % ((now - ns) / 1e9)
    return "at %.3f (monotonic s)" % (ns / 1e9)


def _saved_regs(t):
    """Registers of a thread that is not running, from its struct ctx."""
    ctx = t["ctx"]
    fields = [f.name for f in ctx.type.fields()]
    if "uc" in fields:
        g = ctx["uc"]["uc_mcontext"]["gregs"]
        return {name: int(g[i]) & 0xffffffffffffffff for name, i in _X86_GREGS}
    sp = _u64(ctx["sp"])
    regs = {name: _word(sp + off) for name, off in _X86_FRAME}
    regs["rsp"] = sp + 0x40
    return regs


class _ParkedUnwinder(Unwinder):
    """While `regs` is set, frame #0's caller is that saved context."""

    def __init__(self):
        super().__init__("libppl-parked")
        self.regs = None

    def __call__(self, pending):
        if self.regs is None or pending.level() != 0:
            return None
        pc = pending.read_register("rip")
        # Frame #0's id must be inner to its caller's, whose stack may lie
        # below the real one: say it sits just under the saved context.
        info = pending.create_unwind_info(_FrameId(self.regs["rsp"] - 0x40, pc))
        for name, val in self.regs.items():
            typ = pending.read_register(name).type
            info.add_saved_register(name, gdb.Value(val).cast(typ))
        return info


class _FrameId:
    def __init__(self, sp, pc):
        self.sp = gdb.Value(sp).cast(pc.type)
        self.pc = pc


_unwinder = _ParkedUnwinder()
gdb.unwinder.register_unwinder(None, _unwinder, replace=True)


def _renumber(out):
    """Drop frame #0 (the real one) from a bt and number the rest from 0."""
    lines, skip = [], False
    for line in out.splitlines():
        if line.startswith("#"):
            num, rest = line[1:].split(" ", 1)
            n = int(num)
            skip = n == 0
            if not skip:
                line = "#%-2d %s" % (n - 1, rest.lstrip())
        if not skip:
            lines.append(line)
    return "\n".join(lines) + ("\n" if lines else "")


def _run_in(t, cmd):
    """Run cmd with thread t's frames, return its output."""
    st = int(t["state"])
    if st == _ZOMBIE:
        return "(thread %d has exited)\n" % int(t["id"])
    if st == _RUNNING or (int(t["state"]) == _BLOCKED and bool(t["foreign"])):
        tid = _kthread_tid(t)
        old = gdb.selected_thread()
        for th in gdb.selected_inferior().threads():
            if th.ptid[1] == tid:
                th.switch()
                try:
                    return gdb.execute(cmd, to_string=True)
                finally:
                    old.switch()
        return "(thread %d runs on LWP %d, which gdb does not list)\n" % (int(t["id"]), tid)
    _unwinder.regs = _saved_regs(t)
    gdb.invalidate_cached_frames()
    try:
        if cmd.split()[0] in ("bt", "backtrace", "where"):
            return _renumber(gdb.execute(cmd, to_string=True))
        gdb.newest_frame().older().select()
        return gdb.execute(cmd, to_string=True)
    finally:
        _unwinder.regs = None
        gdb.invalidate_cached_frames()


def _header(t):
    return "Thread %d (%s) %s" % (int(t["id"]), _name(t) or "-", _STATES[int(t["state"])])


class InfoPplThreads(gdb.Command):
    """List libppl's user-level threads: id, name, state, VP, what each waits on, since when."""

    def __init__(self):
        super().__init__("info ppl-threads", gdb.COMMAND_STATUS)

    def invoke(self, arg, from_tty):
        rows = [("Id", "Name", "State", "VP", "Waits on", "Since")]
        for t in _threads():
            vp = t["vp"]
            rows.append((str(int(t["id"])), _name(t) or "-", _STATES[int(t["state"])],
                         str(int(vp["vp"]["id"])) if _u64(vp) else "-",
                         _waits_on(t), _since(t)))
        w = [max(len(r[i]) for r in rows) for i in range(5)]
        for r in rows:
            gdb.write("  ".join(r[i].ljust(w[i]) for i in range(5)) + "  " + r[5] + "\n")


class PplThread(gdb.Command):
    """ppl-thread N [CMD]: run CMD (default bt) on libppl thread N's frames.
ppl-thread apply all [CMD]: the same for every thread."""

    def __init__(self):
        super().__init__("ppl-thread", gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        argv = arg.split(None, 2)
        if len(argv) >= 2 and argv[0] == "apply" and argv[1] == "all":
            cmd = argv[2] if len(argv) > 2 else "bt"
            for t in _threads():
                gdb.write("\n%s:\n" % _header(t))
                gdb.write(_run_in(t, cmd))
            return
        if not argv:
            raise gdb.GdbError("usage: ppl-thread N [CMD] | ppl-thread apply all [CMD]")
        try:
            n = int(argv[0])
        except ValueError:
            raise gdb.GdbError("ppl-thread: %s is not a thread id" % argv[0])
        cmd = arg.split(None, 1)[1] if len(argv) > 1 else "bt"
        gdb.write(_run_in(_find(n), cmd))


InfoPplThreads()
PplThread()
