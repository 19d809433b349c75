#!/usr/bin/env bash
# Instruction counts of one CPU kernel call (bench/icount.cpp) under callgrind: a measure that
# does not depend on the machine's load, for comparing kernels on a shared machine.
#
#   bench/icount.sh BUILD_DIR gemm e6m6 fp32 256 256 256
#   bench/icount.sh BUILD_DIR conv fwd fp32/fp32 8 64 32 32 64 3 1 1
#
# BUILD_DIR: a CMake build of this tree or an older one (its libemutrain_engine.a and
# libemutrain_numerics.a, and the sources beside it: BUILD_DIR/..). Prints the instructions
# executed inside the counted call (inclusive), and the call's own output.
set -euo pipefail
build=$(cd "$1" && pwd); shift
src=$(cd "$build/.." && pwd)
here=$(cd "$(dirname "$0")" && pwd)
exe="$build/icount"
if [[ ! -x "$exe" || "$exe" -ot "$build/libemutrain_engine.a" || "$exe" -ot "$here/icount.cpp" ]]; then
  g++ -std=c++17 -O2 -march=native -ffp-contract=off -I"$src" "$here/icount.cpp" -o "$exe" \
    "$build/libemutrain_engine.a" "$build/libemutrain_numerics.a" -lfmt -lpthread -ldl
fi
case "$1" in
  gemm) fn='emu::mac_gemm_run*' ;;
  conv) case "$2" in fwd) fn='emu::CpuBackend::conv2d_forward*' ;; gin) fn='emu::CpuBackend::conv2d_grad_input*' ;;
                     gw) fn='emu::CpuBackend::conv2d_grad_weight*' ;; esac ;;
  *) fn="$1" ;;
esac
out=$(mktemp)
valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect="$fn" "$exe" "$@" 2>/dev/null
ir=$(awk '/^summary:/ {print $2}' "$out")
rm -f "$out"
printf '%s instructions: %s\n' "$*" "$ir"
