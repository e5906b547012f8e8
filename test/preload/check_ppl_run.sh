#!/bin/sh
# check_ppl_run.sh PPL_RUN LIBPPL: the launcher's options and environment.
set -u
run=$1 lib=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() {
	echo "FAIL: $*"
	fail=1
}

"$run" --help >"$tmp/out" 2>&1 || bad "--help exits $?"
grep -q '^Usage: ppl-run' "$tmp/out" || bad "--help prints no usage"

# A bad -n is one line on stderr naming the option, and exit status 2.
for args in "-n 0" "-n abc" "-n 1025" "-n 99999999999999999999" "-n -3" "-n" "-n1x" "--vps=" "--vps=0"; do
	opt=${args%% *}
	opt=${opt%%=*}
	case $opt in -n*) opt=-n ;; esac
	# shellcheck disable=SC2086 # split on purpose
	"$run" $args true >"$tmp/out" 2>"$tmp/err"
	st=$?
	[ $st -eq 2 ] || bad "'$args': exit status $st, want 2"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || bad "'$args': stderr is not one line: $(cat "$tmp/err")"
	grep -q -- "^ppl-run: $opt: " "$tmp/err" || bad "'$args': message does not name $opt: $(cat "$tmp/err")"
	[ ! -s "$tmp/out" ] || bad "'$args': command ran"
done
"$run" --bogus true 2>"$tmp/err" && bad "--bogus accepted"
grep -q -- "--bogus" "$tmp/err" || bad "unknown option not named"
"$run" 2>"$tmp/err" && bad "no command accepted"

# The environment the command sees; an existing LD_PRELOAD stays, after ours.
show='printf "%s|%s|%s" "${PPL_VPS-unset}" "${PPL_STATS-unset}" "$LD_PRELOAD"'
out=$(env -u PPL_VPS -u PPL_STATS -u LD_PRELOAD "$run" -- sh -c "$show") || bad "plain run failed"
[ "$out" = "unset|unset|$lib" ] || bad "plain run: got '$out'"
out=$(env -u PPL_STATS LD_PRELOAD="$lib" "$run" -n 3 --stats sh -c "$show" 2>"$tmp/err") ||
	bad "-n 3 --stats run failed"
[ "$out" = "3|1|$lib:$lib" ] || bad "-n 3 --stats: got '$out'"
out=$("$run" -n007 --vps=5 sh -c "$show") || bad "-n007 --vps=5 failed"
case $out in 5\|*) ;; *) bad "--vps=5 after -n007: got '$out'" ;; esac

# The command's exit status comes through.
"$run" -- sh -c 'exit 7'
st=$?
[ $st -eq 7 ] || bad "exit status $st, want 7"

[ $fail -eq 0 ] && echo "ppl-run: ok"
exit $fail
