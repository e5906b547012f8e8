#!/bin/sh
# check_vpindep_includes.sh SRC_ROOT BUILD_ROOT
# vpindep sees vpdep through its contract alone (issue #15): every
# `#include "..."` in src/vpindep names one of vpindep's own files,
# vpdep.h, glibcabi.h or a configuration/public header (config.h, ppl.h);
# never another vpdep file (context.h, internal/futex.h, ../vpdep/...).
# And the build gives vpindep's objects no include directory of vpdep but
# the contract's (src/vpdep, not src/vpdep/internal) and glibcabi's.
set -eu
export LC_ALL=C
src=$1 build=$2
dir=$src/src/vpindep
n=$(ls "$dir"/*.c | wc -l)
[ "$n" -gt 20 ] || { echo "too few sources in $dir"; exit 1; }
status=0
for f in "$dir"/*.c "$dir"/*.h; do
	sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" | while read -r inc; do
		case $inc in
		vpdep.h | glibcabi.h | config.h | ppl.h) continue ;;
		*/*) ;;
		*) [ -f "$dir/$inc" ] && continue ;;
		esac
		echo "${f#$src/}: #include \"$inc\": vpindep sees vpdep only through vpdep.h"
		echo bad >>"$build/check_vpindep_includes.bad"
	done
done
if [ -s "$build/check_vpindep_includes.bad" ]; then
	rm -f "$build/check_vpindep_includes.bad"
	status=1
fi
# struct vp is opaque to vpindep but for `id`: no other field of it (as
# vpdep.h declares them) is named as `vp.FIELD` or `vp->FIELD`.
fields=$(sed -n '/^struct vp {/,/^};/p' "$src/src/vpdep/vpdep.h" |
	sed -n 's/^[[:space:]]*[A-Za-z_][A-Za-z0-9_ ]*[[:space:]*(]\**\([a-z_][a-z0-9_]*\)[)(;].*/\1/p' | grep -vx id | sort -u)
[ "$(echo "$fields" | wc -l)" -gt 8 ] || { echo "struct vp: too few fields parsed: $fields"; exit 1; }
re=$(echo "$fields" | paste -sd'|')
bad=$(grep -nE "(^|[^A-Za-z0-9_])vp(\.|->)($re)([^A-Za-z0-9_]|$)" "$dir"/*.c "$dir"/*.h |
	grep -vE '^[^:]*:[0-9]+:[[:space:]]*(/?\*|//)' || true)
if [ -n "$bad" ]; then
	echo "struct vp's fields named in vpindep (use the vpdep.h accessor):"
	echo "$bad"
	status=1
fi
# The compile commands of vpindep's objects: -I directories outside vpindep.
cc=$build/compile_commands.json
[ -f "$cc" ] || { echo "no $cc"; exit 1; }
dirs=$(grep '"command"' "$cc" | grep 'libvpindep\.a\.p/' | tr ' ' '\n' | sed -n 's/^-I//p' | sort -u)
[ -n "$dirs" ] || { echo "no vpindep compile commands in $cc"; exit 1; }
for d in $dirs; do
	case $d in
	*vpdep/internal* | *vpdep/arch* | *preload*)
		echo "vpindep is compiled with -I$d: only vpdep's contract directory may be visible"
		status=1 ;;
	esac
done
[ $status -eq 0 ] && echo "ok: $n sources include only vpdep.h and glibcabi.h from outside vpindep; -I: $(echo $dirs)"
exit $status
