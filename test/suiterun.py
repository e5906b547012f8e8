"""What test/posix/run and test/glibc/run share: running a test natively
(NPTL, the reference), preloaded and relinked, re-running a failure beside
NPTL to tell a race NPTL loses too from a libppl failure, and the report.

A suite's runner makes Test objects (name, family, exe), builds them and
calls run_all, which runs them, re-runs failures, prints the report and
returns the exit status.  The runner's opts carry what differs: the time
limit, the exit codes of its test driver (opts.exit_codes), the
environment (opts.env), the jobs and rounds, --racy, --undefined,
--allow-fail.
"""

import concurrent.futures
import ctypes
import json
import math
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time



def libppl_modes():
    """The libppl modes to run: PPL_SUITE_MODES (comma-separated, of
    preload and relinked; default both), after the native reference.  CI
    runs a second VP backend's suites preloaded only (scripts/test)."""
    want = os.environ.get('PPL_SUITE_MODES', 'preload,relinked').split(',')
    bad = [m for m in want if m not in ('preload', 'relinked')]
    if bad or not want:
        raise SystemExit('PPL_SUITE_MODES: expected preload and/or relinked, got %r'
                         % os.environ['PPL_SUITE_MODES'])
    return ('native',) + tuple(m for m in ('preload', 'relinked') if m in want)


MODES = libppl_modes()


class NativeCache:
    """The native (NPTL) results of a suite's last run in the same output
    directory, reused by a later pass when PPL_SUITE_NATIVE=reuse: CI runs
    the suites once per VP backend (scripts/test), and NPTL's results do
    not depend on libppl's backend.  An entry counts only for the same
    executable (its size and modification time); a failure that is
    re-checked runs NPTL again beside libppl (recheck)."""

    def __init__(self, out):
        self.path = os.path.join(out, 'native-results.json')
        self.reuse = os.environ.get('PPL_SUITE_NATIVE', '') == 'reuse'
        self.lock = threading.Lock()
        try:
            with open(self.path) as f:
                self.entries = json.load(f)
        except (OSError, ValueError):
            self.entries = {}

    @staticmethod
    def stamp(exe):
        st = os.stat(exe)
        return [st.st_size, st.st_mtime_ns]

    def get(self, name, exe):
        """(result, secs) of name's native run with exe, or None."""
        e = self.entries.get(name) if self.reuse and exe not in (None, 'BUILD_FAIL') else None
        try:
            if e is not None and e['stamp'] == self.stamp(exe):
                return e['result'], e['secs']
        except OSError:
            pass
        return None

    def last_secs(self, name):
        """NPTL's time for name in the last run, whatever its executable
        (an order, not a result); 0 if unknown."""
        return self.entries.get(name, {}).get('secs', 0)

    def put(self, name, exe, result, secs):
        if exe in (None, 'BUILD_FAIL'):
            return
        try:
            entry = {'stamp': self.stamp(exe), 'result': result, 'secs': secs}
        except OSError:
            return
        with self.lock:
            self.entries[name] = entry

    def save(self):
        tmp = self.path + '.tmp'
        with open(tmp, 'w') as f:
            json.dump(self.entries, f)
        os.replace(tmp, self.path)


class Test:
    def __init__(self, name, src, family):
        self.name = name      # e.g. pthread_mutex_lock/1-1
        self.src = src
        self.family = family
        self.exe = {}         # 'native'/'ppl' -> path, None if nothing to run, or 'BUILD_FAIL'
        self.result = {}      # mode -> 'PASS', 'FAIL', 'CRASH:SIGSEGV', ...
        self.secs = {}        # mode -> wall time of the run
        self.rerun = {}       # mode -> failures in re-runs, 'rounds' -> how many (recheck)
        self.race = set()     # libppl modes whose failure NPTL shares (recheck)
        self.killed = {}      # mode -> who sent the SIGKILL that ended it (KillTrace)
        self.stall = set()    # libppl modes whose time-out was the kernel's (recheck)
        self.undefined = False  # its verdict rests on undefined behaviour (--undefined)
        self.lock = None      # a callable returning a context manager held while it runs


def sh(cmd, log):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        log.append('$ ' + ' '.join(cmd) + '\n' + p.stdout)
    return p.returncode == 0


def up_to_date(stamp, cmd, inputs):
    """Whether stamp records cmd and is newer than every input."""
    try:
        with open(stamp) as f:
            if f.read() != cmd:
                return False
        return os.path.getmtime(stamp) >= max(inputs)
    except OSError:
        return False


def write_log(out, kind, name, text):
    path = os.path.join(out, 'logs', kind, name + '.log')
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)


def stat_of(path):
    """A /proc stat file as (comm, fields after it); fields[3] is the
    session (field 6 of proc(5))."""
    with open(path) as f:
        head, rest = f.read().rsplit(')', 1)
    return head.split('(', 1)[1], rest.split()


def processes():
    """The pids in /proc, ascending, but this runner's own."""
    return sorted((int(p) for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()))


def kill_test(sid, pipe):
    """SIGKILL what is left of a test: every process of session sid (the
    test's process group and the groups its children made for themselves:
    glibc's test driver runs each test in a child with a group of its own),
    and any other process that holds its output pipe (a child that made a
    session of its own), whose output would otherwise be waited for
    (pipe: the inode of its output pipe, while it is still open, or None)."""
    target = 'pipe:[%d]' % pipe if pipe is not None else None
    for pid in processes():
        try:
            mine = int(stat_of('/proc/%d/stat' % pid)[1][3]) == sid
            if not mine and target is not None:
                fds = '/proc/%d/fd' % pid
                mine = any(os.readlink(os.path.join(fds, fd)) == target for fd in os.listdir(fds))
        except (OSError, IndexError, ValueError):
            continue
        if mine:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def session_report(sid):
    """Each process of session sid and each of its kernel threads: state,
    wait channel and kernel stack (docs/posix.md, "Kernel stalls"); and
    whether a thread sits in the kernel's exit in uninterruptible sleep,
    the stall this kernel shows under NPTL too (a child's exit_mmap
    waiting for a file mapping's lock for seconds)."""
    lines, stalled = [], False
    for pid in processes():
        try:
            proc = stat_of('/proc/%d/stat' % pid)[1]
            if int(proc[3]) != sid:
                continue
            parent = proc[1]   # a forked child's, or a VP process's (its manager's)
            for tid in sorted(os.listdir('/proc/%d/task' % pid), key=int):
                task = '/proc/%d/task/%s/' % (pid, tid)
                comm, fields = stat_of(task + 'stat')
                state = fields[0]
                with open(task + 'wchan') as f:
                    wchan = f.read().strip()
                try:
                    with open(task + 'stack') as f:
                        stack = [l.split()[-1] for l in f.read().splitlines() if l.strip()]
                except OSError:
                    stack = []   # not root
                lines.append('  pid %d (parent %s) tid %s (%s) state %s wchan %s: %s' % (
                    pid, parent, tid, comm, state, wchan or '-', ' < '.join(stack[:8])))
                stalled |= state == 'D' and any(fn.startswith('do_exit') for fn in stack)
        except (OSError, IndexError, ValueError):
            continue
    return '\n'.join(lines), stalled


class KillTrace:
    """Who sent a SIGKILL that ended a test: while the suite runs, a trace
    instance of the kernel's signal_generate event for signal 9 (root and
    tracefs only; else nothing), so that a test that ends CRASH:SIGKILL
    names its sender in its log (docs/posix.md, "Killed by whom").  CI has
    seen such ends that no re-run repeated, on NPTL's side never."""

    BASE = '/sys/kernel/tracing'

    def __init__(self):
        self.dir = None
        if os.geteuid() != 0:
            return
        if not os.path.isdir(os.path.join(self.BASE, 'instances')):
            subprocess.run(['mount', '-t', 'tracefs', 'nodev', self.BASE],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        d = os.path.join(self.BASE, 'instances', 'ppl-suiterun-%d' % os.getpid())
        try:
            os.mkdir(d)
            self.dir = d
            event = os.path.join(d, 'events', 'signal', 'signal_generate')
            for name, value in (('filter', 'sig == 9'), ('enable', '1')):
                with open(os.path.join(event, name), 'w') as f:
                    f.write(value)
        except OSError:
            self.close()

    def senders(self, pid):
        """The trace's lines of a SIGKILL to pid: the sender is the task at
        the start of each ("comm-tid"), the target after "pid="."""
        if self.dir is None:
            return 'SIGKILL senders: not traced (needs root and tracefs)'
        try:
            with open(os.path.join(self.dir, 'trace'), errors='replace') as f:
                hits = [l.strip() for l in f if ' pid=%d ' % pid in l]
        except OSError as e:
            return 'SIGKILL senders: trace unreadable: %s' % e
        return 'SIGKILL senders (kernel trace, signal_generate sig=9 to pid %d):\n%s' % (
            pid, '\n'.join('  ' + l for l in hits) or '  none recorded')

    def close(self):
        if self.dir is not None:
            try:
                os.rmdir(self.dir)   # the kernel frees an instance on rmdir
            except OSError:
                pass
            self.dir = None


def read_until(f, deadline):
    """What f gives until its end or the deadline (time.monotonic())."""
    chunks = []
    with selectors.DefaultSelector() as sel:
        sel.register(f, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                break
            chunk = os.read(f.fileno(), 65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b''.join(chunks)


def exited(pid, pause):
    """Whether process pid has ended, leaving it unreaped (its pid stays
    taken); sleeps pause seconds before saying it has not."""
    info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    if info is None:
        time.sleep(pause)
    return info is not None


def run_one(t, mode, opts, out, limit, log_kind=None):
    """Run t in mode; returns its result and records it (and its time) in
    t unless log_kind names a re-run, whose log goes there instead."""
    exe = t.exe['ppl' if mode == 'relinked' else 'native']
    if exe in (None, 'BUILD_FAIL'):
        res = 'BUILD_FAIL' if exe else 'PASS'
        if log_kind is None:
            t.result[mode] = res
        return res
    env = dict(os.environ)
    env.pop('LD_PRELOAD', None)
    env.update(getattr(opts, 'env', {}))
    if mode == 'preload':
        env['LD_PRELOAD'] = opts.libppl
    work = tempfile.mkdtemp(prefix='run-', dir=os.path.join(out, 'work'))
    start = time.monotonic()
    # A session of its own, so that a timeout kills the forked children too.
    p = subprocess.Popen([exe], cwd=work, env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True)
    pipe = os.fstat(p.stdout.fileno()).st_ino
    output, done = read_until(p.stdout, start + limit), False
    while not done and time.monotonic() < start + limit:
        done = exited(p.pid, 0.01)
    stalled = False
    if not done:
        where, stalled = session_report(p.pid)
        kill_test(p.pid, pipe)
        # Anything still holding the pipe after that is out of reach: stop
        # reading after 10 s rather than wait for ever.
        output += read_until(p.stdout, time.monotonic() + 10)
        output += ('\nAt the time limit:\n%s\n' % where).encode()
    secs = time.monotonic() - start
    # Stray children of a finished test, by its session only (its pipe's
    # inode may already be another test's).  The test is reaped only after
    # that: until then no other process can take its pid, which a new test
    # (a session of its own) would also have as its session id.
    kill_test(p.pid, None)
    p.stdout.close()
    p.wait()
    rc = p.returncode if done else None
    shutil.rmtree(work, ignore_errors=True)
    if rc is None:
        res = 'TIMEOUT:KERNEL-EXIT' if stalled else 'TIMEOUT'
    elif rc < 0:
        res = 'CRASH:' + signal.Signals(-rc).name
        if rc == -signal.SIGKILL:
            who = opts.kill_trace.senders(p.pid)
            output += ('\n%s\n' % who).encode()
            if log_kind is None:
                t.killed[mode] = who
    else:
        res = opts.exit_codes.get(rc, 'EXIT:%d' % rc)
    if log_kind is None:
        t.result[mode] = res
        t.secs[mode] = secs
    text = output.decode(errors='replace')
    write_log(out, log_kind or mode, t.name, '%s\n%s (%.1f s)\n' % (text, res, secs))
    return res


def run_modes(t, opts, out):
    # The modes run one after another: tests name their semaphores and
    # files after themselves, so two modes of one test must not overlap.
    # Some tests take a while on purpose (pthread_create/15-1 half a minute,
    # pi_test a minute): NPTL gets three times the limit, libppl at least three
    # times what NPTL took, so that only a hang costs the whole limit.  (Twice
    # was too tight when NPTL's time comes from an earlier pass, as it does
    # for the clone and process backends: glibc's tst-robust-fork, 32,768
    # forks, took NPTL 5.3 s in the kthread pass and libppl past 10.6 s
    # under the next pass's load, then passed 20 re-runs of 20.  Three
    # times was too tight too, once: NPTL's 5.8 s of the kthread pass,
    # libppl past 17.5 s in the process pass, 20 re-runs of 20 passed, 4.4
    # to 8.2 s on the quiet machine.  So four times an earlier pass's.)
    # A test NPTL does not pass is not counted: libppl gets only the plain
    # limit after an NPTL time-out, but three times NPTL's time after a
    # plain failure (which may come before the test's last sleeps), so
    # that a test that sleeps on purpose can show a win (the rwlock
    # priority tests sleep 11 to 15 s; NPTL fails them after 6 to 14).
    cached = opts.native.get(t.name, t.exe['native'])
    times = 4 if cached is not None else 3   # NPTL's time, times this, for libppl
    if cached is not None:
        t.result['native'], t.secs['native'] = cached
        if t.result['native'] != 'PASS':
            # Not counted either way; the first pass showed what libppl
            # does with it (a win or not), a later one only takes time.
            for mode in MODES[1:]:
                t.result[mode] = 'NOT-RUN'
            return
    else:
        run_one(t, 'native', opts, out, 3 * opts.timeout)
    if t.result['native'] == 'PASS':
        limit = max(opts.timeout, times * t.secs.get('native', 0))
    elif not t.result['native'].startswith('TIMEOUT'):
        limit = max(opts.timeout, times * t.secs.get('native', 0))
    else:
        limit = opts.timeout
    for mode in MODES[1:]:
        run_one(t, mode, opts, out, limit)


def run_test(t, opts, out):
    if t.lock is None:
        run_modes(t, opts, out)
        return
    with t.lock():
        run_modes(t, opts, out)


# The verdicts a test reaches by itself (its driver's exit codes), as
# against a hang, a crash or a bad exit.
VERDICTS = ('FAIL', 'UNRESOLVED')


def excused_verdict(t, res):
    """A test that --undefined lists (its verdict rests on behaviour POSIX
    leaves undefined) failed by its own verdict: reported, not counted.  A
    hang or a crash there still counts."""
    return t.undefined and res in VERDICTS


def recheck(t, opts, out):
    """Re-run a test NPTL passed and libppl did not, NPTL and the failing
    modes in turn, to tell a libppl failure from a race in the test that
    NPTL loses too (docs/posix.md, "Races"): the failure stands unless NPTL
    fails at least once in these rounds and libppl not significantly more
    often (same_rate).  Once every failing mode is significantly worse
    the matter is settled, so a hang costs five rounds, not all."""
    modes = [m for m in MODES[1:] if t.result[m] != 'PASS']
    fails = dict.fromkeys(['native'] + modes, 0)
    rounds = 0
    for rounds in range(1, opts.rounds + 1):
        kind_of = lambda m: 'rerun-%s/%d' % (m, rounds)
        failed = lambda res: res != 'PASS' and not excused_verdict(t, res)
        fails['native'] += failed(run_one(t, 'native', opts, out, 3 * opts.timeout,
                                          kind_of('native')))
        limit = max(opts.timeout, 3 * t.secs.get('native', 0))
        for m in modes:
            fails[m] += failed(run_one(t, m, opts, out, limit, kind_of(m)))
        # Significantly worse already: a hang costs five rounds.  Not a
        # test --racy lists, whose rate a few rounds misjudge (the Open
        # POSIX pthread_mutex_init/5-3 stopped at 8 rounds, NPTL 0 and
        # libppl 5, in a rehearsal; side by side here NPTL lost it 17
        # times in 90, libppl 1).
        if t.name not in opts.racy and all(not same_rate(fails[m], fails['native'])
                                           for m in modes):
            break
    t.rerun = dict(fails, rounds=rounds)
    # NPTL must lose it too in the re-runs, unless the test's own code is
    # known to race (--racy): NPTL may just be lucky there.
    nptl_loses = fails['native'] >= 1 or t.name in opts.racy
    t.race = {m for m in modes if nptl_loses and same_rate(fails[m], fails['native'])}
    # A time-out caught stuck in the kernel's exit is the kernel's, as
    # long as the re-runs do not show libppl failing more than NPTL.
    t.stall = {m for m in modes if t.result[m] == 'TIMEOUT:KERNEL-EXIT' and
               same_rate(fails[m], fails['native'])}


def same_rate(ppl, nptl):
    """Whether libppl's failures in the re-runs (ppl) are no more than
    chance above NPTL's (nptl) in as many rounds: within two standard
    deviations of the difference of two equal rates, about sqrt(ppl+nptl)."""
    return ppl - nptl <= 2 * math.sqrt(ppl + nptl)


def parallel(fn, tests, opts, out, what):
    done = 0
    with concurrent.futures.ThreadPoolExecutor(opts.jobs) as pool:
        futures = {pool.submit(fn, t, opts, out): t for t in tests}
        for f in concurrent.futures.as_completed(futures):
            f.result()
            done += 1
            t = futures[f]
            if what == 'run' and (opts.verbose or any(r != 'PASS' for r in t.result.values())):
                print('[%d/%d] %-50s %s' % (done, len(tests), t.name,
                      ' '.join('%s=%s' % (m, t.result[m]) for m in MODES)), flush=True)
            elif what == 'recheck':
                print('[re-run %d/%d] %-43s failed %s' % (done, len(tests), t.name,
                      rerun_counts(t)), flush=True)


def read_list(path):
    """A file of test names, one a line, "# reason" after it."""
    known = {}
    with open(path) as f:
        for line in f:
            name, _, reason = line.partition('#')
            if name.strip():
                known[name.strip()] = reason.strip()
    return known


def rerun_counts(t):
    return ' '.join('%s %d/%d' % (m, n, t.rerun['rounds'])
                    for m, n in t.rerun.items() if m != 'rounds')


def keep_the_clock():
    """No test this process runs may set the system clock.  Run as root,
    Open POSIX's pthread_cond_init/1-2 and 2-2 set CLOCK_REALTIME a week
    ahead and back, under every test running beside them, here and in the
    other meson tests: sem_timedwait/10-1 (whose deadline is the next whole
    second) failed in three full runs, and a timer unit test saw the clock
    gain 485 us in 30 ms.  Without CAP_SYS_TIME in the bounding set, root's
    programs get EPERM as anyone else's would (those two then report
    UNTESTED, on NPTL and libppl alike).  Not root: nothing to drop."""
    PR_CAPBSET_DROP, CAP_SYS_TIME = 24, 25
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_CAPBSET_DROP, CAP_SYS_TIME, 0, 0, 0)


def run_all(tests, known, opts, out, tag):
    """Run the built tests three ways, re-run the failures that --allow-fail
    does not list, print the report; returns the exit status."""
    keep_the_clock()
    start = time.monotonic()
    opts.native = NativeCache(out)
    opts.kill_trace = KillTrace()
    try:
        # Longest first, by NPTL's time in the last run where there was one,
        # so that a long test does not start last and run alone at the end.
        for t in tests:
            t.undefined = t.name in getattr(opts, 'undefined', {})
        longest = sorted(tests, key=lambda t: opts.native.last_secs(t.name), reverse=True)
        parallel(run_test, longest, opts, out, 'run')
        for t in tests:
            opts.native.put(t.name, t.exe['native'], t.result['native'], t.secs.get('native', 0))
        opts.native.save()
        again = [t for t in tests if t.result['native'] == 'PASS' and t.name not in known and
                 any(t.result[m] != 'PASS' and not excused_verdict(t, t.result[m])
                     for m in MODES[1:])]
        if again and opts.rounds:
            print('%s: re-running %d test(s) libppl failed, with NPTL, up to %d rounds' %
                  (tag, len(again), opts.rounds), flush=True)
            parallel(recheck, again, opts, out, 'recheck')
    finally:
        opts.kill_trace.close()   # the re-runs are traced too
    return report(tests, known, out, time.monotonic() - start)


def report(tests, known, out, elapsed):
    with open(os.path.join(out, 'results.tsv'), 'w') as f:
        f.write('test\t' + '\t'.join(MODES) + '\n')
        for t in tests:
            f.write(t.name + '\t' + '\t'.join(t.result[m] for m in MODES) + '\n')

    fams = {}
    for t in tests:
        fams.setdefault(t.family, []).append(t)
    print('\nPASS counts by family (native = NPTL)\n')
    head = '%-22s %6s' % ('family', 'tests') + ''.join(' %9s' % m for m in MODES)
    print(head)
    print('-' * len(head))
    rows = sorted(fams.items()) + [('total', tests)]
    for label, ts in rows:
        if label == 'total':
            print('-' * len(head))
        counts = [sum(t.result[m] == 'PASS' for t in ts) for m in MODES]
        print('%-22s %6d' % (label, len(ts)) + ''.join(' %9d' % c for c in counts))

    nptl_ok = [t for t in tests if t.result['native'] == 'PASS']
    nptl_bad = [t for t in tests if t.result['native'] != 'PASS']
    failing = [t for t in nptl_ok if any(t.result[m] != 'PASS' for m in MODES[1:])]
    excused = lambda t, m: (t.result[m] == 'PASS' or m in t.race or m in t.stall or
                            excused_verdict(t, t.result[m]))
    races = [t for t in failing if all(excused(t, m) for m in MODES[1:])]
    undefined = [t for t in races if any(excused_verdict(t, t.result[m]) for m in MODES[1:])]
    races = [t for t in races if t not in undefined]
    regress = [t for t in failing if t not in races and t not in undefined]
    wins = [t for t in nptl_bad if any(t.result[m] == 'PASS' for m in MODES[1:])]
    failed = [t for t in regress if t.name not in known]

    def show(title, ts, modes):
        print('\n%s: %d' % (title, len(ts)))
        for t in ts:
            res = ' '.join('%s=%s' % (m, t.result[m]) for m in modes)
            note = ' [known: %s]' % known[t.name] if t.name in known else ''
            print('  %-50s %s%s' % (t.name, res, note))

    show('Not passed on NPTL (not counted)', nptl_bad, ('native',))
    show('Regressions (pass on NPTL, not under libppl)', regress, MODES[1:])
    for t in regress:
        if t.rerun:
            print('  %-50s re-runs failed: %s' % (t.name, rerun_counts(t)))
        for m, who in t.killed.items():
            print('  %s %s: %s' % (t.name, m, who.replace('\n', '\n    ')))
    print('\nRaces NPTL loses too (libppl failed, then in the re-runs NPTL failed too,'
          ' libppl not significantly more often), or time-outs stuck in the kernel\'s exit'
          ' (TIMEOUT:KERNEL-EXIT, re-runs no worse than NPTL); not counted: %d' % len(races))
    for t in races:
        print('  %-50s %s; re-runs failed: %s' % (
            t.name, ' '.join('%s=%s' % (m, t.result[m]) for m in MODES[1:]), rerun_counts(t)))
    show('Verdicts on behaviour POSIX leaves undefined (--undefined; a hang or a crash'
         ' there counts); not counted', undefined, MODES[1:])
    show('Wins (libppl passes, NPTL does not)', wins, MODES)
    stale = sorted(n for n in known if n in {t.name for t in tests}
                   and n not in {t.name for t in regress})
    if stale:
        print('\nListed in --allow-fail but not failing: ' + ' '.join(stale))
    print('\n%d tests, %.0f s; results and logs in %s' % (len(tests), elapsed, out))
    print('%d passed, %d failed' % (len(nptl_ok) - len(failing), len(failed)))
    return 1 if failed else 0
