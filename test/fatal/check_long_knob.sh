#!/bin/sh
# check_long_knob.sh PROG N: PROG runs with PPL_TLS set to N x's, a bad value
# longer than any fixed buffer: stderr must be the whole line, newline ended.
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
val=$(printf "%${2}s" "" | tr ' ' x)
set -- "$1" "$val"
PPL_TLS="$val" "$1" 2>"$out" >/dev/null
st=$?
want="libppl: PPL_TLS=$2: expected 'shared' or 'per-thread'"
if [ "$st" -ne 2 ] || [ "$(cat "$out")" != "$want" ] || [ "$(tail -c 1 "$out" | od -An -c | tr -d ' ')" != '\n' ]; then
	echo "exit status $st, stderr:"; cat "$out"; echo "(end)"
	exit 1
fi
echo ok
