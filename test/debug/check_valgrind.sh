#!/bin/sh
# check_valgrind.sh LIBPPL PROG...: memcheck over each PROG (a path; a
# "preload:" prefix runs it with LIBPPL preloaded), on the numbers of VPs
# in VG_VPS (default 1: under valgrind idle VPs spin, one thread at a time).
# Any error fails: memory errors, leaks that are definite or possible (the
# TLS blocks and DTVs libppl keeps must be reachable), and the "client
# switching stacks?" warning (every thread stack is registered with
# valgrind).  77 (skip) without valgrind.
set -u
lib=$1
shift
command -v valgrind >/dev/null 2>&1 || { echo "valgrind not installed: skipped"; exit 77; }
# valgrind refuses the process VP backend's clone() (a VP process, its
# watcher: "Unsupported clone() flags", then it exits and leaves the rest of
# the program waiting for its lock).  One VP is not enough: a spare VP
# process stands in for a VP blocked in a system call (the rehearsal of
# CI on 2026-11-26 hung so at 300 s under load; docs/vpdep.md, limitations).
if [ "${PPL_VP_BACKEND:-}" = process ]; then
	echo "SKIP: valgrind cannot run PPL_VP_BACKEND=process"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for p in "$@"; do
	pre=
	case $p in preload:*) p=${p#preload:} pre=$lib ;; esac
	for vps in ${VG_VPS:-1}; do
		what="$(basename "$p")${pre:+ (preloaded)} on $vps VP"
		env PPL_VPS=$vps ${pre:+LD_PRELOAD=$pre} valgrind --error-exitcode=99 \
			--leak-check=full --errors-for-leak-kinds=definite,possible \
			"$p" >"$tmp/out" 2>"$tmp/err"
		st=$?
		if [ $st -ne 0 ] || grep -q 'client switching stacks' "$tmp/err"; then
			echo "FAIL: $what: exit status $st"
			grep -v 'set address range perms' "$tmp/err" | head -60
			fail=1
		else
			echo "ok: $what: $(grep -o 'ERROR SUMMARY: .*' "$tmp/err")"
		fi
	done
done
exit $fail
