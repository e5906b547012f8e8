#!/bin/sh
# check_exports.sh NM LIBPPL API_DEF INTERPOSED_DEF PPL_H
# libppl.so must export exactly the api.def names, the PPL_EXT names and the
# PPL_LIBC names (their symbol versions: abi/symbol-versions), and every
# function include/ppl.h declares must be a PPL_EXT (but libppl-ffi's).
set -eu
export LC_ALL=C
nm=$1 lib=$2 api=$3 interposed=$4 ppl_h=$5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

sed -n 's/^PPL_\(FN\|FN_INLINE\|CANCELLABLE\|CANCELLABLE_INITIAL\|BLOCKING\)([^,]*, *\([A-Za-z0-9_]*\) *,.*/\2/p' "$api" >"$tmp/api"
sed -n 's/^PPL_EXT( *\([A-Za-z0-9_]*\) *).*/\1/p' "$interposed" | sort -u >"$tmp/ext"
sed -n 's/^PPL_LIBC( *\([A-Za-z0-9_]*\) *).*/\1/p' "$interposed" >"$tmp/libc"
sort -u "$tmp/api" "$tmp/ext" "$tmp/libc" >"$tmp/want"
[ "$(wc -l <"$tmp/api")" -gt 100 ] || { echo "api.def: too few entries parsed"; exit 1; }

"$nm" -D --defined-only "$lib" | awk '$2 ~ /^[TtWwiDdBbVv]$/ { print $3 }' >"$tmp/raw"
sed 's/@.*//' "$tmp/raw" | sort -u >"$tmp/have"

status=0
if ! cmp -s "$tmp/want" "$tmp/have"; then
	echo "exports differ from api.def + PPL_EXT (< missing, > unexpected):"
	diff "$tmp/want" "$tmp/have" | grep '^[<>]' || true
	status=1
fi

# Functions of ppl.h: an identifier starting ppl_ followed by '(', but
# those of libppl-ffi.so (between its BEGIN and END comments) and the
# header's own static inline helpers (ppl_vpset_*).
sed '/BEGIN libppl-ffi/,/END libppl-ffi/d' "$ppl_h" | grep -o '\bppl_[A-Za-z0-9_]* *(' |
	sed 's/ *($//' | sort -u >"$tmp/ppl_h"
grep -o '^static inline [^(]*\bppl_[A-Za-z0-9_]* *(' "$ppl_h" | grep -o 'ppl_[A-Za-z0-9_]*' |
	sort -u >"$tmp/inline"
missing=$(comm -23 "$tmp/ppl_h" "$tmp/ext" | comm -23 - "$tmp/inline")
if [ -n "$missing" ]; then
	echo "declared in ppl.h but not PPL_EXT in interposed.def: $missing"
	status=1
fi
[ $status -ne 0 ] || echo "$(wc -l <"$tmp/have") exports, all from api.def, interposed.def and ppl.h"
exit $status
