#!/usr/bin/env python3
"""check_trace.py LIBPPL TRACED RACE

Scheduler traces (PPL_TRACE, docs/debugging.md).  traced.c makes one of
each event on one VP and ends with exit() from a thread that is not main:
its trace must be valid JSON (the Chrome trace-event array form) with the
expected events and a balanced begin/end slice for every switch on every
VP track.  With _exit() the buffered events are lost but what was written
parses once the closing bracket is added.  A long seeded run (buffers
flushed when full) and a run on two VPs must be valid too.  A file that
cannot be created is one line on stderr naming PPL_TRACE."""
import collections
import json
import os
import subprocess
import sys
import tempfile

lib, traced, race = sys.argv[1:4]
fails = []
tmp = tempfile.mkdtemp()


def bad(msg):
    print('FAIL: ' + msg)
    fails.append(msg)


def run(args, env_extra, path):
    env = {k: v for k, v in os.environ.items() if not k.startswith('PPL_') and k != 'LD_PRELOAD'}
    env.update(env_extra, LD_PRELOAD=lib, PPL_TRACE=path)
    p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stderr


def check_wellformed(ev, what):
    """Every event has its fields; B and E alternate on each track."""
    if not isinstance(ev, list) or not ev or ev[0].get('name') != 'process_name':
        bad(f'{what}: not an event array starting with the process name')
        return
    open_on = collections.defaultdict(int)
    for e in ev:
        if not isinstance(e.get('ph'), str) or not isinstance(e.get('pid'), int):
            bad(f'{what}: event without ph/pid: {e}')
            return
        if e['ph'] == 'M':
            continue
        if not isinstance(e.get('ts'), (int, float)) or e['ts'] < 0 or not isinstance(e.get('tid'), int):
            bad(f'{what}: event without ts/tid: {e}')
            return
        if e['ph'] == 'B':
            if open_on[e['tid']]:
                bad(f'{what}: B inside an open slice on track {e["tid"]}: {e}')
                return
            open_on[e['tid']] = 1
        elif e['ph'] == 'E':
            if not open_on[e['tid']]:
                bad(f'{what}: E without B on track {e["tid"]}: {e}')
                return
            open_on[e['tid']] = 0
        elif e['ph'] != 'i':
            bad(f'{what}: unexpected phase: {e}')
    if any(open_on.values()):
        bad(f'{what}: slices left open at the end: {dict(open_on)}')


# 1. One of each event; exit() from a thread other than main.
path = os.path.join(tmp, 'traced.json')
rc, err = run([traced], {'PPL_VPS': '1', 'PPL_TIMESLICE_US': '1000'}, path)
if rc != 0:
    bad(f'traced: exit status {rc}: {err}')
try:
    ev = json.load(open(path))
except ValueError as e:
    bad(f'traced: not JSON: {e}')
    ev = []
check_wellformed(ev, 'traced')
names = collections.Counter(e['name'] for e in ev if e.get('ph') == 'i')
print('traced:', dict(names))
for want in ('create', 'exit', 'park', 'wake', 'preempt', 'handoff'):
    if names[want] == 0:
        bad(f'traced: no {want} event')
if names['create'] != 5 or names['exit'] != 4:
    bad(f'traced: {names["create"]} creates and {names["exit"]} exits, want 5 and 4')
if not any(e.get('ph') == 'B' and e['name'].endswith('(worker)') for e in ev):
    bad('traced: no slice of the thread named worker')
# The slice's end is 'tick', or 'deferred' when the tick found the spinner
# inside libppl (its clock_gettime) and was taken on the way out.
if not any(e.get('name') == 'preempt' and e['args'].get('why') in ('tick', 'deferred') for e in ev):
    bad('traced: no preemption by the time slice')
if not any(e.get('name') == 'park' and e['args'].get('thread') == 2 and
           e['args'].get('on', '').startswith('0x') for e in ev):
    bad('traced: thread 2 (worker) did not park on an object')

# 2. _exit: nothing buffered is written, and no closing bracket; what is
#    there parses once it is added.
path = os.path.join(tmp, 'underscore.json')
rc, err = run([traced, '_exit'], {'PPL_VPS': '1'}, path)
text = open(path).read()
if rc != 0 or not text.startswith('[') or text.rstrip().endswith(']'):
    bad(f'_exit: exit status {rc}, file {text[:200]!r}...{text[-50:]!r}')
else:
    try:
        json.loads(text + ']')
    except ValueError as e:
        bad(f'_exit: not JSON with a closing bracket: {e}')

# 2b. Wrappers and children that inherit PPL_TRACE: timeout(1), preloaded
#     too but never starting a thread, leaves the file to the program; a
#     threaded program started by a traced one writes FILE.PID.
path = os.path.join(tmp, 'wrapped.json')
rc, err = run(['timeout', '30', traced, 'spawn', f'{race} 5'], {'PPL_VPS': '1'}, path)
try:
    ev = json.load(open(path))
    check_wellformed(ev, 'wrapped')
    if sum(1 for e in ev if e.get('name') == 'create') != 6:
        bad('wrapped: not the trace of traced (6 creates)')
except ValueError as e:
    bad(f'wrapped: not JSON: {e}')
kids = [f for f in os.listdir(tmp) if f.startswith('wrapped.json.')]
if rc != 0 or len(kids) != 1:
    bad(f'wrapped: exit status {rc}, children\'s files {kids}: {err}')
else:
    try:
        ev = json.load(open(os.path.join(tmp, kids[0])))
        check_wellformed(ev, 'spawned child')
        if sum(1 for e in ev if e.get('name') == 'create') != 3:
            bad('spawned child: not the trace of race (3 creates)')
    except ValueError as e:
        bad(f'spawned child: not JSON: {e}')

# 3. A long seeded run (each VP's buffer flushed many times), and two VPs.
for what, args, extra in (('seeded', [race, '3000'], {'PPL_SCHED_SEED': '7', 'PPL_SCHED_CHAOS': '0.5'}),
                          ('3 VPs', [traced], {'PPL_VPS': '3', 'PPL_TIMESLICE_US': '1000'})):
    path = os.path.join(tmp, 'race.json')
    rc, err = run(args, extra, path)
    try:
        ev = json.load(open(path))
    except ValueError as e:
        bad(f'{what}: not JSON: {e}')
        continue
    check_wellformed(ev, what)
    n = sum(1 for e in ev if e['ph'] == 'B')
    print(f'{what}: {len(ev)} events, {n} slices')
    if what == 'seeded' and n < 4096:
        bad(f'seeded: only {n} slices, the buffers were never flushed while running')

# 4. A file that cannot be created.
rc, err = run([traced], {}, os.path.join(tmp, 'no', 'such', 'dir'))
if rc != 2 or len(err.splitlines()) != 1 or not err.startswith('libppl: PPL_TRACE='):
    bad(f'unwritable PPL_TRACE: exit status {rc}, stderr {err!r}')

subprocess.run(['rm', '-rf', tmp])
if fails:
    sys.exit(1)
print('trace: ok')
