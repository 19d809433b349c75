#!/usr/bin/env bash
# Packs an existing build of emutrain for a GPU machine that cannot build it
# (no package registry, none of the Debian -dev packages: docs/gpu.md).
#
#   tools/gpu_bundle.sh [--allow-jit] BUILD_DIR DIR
#
# The build must hold sm_90 machine code (configure with
# -DCMAKE_CUDA_ARCHITECTURES="90-real;90-virtual"; without a GPU the default is
# PTX only): a GPU machine given PTX only would spend minutes of its loan
# compiling every kernel at load time. --allow-jit packs such a build anyway
# (the ctest gpu_bundle does, to check the packing on the default build).
#
# DIR/emutrain-gpu/ gets
#   bin/emutrain      the build's binary, stripped, RPATH $ORIGIN/../lib
#   lib/              every shared library it loads that is not glibc, libstdc++/libgcc
#                     or the NVIDIA driver (libcudart, fmt, yaml-cpp, OpenBLAS, MPI, zlib,
#                     ...), each with RPATH $ORIGIN; cuBLAS and NCCL are not carried: the
#                     binary loads them at run time from the machine's CUDA or PyTorch
#                     install (backends/cuda/shared_library.h)
#   recipes/          the recipes
#   tools/            gpu_check.sh and pytorch_resnet18_step.py (+ bench/pytorch/models.py)
#   MANIFEST.txt      commit, CUDA architectures, libraries and sizes
# and DIR/emutrain-gpu.tar.xz, the one archive that travels (at most 48 MiB, so
# that it and the working tree fit the device tool's 64 MiB). Its size is printed.
# Needs: ldd, patchelf, strip, xz. The build is not changed.
set -euo pipefail

die() { echo "gpu_bundle: $*" >&2; exit 1; }
allow_jit=0
if [ "${1:-}" = "--allow-jit" ]; then allow_jit=1; shift; fi
[ $# -eq 2 ] || die "usage: tools/gpu_bundle.sh [--allow-jit] BUILD_DIR DIR"
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" 2>/dev/null && pwd) || die "no build folder '$1'"
exe=$build/emutrain
[ -x "$exe" ] || die "$exe does not exist: build it first (cmake --build $1 --target emutrain)"
# "90-real 90-virtual", "native (90)", or "90-virtual" alone (PTX only).
archs=$("$exe" info 2>/dev/null | sed -n 's/.*has code for CUDA architectures //p' | head -1)
if [ -n "$archs" ] && ! echo " $archs " | grep -Eq ' (native|[0-9]+a?(-real)?)[ (]'; then
  [ $allow_jit = 1 ] || die "$exe has PTX only (CUDA architectures $archs): the GPU machine would spend \
minutes of its loan compiling it. Reconfigure and rebuild first:
  cmake -S . -B $1 -DCMAKE_CUDA_ARCHITECTURES=\"90-real;90-virtual\" && cmake --build $1 -j2 --target emutrain"
  echo "gpu_bundle: warning: PTX only (CUDA architectures $archs): the driver compiles it at load time (--allow-jit)"
fi
for tool in ldd patchelf strip xz; do
  command -v $tool >/dev/null || die "needs '$tool' (tools/install_deps.sh installs it)"
done
mkdir -p "$2"
out=$(cd "$2" && pwd)
max_bytes=$((48 * 1024 * 1024))

# What may come from the GPU machine itself: glibc's libraries and loader, the C++
# runtime, and the NVIDIA driver's libraries (libcuda is loaded by libcudart at run time).
allowed_re='^(linux-vdso\.so|libc\.so|libm\.so|libpthread\.so|libdl\.so|librt\.so|ld-linux[-a-z0-9_]*\.so|libstdc\+\+\.so|libgcc_s\.so|libcuda\.so|libnvidia-)'

stage=$out/emutrain-gpu
rm -rf "$stage" "$out/emutrain-gpu.tar.xz"
mkdir -p "$stage/bin" "$stage/lib" "$stage/tools" "$stage/bench/pytorch"

cp "$exe" "$stage/bin/emutrain"
strip --strip-unneeded "$stage/bin/emutrain"

# Every library the dynamic loader resolves for the build's binary (ldd lists the
# transitive closure), except the allowed ones.
missing=()
while read -r line; do
  name=${line%% *}
  case "$line" in
    *"=> not found"*) missing+=("$name"); continue ;;
    *" => "*) path=${line#*=> }; path=${path%% (*} ;;
    *) continue ;;  # the vdso and the loader itself (no "=>")
  esac
  base=$(basename "$name")
  [[ $base =~ $allowed_re ]] && continue
  cp -L "$path" "$stage/lib/$base"
  chmod u+w "$stage/lib/$base"
  # DT_RPATH (not RUNPATH) applies to the library's own dependencies too.
  patchelf --force-rpath --set-rpath '$ORIGIN' "$stage/lib/$base"
done < <(ldd "$exe")
[ ${#missing[@]} -eq 0 ] || die "ldd cannot resolve ${missing[*]} for $exe"
patchelf --force-rpath --set-rpath '$ORIGIN/../lib' "$stage/bin/emutrain"

cp -r "$src/recipes" "$stage/recipes"
cp "$src/tools/gpu_check.sh" "$src/tools/pytorch_resnet18_step.py" "$stage/tools/"
cp "$src/bench/pytorch/models.py" "$stage/bench/pytorch/"

{
  echo "emutrain GPU bundle (tools/gpu_bundle.sh, docs/gpu.md)"
  echo "made:     $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname)"
  echo "commit:   $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$src" diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "build:    $build ($(grep -m1 '^CMAKE_BUILD_TYPE:' "$build/CMakeCache.txt" 2>/dev/null | cut -d= -f2))"
  echo "cuda:     architectures ${archs:-none (no CUDA backend)}"
  echo "binary:   $(stat -c %s "$stage/bin/emutrain") bytes stripped ($(stat -c %s "$exe") unstripped)"
  echo "libraries carried:"
  for f in "$stage"/lib/*; do [ -e "$f" ] && echo "  $(basename "$f") $(stat -c %s "$f")"; done
  echo "loaded from the machine at run time, not carried: libcuda (driver), libcublas.so.13 (bench gemm's"
  echo "baseline; \$EMUTRAIN_CUBLAS), libnccl.so.2 (comm-check --comm nccl; \$EMUTRAIN_NCCL)"
} > "$stage/MANIFEST.txt"

# xz -6 by default (the smallest archive, for the trip to the device);
# EMUTRAIN_BUNDLE_XZ_LEVEL=1 packs in a seventh of the time, half again larger
# (the gpu_bundle test, which checks the packing, not the ratio).
xz_level=${EMUTRAIN_BUNDLE_XZ_LEVEL:-6}
[[ $xz_level =~ ^[0-9]$ ]] || die "EMUTRAIN_BUNDLE_XZ_LEVEL=$xz_level: expected one digit 0-9 (xz's preset)"
tar -C "$out" -cf - emutrain-gpu | xz -T2 -"$xz_level" > "$out/emutrain-gpu.tar.xz"
size=$(stat -c %s "$out/emutrain-gpu.tar.xz")
unpacked=$(du -sb "$stage" | cut -f1)
awk -v f="$out/emutrain-gpu.tar.xz" -v s="$size" -v u="$unpacked" \
  'BEGIN { printf "gpu_bundle: %s: %.1f MiB (%.1f MiB unpacked; limit 48 MiB)\n", f, s / 1048576, u / 1048576 }'
[ "$size" -le "$max_bytes" ] || die "the archive is larger than 48 MiB: it and the working tree would not fit the device tool's 64 MiB"
