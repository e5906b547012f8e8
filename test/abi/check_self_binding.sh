#!/bin/sh
# check_self_binding.sh READELF NM LIBPPL
# libppl.so must have no dynamic relocation (PLT slot, GOT entry, data
# pointer) against a symbol it exports itself: such a call inside libppl
# binds at run time to libppl's own interposed definition (write, read,
# clock_gettime, dlopen, kill: a cancellation point, or vpindep code under
# vpdep) or to the program's, never to the C library's it meant.  Internal
# code calls the hidden ppl_* definitions, vpdep's raw system calls
# (vp_write, ...) or the C library's copy through vp_libc_fn (docs/vpdep.md).
#
# Deliberate exceptions, one name a line with the reason:
# - __longjmp_chk: libppl's own jumps (cancellation's unwinding in unwind.c,
#   kthread_terminate) go through the global scope, so that a sanitizer's
#   interceptor sees them (ASan unpoisons the stack they leave; calling the
#   C library's directly left stale redzones that ASan then reported);
#   libppl's export (src/preload/jump.c) only forwards them: their buffers
#   saved no signal mask.
set -eu
export LC_ALL=C
readelf=$1 nm=$2 lib=$3
allowed='__longjmp_chk'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$nm" -D --defined-only "$lib" | awk '{ print $3 }' | sed 's/@.*//' | sort -u >"$tmp/defs"
[ "$(wc -l <"$tmp/defs")" -gt 100 ] || { echo "too few exports parsed"; exit 1; }
# Relocation lines: offset info type value name[@version] + addend.
"$readelf" -rW "$lib" | awk '$1 ~ /^[0-9a-f]+$/ && NF >= 5 && $5 != "+" { print $5 }' |
	sed 's/@.*//' | sort -u >"$tmp/rels"
[ "$(wc -l <"$tmp/rels")" -gt 20 ] || { echo "too few relocations parsed"; exit 1; }
comm -12 "$tmp/defs" "$tmp/rels" >"$tmp/self"
for a in $allowed; do
	grep -vx "$a" "$tmp/self" >"$tmp/keep" || true
	mv "$tmp/keep" "$tmp/self"
done
if [ -s "$tmp/self" ]; then
	echo "libppl.so binds to its own exports (call the C library's through vp_libc_fn,"
	echo "or a vpdep raw system call, instead):"
	cat "$tmp/self"
	exit 1
fi
echo "ok: $(wc -l <"$tmp/rels") relocated symbols, none of them one of libppl's $(wc -l <"$tmp/defs") exports"
