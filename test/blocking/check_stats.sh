#!/bin/sh
# check_stats.sh PROG: run PROG on one VP with PPL_STATS=1; the blocked
# read must have been announced and handed off at least once.
set -u
out=$(PPL_VPS=1 PPL_STATS=1 "$1" 2>&1 >/dev/null) || { echo "failed: $out"; exit 1; }
echo "$out"
echo "$out" | grep -Eq 'syscalls=[1-9]' || { echo "no announced system call counted"; exit 1; }
echo "$out" | grep -Eq 'handoffs=[1-9]' || { echo "no hand-off counted"; exit 1; }
