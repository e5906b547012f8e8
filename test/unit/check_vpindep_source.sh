#!/bin/sh
# check_vpindep_source.sh VPINDEP_DIR
# The source side of "vpindep makes no system call of its own" (issue #15):
# no syscall(), gettid(), tgkill()/tkill(), SYS_<name> number or /proc path
# in src/vpindep outside comments.  The object check (check_vpindep_syscalls.sh)
# sees calls; this one also sees a number handed to somebody else.
set -eu
export LC_ALL=C
dir=$1
n=$(ls "$dir"/*.c | wc -l)
[ "$n" -gt 20 ] || { echo "too few sources in $dir"; exit 1; }
bad=$(grep -nE '(^|[^_[:alnum:]])(syscall|gettid|tgkill|tkill) *\(|SYS_[a-z]|"/proc/' \
	"$dir"/*.c "$dir"/*.h | grep -vE '^[^:]*:[0-9]+:[[:space:]]*(/?\*|//)' || true)
if [ -n "$bad" ]; then
	echo "system calls in vpindep's source (use a vpdep.h function instead):"
	echo "$bad"
	exit 1
fi
echo "ok: $n sources"
