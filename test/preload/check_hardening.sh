#!/bin/sh
# check_hardening.sh READELF LIB: LIB is built as Debian builds its
# libraries: full RELRO (a GNU_RELRO segment and BIND_NOW), the stack
# protector (it calls __stack_chk_fail) and, in an optimised build,
# _FORTIFY_SOURCE (it calls some __*_chk function).
readelf=$1 lib=$2 fail=0
"$readelf" -lW "$lib" | grep -q GNU_RELRO || { echo "no GNU_RELRO segment"; fail=1; }
"$readelf" -dW "$lib" | grep -Eq '\(BIND_NOW\)|\(FLAGS\).*BIND_NOW|\(FLAGS_1\).*NOW' ||
	{ echo "not linked with -z now"; fail=1; }
syms=$("$readelf" --dyn-syms -W "$lib")
echo "$syms" | grep -q ' __stack_chk_fail' || { echo "no stack protector"; fail=1; }
if [ "$3" = fortify ]; then
	echo "$syms" | grep -Eq ' __[a-z0-9_]+_chk(@|$)' || { echo "not fortified"; fail=1; }
fi
[ $fail -eq 0 ] && echo "hardened: RELRO, BIND_NOW, stack protector${3:+, $3}"
exit $fail
