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
# The same for the schedule options.
for arg in "--seeds=3..1" "--seeds=1-3" "--seeds=a..2" "--seeds=1..9999999999999999999" "--seed=x" \
	"--seed=" "--timeout=1s"; do
	opt=${arg%%=*}
	"$run" "$arg" true >"$tmp/out" 2>"$tmp/err"
	st=$?
	[ $st -eq 2 ] || bad "'$arg': exit status $st, want 2"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || bad "'$arg': stderr is not one line: $(cat "$tmp/err")"
	grep -q -- "^ppl-run: $opt: " "$tmp/err" || bad "'$arg': message does not name $opt: $(cat "$tmp/err")"
done
show_sched='printf "%s|%s|%s" "${PPL_SCHED_SEED-unset}" "${PPL_SCHED_CHAOS-unset}" "${PPL_TRACE-unset}"'
out=$(env -u PPL_SCHED_SEED -u PPL_SCHED_CHAOS -u PPL_TRACE "$run" --seed=5 --chaos=0.25 \
	--trace="$tmp/t.json" sh -c "$show_sched") || bad "--seed --chaos --trace run failed"
[ "$out" = "5|0.25|$tmp/t.json" ] || bad "--seed --chaos --trace: got '$out'"
# --seeds: each failing seed with its replay command, a summary, status 1.
"$run" --seeds=1..3 -- sh -c 'exit 3' >"$tmp/out" 2>&1
st=$?
[ $st -eq 1 ] || bad "--seeds with failures: exit status $st, want 1"
grep -q "^seed 2: exit status 3; replay: ppl-run --seed=2 -- sh -c 'exit 3'\$" "$tmp/out" ||
	bad "--seeds: no replay line for seed 2: $(cat "$tmp/out")"
grep -q "^ppl-run: 3 of 3 seeds failed\$" "$tmp/out" || bad "--seeds: no summary: $(cat "$tmp/out")"
"$run" --seeds=4..5 -- true >"$tmp/out" 2>&1 || bad "--seeds without failures: exit status $?"

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
