#!/bin/sh
# check_symver.sh READELF LIBPPL LIBC NAMES: every name libppl.so exports
# carries exactly the symbol versions the C library (LIBC) gives it, its
# default (name@@V) and its older ones (name@V), so that it interposes a
# reference to any of them and dlvsym finds it by the version a sanitizer
# asks for (docs/abi.md).  A name the C library has only in older versions
# also has libppl's default name@@PPL_1.0 (include/pthread.h declares it);
# a name the C library lacks has only name@@PPL_1.0.  NAMES lists what
# libppl interposes, one a line ("ext NAME" for a libppl extension): each
# must be exported.
set -eu
export LC_ALL=C
readelf=$1 lib=$2 libc=$3 names=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

defined() {   # defined SO: name@[@]version of each defined global symbol
	"$readelf" --dyn-syms -W "$1" |
		awk '$1 ~ /^[0-9]+:$/ && $7 != "UND" && ($5 == "GLOBAL" || $5 == "WEAK") && $8 ~ /@/ { print $8 }' |
		sort -u
}
defined "$lib" >"$tmp/ppl"
defined "$libc" >"$tmp/libc"
[ "$(wc -l <"$tmp/ppl")" -gt 300 ] || { echo "too few versioned exports parsed in $lib"; exit 1; }
[ "$(wc -l <"$tmp/libc")" -gt 1000 ] || { echo "too few versioned symbols parsed in $libc"; exit 1; }

# One awk pass each (a grep per name took 40 s on a loaded machine whose
# process creation is slow).
fail=0
sed 's/@.*//' "$tmp/ppl" | sort -u >"$tmp/exported"
awk -v ppl="$tmp/ppl" '
	function name(s) { sub(/@.*/, "", s); return s }
	function sorted(s,   a, n, i, j, t, r) {
		n = split(s, a, "\n")
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		r = ""
		for (i = 1; i <= n; i++) if (a[i] != "") r = r a[i] " "
		return r
	}
	FILENAME == ppl { n = name($0); have[n] = have[n] $0 "\n"; next }
	{ n = name($0); libc[n] = libc[n] $0 "\n"; if ($0 ~ /@@/) dflt[n] = 1 }
	END {
		bad = 0
		for (n in have) {
			want = libc[n]
			if (want == "")
				want = n "@@PPL_1.0\n"
			else if (!(n in dflt))
				want = want n "@@PPL_1.0\n"
			if (sorted(have[n]) != sorted(want)) {
				print "FAIL: " n ": libppl exports " sorted(have[n]) "- the C library has " sorted(want)
				bad = 1
			}
		}
		exit bad
	}' "$tmp/ppl" "$tmp/libc" || fail=1
n_names=$(awk 'NF' "$names" | wc -l)
awk -v exported="$tmp/exported" -v libc="$tmp/libc" '
	FILENAME == exported { out[$0] = 1; next }
	FILENAME == libc { n = $0; sub(/@.*/, "", n); inlibc[n] = 1; next }
	NF == 0 { next }
	{ kind = NF > 1 ? $1 : "libc"; nm = NF > 1 ? $2 : $1 }
	!(nm in out) { print "FAIL: " nm " is not exported"; bad = 1; next }
	kind == "libc" && !(nm in inlibc) { print "FAIL: " nm ": interposed, but the C library has no such symbol"; bad = 1 }
	END { exit bad }' "$tmp/exported" "$tmp/libc" "$names" || fail=1
[ "$n_names" -gt 200 ] || { echo "too few names in $names"; exit 1; }
# A reference without a version binds to the definition of version index 2
# even when that is an older (name@V) one (glibc's ld.so, do_lookup_x): so
# index 2 must be a version no older definition has, or a program linked
# against an unversioned libppl gets the old pthread_cond_* interface.
v2=$("$readelf" -V -W "$lib" | awk '/Version definition section/ {d = 1} d && $2 == "Rev:" && $4 == "Flags:" && $6 == "Index:" && $7 == "2" {print $NF; exit}')
if [ -z "$v2" ]; then
	echo "FAIL: no version index 2 found in $lib's version definitions"
	fail=1
elif grep -q "@$v2\$" "$tmp/ppl" && grep "@$v2\$" "$tmp/ppl" | grep -vq "@@"; then
	echo "FAIL: version index 2 is $v2, which older definitions have: $(grep "@$v2\$" "$tmp/ppl" | grep -v @@ | head -3 | tr '\n' ' ')"
	fail=1
fi
[ $fail -eq 0 ] && echo "ok: $(wc -l <"$tmp/exported") exported names, $(wc -l <"$tmp/ppl") name@version pairs, all as the C library's; $n_names interposed names exported"
exit $fail
