#!/bin/sh
# expect.sh STATUS REGEX CMD...: run CMD, require its exit status to be STATUS
# (134 = killed by SIGABRT) and its stderr to be one line matching REGEX.
want=$1 re=$2
shift 2
err=$("$@" 2>&1 >/dev/null)
got=$?
lines=$(printf '%s\n' "$err" | grep -c .)
if [ "$got" -ne "$want" ]; then
	echo "exit status $got, expected $want; stderr: $err"
	exit 1
fi
if [ "$lines" -ne 1 ] || ! printf '%s\n' "$err" | grep -Eq "$re"; then
	echo "stderr does not match /$re/ in one line: $err"
	exit 1
fi
echo "ok: $err"
