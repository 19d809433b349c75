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
#   check_fma.sh --self-test NVCC        proves the check sees an FMA: a kernel
#       that calls __fmaf_rn must fail it, the same kernel with __fmul_rn and
#       __fadd_rn must pass (both built with the project's --fmad=false)
set -euo pipefail

cuobjdump=${CUOBJDUMP:-$(command -v cuobjdump || true)}

# "kernel<TAB>has_fma" per kernel of one file.
scan() {
  case "$1" in
    *.ptx)
      awk '/\.entry[ \t]/ { if (fn != "") print fn "\t" fma; fn = $0; sub(/.*\.entry[ \t]+/, "", fn); sub(/\(.*/, "", fn); fma = 0 }
           /^[ \t]*(@%p[0-9]+[ \t]+)?fma\.rn/ { fma = 1 }
           END { if (fn != "") print fn "\t" fma }' "$1" ;;
    *)
      [ -n "$cuobjdump" ] || { echo "check_fma: no cuobjdump to disassemble $1" >&2; return 2; }
      "$cuobjdump" -sass "$1" | awk '/Function :/ { if (fn != "") print fn "\t" fma; fn = $3; fma = 0 }
           /[^A-Z](FFMA|DFMA|HFMA2)[ .]/ { fma = 1 }
           END { if (fn != "") print fn "\t" fma }' ;;
  esac
}

check() {
  local allowed=$1
  shift
  local kernels=0 bad=0 fn fma
  for file in "$@"; do
    while IFS=$'\t' read -r fn fma; do
      kernels=$((kernels + 1))
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
  echo "check_fma self-test: __fmaf_rn detected, allowed by name, separate roundings pass"
  exit 0
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
