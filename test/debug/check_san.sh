#!/bin/sh
# check_san.sh SAN LIBPPL RUNTIME BUG PROG...: programs built with
# -fsanitize=SAN (address or undefined) under libppl.  Each PROG (a path;
# "preload:" in front: a native build, run with LIBPPL preloaded after the
# sanitizer's RUNTIME, as docs/debugging.md says) must finish with status 0
# and no report, on one VP and on two; BUG (td_sanbug, built the same way)
# must still be caught in a user thread (BUG_NATIVE in the environment:
# its native build, for the preloaded runs).
set -u
san=$1 lib=$2 rt=$3 bug=$4
shift 4
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
report='ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer'
run() {   # run [preload:]PROG ARGS...: status in $st, output in $tmp/out
	p=$1
	shift
	pre=
	case $p in preload:*) p=${p#preload:} pre=$lib ;; esac
	[ "$san" = address ] && [ -n "$pre" ] && pre="$rt:$pre"
	env ${pre:+LD_PRELOAD=$pre} timeout -s KILL 60 "$p" "$@" >"$tmp/out" 2>&1
	st=$?
	what="$(basename "$p")${pre:+ (preloaded)}"
}
for vps in 1 2; do
	export PPL_VPS=$vps
	for p in "$@" "$bug none" "preload:$BUG_NATIVE none"; do
		# shellcheck disable=SC2086 # program and its argument
		run $p
		if [ $st -ne 0 ] || grep -Eq "$report" "$tmp/out"; then
			echo "FAIL: $what on $vps VP: exit status $st or a report:"
			head -40 "$tmp/out"
			fail=1
		else
			echo "ok: $what on $vps VP: no report"
		fi
	done
	case $san in address) kind=heap want='ERROR: AddressSanitizer: heap-buffer-overflow' ;;
		*) kind=signed want='runtime error: signed integer overflow' ;; esac
	for p in "$bug" "preload:$BUG_NATIVE"; do
		run "$p" "$kind"
		if [ $st -eq 0 ] || ! grep -q "$want" "$tmp/out"; then
			echo "FAIL: $what $kind on $vps VP: exit status $st, no '$want':"
			head -40 "$tmp/out"
			fail=1
		else
			echo "ok: $what $kind on $vps VP: caught ($want)"
		fi
	done
done
exit $fail
