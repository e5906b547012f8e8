#!/bin/sh
# check_install.sh MESON BUILD_ROOT PREFIX LIBDIR BINDIR CC SOURCE_DIR
# Install into a temporary destdir, then build a program with the flags
# `pkg-config --cflags --libs ppl` gives there and run it, and one with
# ppl-ffi's (ppl_spawn); check ppl-run.
set -eu
meson=$1 build=$2 prefix=$3 libdir=$4 bindir=$5 cc=$6 src=$7
case $libdir in /*) ;; *) libdir=$prefix/$libdir ;; esac
case $bindir in /*) ;; *) bindir=$prefix/$bindir ;; esac
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT

"$meson" install -C "$build" --no-rebuild --quiet --destdir "$dest" >"$dest.log" 2>&1 ||
	{ cat "$dest.log"; rm -f "$dest.log"; exit 1; }
rm -f "$dest.log"
test -f "$dest$libdir/libppl.so" || { echo "no $libdir/libppl.so installed"; exit 1; }
test -f "$dest$prefix/include/ppl.h" || { echo "no ppl.h installed"; exit 1; }
test -f "$dest$prefix/include/ppl/pthread.h" || { echo "no ppl/pthread.h installed"; exit 1; }

PKG_CONFIG_PATH="$dest$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest"
PKG_CONFIG_LIBDIR="$dest$libdir/pkgconfig"
export PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_LIBDIR
flags=$(pkg-config --cflags --libs ppl)
echo "pkg-config --cflags --libs ppl: $flags"
case $flags in *"-I$dest$prefix/include/ppl"*) ;; *) echo "no -I for include/ppl"; exit 1 ;; esac
# shellcheck disable=SC2086 # the flags are words
"$cc" -o "$dest/prog" "$src/install_prog.c" $flags
LD_LIBRARY_PATH="$dest$libdir" "$dest/prog"

# Typed-argument threads: libppl-ffi and its pkg-config file.
test -f "$dest$libdir/libppl-ffi.so" || { echo "no $libdir/libppl-ffi.so installed"; exit 1; }
flags=$(pkg-config --cflags --libs ppl-ffi)
echo "pkg-config --cflags --libs ppl-ffi: $flags"
# shellcheck disable=SC2086 # the flags are words
"$cc" -o "$dest/spawn" "$src/install_spawn.c" $flags
LD_LIBRARY_PATH="$dest$libdir" "$dest/spawn"

# The installed ppl-run preloads the installed library.
run="$dest$bindir/ppl-run"
test -x "$run" || { echo "ppl-run not installed executable at $bindir"; exit 1; }
grep -q "^libppl='$libdir/libppl.so'\$" "$run" || { echo "installed ppl-run points elsewhere"; exit 1; }
"$run" --help >/dev/null
echo "install: ok"
