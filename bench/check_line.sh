#!/bin/sh
# check_line.sh LABEL PROGRAM [ARGS...]: run one benchmark program with a
# tiny problem size and check that it exits 0 and prints its result line,
# "LABEL <number> <unit> ...", as bench/run reads it.  Not a timing test.
set -u
label=$1
shift
out=$("$@") || { echo "check_line: $* exited with status $?" >&2; exit 1; }
printf '%s\n' "$out"
printf '%s\n' "$out" | grep -Eq "^$label [0-9]+(\.[0-9]+)? [a-z/]+( |\$)" || {
	echo "check_line: no line '$label <number> <unit>' in the output of $*" >&2
	exit 1
}
