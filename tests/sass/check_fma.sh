#!/usr/bin/env bash
# The FMA check (docs/contract.md section 7.2): fails when a built CUDA kernel
# contains a fused multiply-add that it must not have. nvcc builds with
# --fmad=false, so an FMA can only come from an explicit __fmaf_rn/__fma_rn; the
# kernels that call one on purpose (an exact product into an fp32 accumulator)
# are listed in fma_allowed.txt, one extended regular expression per line over
# the (mangled) kernel name, each with its reason.
#
#   check_fma.sh ALLOWED FILE...          FILE: a .ptx file (the PTX of the
#       kernels: fma.rn.* instructions), a directory of them (extract_ptx.py's
#       output), or a library/cubin, disassembled with
#       cuobjdump -sass (FFMA, DFMA, HFMA2) when cuobjdump is on PATH or in $CUOBJDUMP
#   check_fma.sh --assemble PTXAS ALLOWED DIR   the SASS of a build that holds
#       PTX only (CMAKE_CUDA_ARCHITECTURES=90-virtual, the default without a GPU):
#       each DIR/*.ptx assembled for sm_90 as nvcc would (ptxas -O3 --fmad=false),
#       side by side, then disassembled and checked as above
#
# In PTX, a floating-point mul, add or sub without a rounding modifier (mul.f32,
# not mul.rn.f32) may be fused into an FMA by ptxas or by the driver that
# compiles PTX at load time (PTX ISA, "add": "mul/add sequences with no rounding
# modifiers may be optimized to use fused-multiply-add instructions"). nvcc's
# --fmad=false writes every one with .rn, so PTX from it cannot be fused later,
# whatever the assembler's settings; the check fails on any one without, in every
# kernel, allowed or not.
#   check_fma.sh --self-test NVCC        proves the check sees an FMA: a kernel
#       that calls __fmaf_rn must fail it, the same kernel with __fmul_rn and
#       __fadd_rn must pass (both built with the project's --fmad=false)
set -euo pipefail

cuobjdump=${CUOBJDUMP:-$(command -v cuobjdump || true)}

# "kernel<TAB>has_fma<TAB>has_contractible" per kernel of one file.
scan() {
  case "$1" in
    *.ptx)
      awk '/\.entry[ \t]/ { if (fn != "") print fn "\t" fma "\t" loose; fn = $0; sub(/.*\.entry[ \t]+/, "", fn); sub(/\(.*/, "", fn); fma = 0; loose = 0 }
           /^[ \t]*(@!?%p[0-9]+[ \t]+)?fma\.rn/ { fma = 1 }
           /^[ \t]*(@!?%p[0-9]+[ \t]+)?(mul|add|sub)(\.ftz|\.sat)*\.(f16|f16x2|bf16|bf16x2|f32|f64)[ \t]/ { loose = 1 }
           END { if (fn != "") print fn "\t" fma "\t" loose }' "$1" ;;
    *)
      [ -n "$cuobjdump" ] || { echo "check_fma: no cuobjdump to disassemble $1" >&2; return 2; }
      "$cuobjdump" -sass "$1" | awk '/Function :/ { if (fn != "") print fn "\t" fma "\t0"; fn = $3; fma = 0 }
           /[^A-Z](FFMA|DFMA|HFMA2)[ .]/ { fma = 1 }
           END { if (fn != "") print fn "\t" fma "\t0" }' ;;
  esac
}

check() {
  local allowed=$1
  shift
  local kernels=0 bad=0 fn fma loose
  for file in "$@"; do
    while IFS=$'\t' read -r fn fma loose; do
      kernels=$((kernels + 1))
      if [ "$loose" = 1 ]; then
        echo "check_fma: FORBIDDEN mul/add/sub without a rounding modifier (fusable by ptxas or the driver) in kernel $(echo "$fn" | c++filt) ($file)" >&2
        bad=1
      fi
      [ "$fma" = 1 ] || continue
      if grep -Ev '^(#|$)' "$allowed" | grep -Eq -f - <(echo "$fn") 2>/dev/null; then
        echo "check_fma: allowed FMA in $fn"
      else
        echo "check_fma: FORBIDDEN fused multiply-add in kernel $(echo "$fn" | c++filt) ($file)" >&2
        bad=1
      fi
    done < <(scan "$file")
  done
  if [ "$kernels" -eq 0 ]; then
    echo "check_fma: no kernels found in $*" >&2
    return 1
  fi
  echo "check_fma: $kernels kernels checked in $# files"
  return $bad
}

if [ "${1:-}" = "--self-test" ]; then
  nvcc=$2
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cat > "$tmp/fused.cu" <<'CU'
__global__ void axpy_fused(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __fmaf_rn(a, x[i], y[i]);
}
CU
  cat > "$tmp/plain.cu" <<'CU'
__global__ void axpy_plain(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __fadd_rn(__fmul_rn(a, x[i]), y[i]);
}
CU
  : > "$tmp/none.txt"
  "$nvcc" -arch=compute_90 --fmad=false -ptx -o "$tmp/fused.ptx" "$tmp/fused.cu"
  "$nvcc" -arch=compute_90 --fmad=false -ptx -o "$tmp/plain.ptx" "$tmp/plain.cu"
  if check "$tmp/none.txt" "$tmp/fused.ptx" > /dev/null 2>&1; then
    echo "check_fma self-test: the FMA of __fmaf_rn was NOT detected" >&2
    exit 1
  fi
  echo "axpy_fused" > "$tmp/allow.txt"
  check "$tmp/allow.txt" "$tmp/fused.ptx"  # an allowed kernel passes
  check "$tmp/none.txt" "$tmp/plain.ptx"
  # The same plain kernel's PTX with the rounding modifiers taken off (mul.f32,
  # add.f32: what nvcc writes where it may contract), which ptxas or the driver
  # is free to fuse; the check must fail it even where the kernel is allowed.
  sed -E 's/\b(mul|add|sub)\.rn\.f32/\1.f32/' "$tmp/plain.ptx" > "$tmp/loose.ptx"
  grep -Eq '^[[:space:]]*mul\.f32' "$tmp/loose.ptx" || { echo "check_fma self-test: no mul.f32 made" >&2; exit 1; }
  echo "axpy_plain" > "$tmp/allow_loose.txt"
  if check "$tmp/allow_loose.txt" "$tmp/loose.ptx" > /dev/null 2>&1; then
    echo "check_fma self-test: a mul.f32/add.f32 without a rounding modifier was NOT detected" >&2
    exit 1
  fi
  echo "check_fma self-test: __fmaf_rn detected, allowed by name, separate roundings pass, fusable ones fail"
  exit 0
fi

if [ "${1:-}" = "--assemble" ]; then
  ptxas=$2 allowed=$3 dir=$4
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  ls "$dir"/*.ptx > "$tmp/list" 2>/dev/null || { echo "check_fma: no .ptx in $dir" >&2; exit 1; }
  echo "check_fma: assembling $(wc -l < "$tmp/list") PTX files for sm_90 ($ptxas -O3 --fmad=false)"
  # shellcheck disable=SC2016
  xargs -P "$(nproc)" -I{} sh -c '"$1" -arch=sm_90 -O3 --fmad=false -o "$2/$(basename "$3" .ptx).cubin" "$3" || exit 255' \
    _ "$ptxas" "$tmp" {} < "$tmp/list"
  check "$allowed" "$tmp"/*.cubin
  exit
fi

# CMake hands a list of object files as one ';'-separated argument.
allowed=$1
shift
files=()
for arg in "$@"; do
  IFS=';' read -ra parts <<< "$arg"
  for part in "${parts[@]}"; do
    if [ -d "$part" ]; then
      files+=("$part"/*.ptx)
    else
      files+=("$part")
    fi
  done
done
check "$allowed" "${files[@]}"
