#!/bin/sh
# check_tsan.sh LIBPPL LIBTSAN PROG...: programs built with -fsanitize=thread
# under libppl (docs/debugging.md).  Each PROG (a path; "preload:" in front:
# a native build, run with LIBTSAN then LIBPPL preloaded, in that order)
# must finish with status 0 and no ThreadSanitizer report, on one VP and on
# two.  td_tsan (TD_TSAN: relinked; TD_TSAN_NATIVE: native build) with
# "race" must be reported as a data race, relinked and preloaded.
set -u
# TSan learns of threads through its pthread_create wrapper: the VPs of the
# clone and process backends (raw clone) are unknown to it and td_tsan dies
# (docs/vpdep.md, limitations).  Under a sanitizer libppl is used with kthread.
case ${PPL_VP_BACKEND:-kthread} in
kthread) ;;
*) echo "SKIP: ThreadSanitizer needs PPL_VP_BACKEND=kthread, not $PPL_VP_BACKEND"; exit 77 ;;
esac
lib=$1 rt=$2
shift 2
export TSAN_OPTIONS=halt_on_error=0:exitcode=66
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
run() {   # run [preload:]PROG ARGS...: status in $st, output in $tmp/out
	p=$1
	shift
	pre=
	case $p in preload:*) p=${p#preload:} pre="$rt $lib" ;; esac
	env ${pre:+LD_PRELOAD="$pre"} timeout -s KILL 60 "$p" "$@" >"$tmp/out" 2>&1
	st=$?
	what="$(basename "$p")${pre:+ (preloaded)}"
}
for vps in 1 2; do
	export PPL_VPS=$vps
	for p in "$TD_TSAN" "preload:$TD_TSAN_NATIVE" "$@"; do
		run "$p"
		if [ $st -ne 0 ] || grep -q 'ThreadSanitizer' "$tmp/out"; then
			echo "FAIL: $what on $vps VP: exit status $st or a report:"
			head -40 "$tmp/out"
			fail=1
		else
			echo "ok: $what on $vps VP: no report"
		fi
	done
	for p in "$TD_TSAN" "preload:$TD_TSAN_NATIVE"; do
		run "$p" race
		if [ $st -ne 66 ] || ! grep -q 'WARNING: ThreadSanitizer: data race' "$tmp/out" ||
		   ! grep -q 'td_tsan.c' "$tmp/out"; then
			echo "FAIL: $what race on $vps VP: exit status $st, no data race reported:"
			head -40 "$tmp/out"
			fail=1
		else
			echo "ok: $what race on $vps VP: caught (WARNING: ThreadSanitizer: data race)"
		fi
	done
done
exit $fail
