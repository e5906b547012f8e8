#!/bin/sh
# check_vpindep_syscalls.sh NM ALLOW LIBVPINDEP CC [CC_ARGS...]
# vpindep makes no system call of its own: none of its objects (the members
# of the static library LIBVPINDEP)
# may reference syscall() or a C library function named for a system call
# (a SYS_<name> of <sys/syscall.h>, or <name>64), except the lines of the
# documented allowlist ALLOW ("object symbol -- reason").  Issue #15.
set -eu
export LC_ALL=C
nm=$1 allow=$2 lib=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo '#include <sys/syscall.h>' | "$@" -E -dM -x c - |
	sed -n 's/^#define SYS_\([a-z0-9_]*\) .*/\1/p' >"$tmp/names"
[ "$(wc -l <"$tmp/names")" -gt 200 ] || { echo "too few system call names parsed"; exit 1; }
{ echo syscall; cat "$tmp/names"; sed 's/$/64/' "$tmp/names"; } | sort -u >"$tmp/calls"

# "lib.a:member.c.o:   U name" -> "member name"
"$nm" -uA "$lib" | awk '{ split($1, p, ":"); m = p[2]; sub(/.*\//, "", m); sub(/\.c\.o$/, "", m); sub(/\.o$/, "", m); print m, $NF }' |
	sort -u >"$tmp/refs"
n=$(awk '{ print $1 }' "$tmp/refs" | sort -u | wc -l)
[ "$n" -gt 20 ] || { echo "too few vpindep objects in $lib"; exit 1; }
awk 'NR == FNR { c[$1] = 1; next } ($2 in c)' "$tmp/calls" "$tmp/refs" >"$tmp/used"
grep -v '^#' "$allow" | awk 'NF >= 2 { print $1, $2 }' | sort -u >"$tmp/allowed"
sort -u "$tmp/used" | comm -23 - "$tmp/allowed" >"$tmp/bad"
if [ -s "$tmp/bad" ]; then
	echo "vpindep objects make system calls of their own (use a vpdep.h function, or"
	echo "list the call with its reason in $allow):"
	cat "$tmp/bad"
	exit 1
fi
echo "ok: $n objects, $(wc -l <"$tmp/used") allowlisted system-call references"
