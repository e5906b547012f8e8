#!/usr/bin/env python3
"""check_detsched.py LIBPPL PPL_RUN RACE RACE_RELINKED

Deterministic schedules (docs/debugging.md).  race.c has a planted
lost-update race.  Under PPL_SCHED_SEED each seed must give the same
outcome (exit status and final count) every run, 20 of 20, some seeds
must lose updates and others not; with PPL_SCHED_CHAOS too; a seed's
whole trace must repeat; `ppl-run --seeds` must list exactly the failing
seeds with a replay command that fails again; bad values are one line on
stderr naming the variable."""
import json
import os
import subprocess
import sys
import tempfile

lib, ppl_run, race, race_ppl = sys.argv[1:5]
SEEDS = range(1, 9)
fails = []


def bad(msg):
    print('FAIL: ' + msg)
    fails.append(msg)


def clean_env():
    return {k: v for k, v in os.environ.items()
            if not k.startswith('PPL_') and k != 'LD_PRELOAD'}


def run(exe, seed=None, chaos=None, preload=True, args=(), extra=None):
    env = clean_env()
    if seed is not None:
        env['PPL_SCHED_SEED'] = str(seed)
    if chaos is not None:
        env['PPL_SCHED_CHAOS'] = chaos
    if preload:
        env['LD_PRELOAD'] = lib
    env.update(extra or {})
    p = subprocess.run([exe, *args], env=env, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout.strip(), p.stderr


def outcomes(exe, preload, runs, **kw):
    """seed -> its single outcome; a seed with two outcomes is a failure."""
    got = {}
    for s in SEEDS:
        seen = {run(exe, s, preload=preload, **kw)[:2] for _ in range(runs)}
        if len(seen) != 1:
            bad(f'{os.path.basename(exe)} seed {s} {kw}: {len(seen)} outcomes in {runs} runs: {seen}')
        got[s] = sorted(seen)[0]
    return got


# 1. Each seed reproduces its outcome; some fail, some pass.
for exe, preload in ((race, True), (race_ppl, False)):
    got = outcomes(exe, preload, 20)
    failing = [s for s, o in got.items() if o[0] != 0]
    passing = [s for s, o in got.items() if o[0] == 0]
    print(f'{os.path.basename(exe)}: seeds failing {failing}, passing {passing}')
    if not failing or not passing:
        bad(f'{os.path.basename(exe)}: want some failing and some passing seeds, got {got}')
    for s, o in got.items():
        if o[0] not in (0, 1):
            bad(f'seed {s}: exit status {o[0]}')
    if exe == race:
        race_failing = failing

# 2. With chaos (a yield at library calls with probability 0.2).
got = outcomes(race, True, 5, chaos='0.2', args=('30',))
print('chaos 0.2:', {s: o[1] for s, o in got.items()})

# 3. The whole schedule repeats: the trace of a seed, minus times,
#    process ids and object addresses, is the same twice.
def schedule(seed):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, 't.json')
        rc = run(race, seed, chaos='0.1', extra={'PPL_TRACE': path})[0]
        ev = json.load(open(path))
    return rc, [(e['ph'], e['name'], e.get('tid'),
                 json.dumps({k: v for k, v in e.get('args', {}).items() if k != 'on'},
                            sort_keys=True))
                for e in ev if e['ph'] != 'M']

for s in (3, 4):
    a, b = schedule(s), schedule(s)
    if a != b:
        bad(f'seed {s}: two traces differ ({len(a[1])} and {len(b[1])} events)')
    elif not any(e[1] == 'preempt' for e in a[1]):
        bad(f'seed {s}: no preemption in the trace')

# 4. ppl-run --seeds lists the failing seeds, with a replay command.
env = clean_env()
p = subprocess.run([ppl_run, '--seeds=1..8', '--timeout=30', '--', race], env=env,
                   capture_output=True, text=True, timeout=300)
listed = [int(l.split()[1].rstrip(':')) for l in p.stdout.splitlines() if l.startswith('seed ')]
if listed != race_failing:
    bad(f'ppl-run --seeds listed {listed}, want {race_failing}:\n{p.stdout}{p.stderr}')
if p.returncode != (1 if race_failing else 0):
    bad(f'ppl-run --seeds: exit status {p.returncode}')
for l in p.stdout.splitlines():
    if l.startswith('seed '):
        replay = l.split('replay: ', 1)[1].replace('ppl-run ', ppl_run + ' ', 1)
        r = subprocess.run(replay, shell=True, env=env, capture_output=True, timeout=60)
        if r.returncode == 0:
            bad(f'replay passed: {replay}')
        break
if not p.stdout.rstrip().endswith(f'{len(race_failing)} of 8 seeds failed'):
    bad(f'ppl-run --seeds: no summary line:\n{p.stdout}')

# 5. Bad values: exit status 2, one line on stderr naming the variable.
for var, val, seed in (('PPL_SCHED_SEED', 'abc', None), ('PPL_SCHED_SEED', '-1', None),
                       ('PPL_SCHED_SEED', '18446744073709551616', None),
                       ('PPL_SCHED_CHAOS', '1.5', '1'), ('PPL_SCHED_CHAOS', 'x', '1'),
                       ('PPL_SCHED_CHAOS', '0.1', None)):
    extra = {var: val}
    if seed:
        extra['PPL_SCHED_SEED'] = seed
    rc, out, err = run(race, extra=extra)
    if rc != 2 or len(err.splitlines()) != 1 or not err.startswith(f'libppl: {var}='):
        bad(f'{var}={val}: exit status {rc}, stderr {err!r}')

if fails:
    sys.exit(1)
print('detsched: ok')
