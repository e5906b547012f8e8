#!/bin/sh
# Cross-check vpdep's context switch on AArch64: build test/unit/test_context.c
# against the assembly and against the ucontext reference, run both under
# qemu-user; then test/unit/test_clone_raw.c against the raw clone entry.  Needs gcc-aarch64-linux-gnu and qemu-user (Debian packages).
# Usage: test/cross/aarch64.sh [build-dir]   (exit 77 = tools missing: skip)
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$src/build-cross-aarch64}
cc=${CC:-aarch64-linux-gnu-gcc}
qemu=${QEMU:-qemu-aarch64}
sysroot=${SYSROOT:-/usr/aarch64-linux-gnu}

for tool in "$cc" "$qemu"; do
	command -v "$tool" >/dev/null 2>&1 || { echo "skip: $tool not found"; exit 77; }
done
mkdir -p "$out"

cflags="-std=gnu11 -O2 -g -Wall -Wextra -Wno-unused-parameter -fno-omit-frame-pointer -D_GNU_SOURCE
	-DPPL_TEST_NO_CMOCKA -I$src/src/vpdep -I$src/test/cross"
vp=$src/src/vpdep

# shellcheck disable=SC2086
$cc $cflags -o "$out/test_context_asm" "$src/test/unit/test_context.c" \
	"$src/test/unit/ctx_regs_aarch64.S" "$vp/arch/aarch64/context.S" "$vp/arch/aarch64/context_make.c" -pthread
# shellcheck disable=SC2086
$cc $cflags -DPPL_CONTEXT_UCONTEXT -o "$out/test_context_ucontext" \
	"$src/test/unit/test_context.c" "$src/test/unit/ctx_regs_aarch64.S" \
	"$vp/context_ucontext.c" -pthread

for kind in asm ucontext; do
	echo "== aarch64 context ($kind)"
	"$qemu" -L "$sysroot" "$out/test_context_$kind"
done

# The raw clone entry of the clone backend.
# shellcheck disable=SC2086
$cc $cflags -o "$out/test_clone_raw" "$src/test/unit/test_clone_raw.c" "$vp/arch/aarch64/clone_raw.S"
echo "== aarch64 clone_raw"
"$qemu" -L "$sysroot" "$out/test_clone_raw"
