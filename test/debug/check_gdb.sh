#!/bin/sh
# check_gdb.sh LIBDIR PARKED DEADLOCK [LD_PRELOAD]: libppl's gdb extension
# (tools/gdb/libppl.py, auto-loaded from libppl.so's .debug_gdb_scripts) on
# a live process with 100 threads parked on a condition variable, on a
# live deadlocked one and on its core file (the kernel's, dumped by
# PPL_DEADLOCK=abort).  Set the fourth argument to run the programs with
# libppl preloaded instead of relinked.  77 (skip) without gdb.
set -u
libdir=$(realpath "$1") parked=$(realpath "$2") deadlock=$(realpath "$3") preload=${4:-}
command -v gdb >/dev/null 2>&1 || { echo "gdb not installed: skipped"; exit 77; }
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
fail=0
bad() {
	echo "FAIL: $*"
	fail=1
}
export PPL_STACK_SIZE=64K PPL_VPS=2
[ -n "$preload" ] && export LD_PRELOAD="$libdir/libppl.so"

# Start $1 in the background; wait for its first line of output.
start() {
	"$1" >"$tmp/out" 2>"$tmp/err" &
	pid=$!
	i=0
	while [ ! -s "$tmp/out" ] && [ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -s "$tmp/out" ] || bad "$1 did not start: $(cat "$tmp/err")"
}
# gdb in batch mode; the extension auto-loads from libppl.so.
dbg() {
	env -u LD_PRELOAD gdb -nx -batch -iex "add-auto-load-safe-path $libdir" "$@" 2>&1
}

# 1. 100 parked threads, main in pthread_join, attached live.
PPL_DEADLOCK=off start "$parked"
dbg -p "$pid" -ex 'info ppl-threads' -ex 'ppl-thread 1 bt' -ex 'ppl-thread apply all bt' \
	>"$tmp/gdb1"
kill -9 "$pid"
wait "$pid" 2>/dev/null
pid=
n=$(grep -cE '^[0-9]+ +worker-[0-9]+ +blocked +[0-9]+ +pthread_cond_wait: object at 0x[0-9a-f]+ <c> +[0-9.]+s ago$' "$tmp/gdb1")
[ "$n" -eq 100 ] || bad "info ppl-threads lists $n workers parked in pthread_cond_wait on c, want 100"
grep -qE '^1 +main +blocked +[0-9]+ +pthread_join: joins thread 2 ' "$tmp/gdb1" ||
	bad "info ppl-threads: main does not join thread 2"
n=$(grep -cE '^#[0-9]+ +0x[0-9a-f]+ in wait_for_go \(\) at .*td_parked.c:[0-9]+$' "$tmp/gdb1")
[ "$n" -eq 100 ] || bad "ppl-thread apply all bt: $n frames in wait_for_go, want 100"
n=$(grep -cE '^#[0-9]+ +0x[0-9a-f]+ in pthread_cond_wait ' "$tmp/gdb1")
[ "$n" -eq 100 ] || bad "ppl-thread apply all bt: $n frames in pthread_cond_wait, want 100"
n=$(grep -cE '^#[0-9]+ +0x[0-9a-f]+ in main \(\) at .*td_parked.c' "$tmp/gdb1")
[ "$n" -eq 2 ] || bad "main's frame shown $n times (ppl-thread 1 bt, apply all), want 2"
grep -q 'Python Exception\|Error occurred' "$tmp/gdb1" && bad "the extension raised: $(grep -m3 'Python\|Error' "$tmp/gdb1")"
[ $fail -eq 0 ] || { echo "--- gdb output (parked)"; head -150 "$tmp/gdb1"; }

# 2. A deadlock (two mutexes taken in opposite orders), live.
check_deadlock() {   # $1: gdb output, $2: what it came from
	for w in ab ba; do
		grep -qE "^[0-9]+ +$w +blocked +[0-9]+ +pthread_mutex_lock: object at 0x[0-9a-f]+ <[ab]\+[0-9]+>" "$1" ||
			bad "$2: info ppl-threads does not show $w in pthread_mutex_lock"
	done
	n=$(grep -cE '^#[0-9]+ +0x[0-9a-f]+ in take_both \(first=.*\) at .*td_deadlock.c:[0-9]+$' "$1")
	[ "$n" -eq 2 ] || bad "$2: $n frames in take_both, want 2"
	n=$(grep -cE '^#[0-9]+ +0x[0-9a-f]+ in pthread_mutex_lock ' "$1")
	[ "$n" -eq 2 ] || bad "$2: $n frames in pthread_mutex_lock, want 2"
	grep -q 'Python Exception\|Error occurred' "$1" && bad "$2: the extension raised"
	[ $fail -eq 0 ] || { echo "--- gdb output ($2)"; cat "$1"; }
}
# The two threads may not have reached their second lock yet (a loaded
# machine): look again, up to 10 times.
PPL_DEADLOCK=off start "$deadlock"
i=0
while :; do
	sleep 0.3
	dbg -p "$pid" -ex 'info ppl-threads' -ex 'ppl-thread apply all bt' >"$tmp/gdb2"
	i=$((i + 1))
	[ "$(grep -c 'pthread_mutex_lock: object' "$tmp/gdb2")" -eq 2 ] || [ $i -ge 10 ] && break
done
kill -9 "$pid"
wait "$pid" 2>/dev/null
pid=
check_deadlock "$tmp/gdb2" "live deadlock"

# 3. Its core file, from the kernel (gcore would miss the 1 MiB blocks
# that hold a stack guard: docs/debugging.md).
(cd "$tmp" && ulimit -c unlimited && PPL_DEADLOCK=abort exec "$deadlock" >/dev/null 2>&1)
core=$(ls "$tmp"/core* 2>/dev/null | head -1)
if [ -n "$core" ]; then
	dbg -ex 'info ppl-threads' -ex 'ppl-thread apply all bt' "$deadlock" "$core" >"$tmp/gdb3"
	check_deadlock "$tmp/gdb3" "core file"
else
	echo "no core file in the current directory (kernel.core_pattern is $(cat /proc/sys/kernel/core_pattern)): core part not run"
fi
[ $fail -eq 0 ] && echo "ok"
exit $fail
