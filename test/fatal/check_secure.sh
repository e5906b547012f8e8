#!/bin/sh
# check_secure.sh PROG: run a copy of PROG setuid and setgid to nobody, from
# root (real uid 0, effective 65534: AT_SECURE), with the PPL_ knobs set to
# values libppl would reject or act on.  It must ignore them: exit 0 and
# nothing on stderr (PPL_STATS=1 would print the counters).  Skipped (77)
# where the test cannot make a setuid program: not root, or nosuid.
prog=$1
[ "$(id -u)" -eq 0 ] || { echo "not root: cannot make a setuid program"; exit 77; }
id nobody >/dev/null 2>&1 || { echo "no user nobody"; exit 77; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
cp "$prog" "$dir/secure" && chown nobody:"$(id -gn nobody)" "$dir/secure" &&
	chmod 6755 "$dir/secure" || exit 1
err=$(env PPL_VPS=0 PPL_STACK_SIZE=20000 PPL_STATS=1 PPL_TLS=mine PPL_TLS_SWITCH=fast PPL_TLS_LDT_AFTER=-1 PPL_DEBUG=9 \
	PPL_TIMESLICE_US=50 PPL_DEADLOCK=maybe PPL_VP_BACKEND=fibers \
	"$dir/secure" 2>&1 >"$dir/out")
st=$?
cat "$dir/out"
[ "$st" -eq 77 ] && exit 77
if [ "$st" -ne 0 ] || [ -n "$err" ]; then
	echo "exit status $st, stderr: $err"
	exit 1
fi
# The same knobs are read when the program is not setuid.
if env PPL_VPS=0 "$prog" >/dev/null 2>&1; then
	echo "PPL_VPS=0 accepted by the plain program"
	exit 1
fi
