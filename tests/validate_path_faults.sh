#!/usr/bin/env bash
# validate_detects_path_faults (tests/validate.cmake): a fault planted in each
# path of the tile GEMM (EMUTRAIN_PLANT_FAULT, backends/cuda/ops/gemm_tile.h
# "Planted faults") must make `validate --device cuda-host` FAIL on gemm and on
# every other op that runs the tile kernel under a policy that takes that path:
# the proof that validate's cases reach the path's fast step (a whole k tile of
# finite operands) and its checked step (a partial k tile, Inf, NaN, a product
# that may overflow). Without a fault the same selection passes.
# Usage: validate_path_faults.sh EMUTRAIN
set -u
emutrain=$1
ops=gemm,conv2d_forward,conv2d_grad_input,conv2d_grad_weight,attention_scores,attention_context
# fault  policy  (the path launch_tiles picks for that policy)
faults=(
  "Fp32NativePath:fast fp32"
  "MulFmaPath:fast bf16-mul-fp32-acc"
  "MulFmaPath:checked bf16-mul-fp32-acc"
  "AccIeeePath:fast e6m6"
  "AccIeeePath:checked e6m6"
  "AccIeeePath<wide>:fast pwl-functions"
  "AccIeeePath<wide>:checked pwl-functions"
  "PositMulPath:fast posit16-mul-fp32-acc"
  "Fp32MulPath:checked fp16rtz-mul-fp32-acc"
  "RoundedPath:checked posit16_1"
)
status=0
for entry in "${faults[@]}"; do
  read -r fault policy <<<"$entry"
  out=$(EMUTRAIN_PLANT_FAULT="$fault" "$emutrain" validate --device cuda-host --op "$ops" --policy "$policy" 2>&1)
  rc=$?
  failed=$(printf '%s\n' "$out" | grep -Ec '^[a-z0-9_]+ +FAIL$')
  if [ $rc -ne 1 ] || ! printf '%s\n' "$out" | grep -Eq '^gemm +FAIL$'; then
    echo "FAIL: fault $fault under $policy: validate exit $rc, gemm not FAIL"
    printf '%s\n' "$out" | tail -20
    status=1
  else
    echo "ok: fault $fault under $policy: $failed ops FAIL: $(printf '%s\n' "$out" | grep -E '^[a-z0-9_]+ +FAIL$' | awk '{print $1}' | tr '\n' ' ')"
  fi
done
# The same selection without a fault passes (so the FAILs above are the faults').
for policy in fp32 bf16-mul-fp32-acc e6m6 pwl-functions posit16-mul-fp32-acc fp16rtz-mul-fp32-acc posit16_1; do
  if ! out=$("$emutrain" validate --device cuda-host --op "$ops" --policy "$policy" 2>&1); then
    echo "FAIL: no fault, $policy: validate failed"
    printf '%s\n' "$out" | tail -20
    status=1
  fi
done
# A malformed fault is an error naming the variable, not a silent no-op.
if out=$(EMUTRAIN_PLANT_FAULT=MulFmaPath "$emutrain" validate --device cuda-host --op gemm --policy fp32 2>&1) ||
  ! printf '%s\n' "$out" | grep -q "EMUTRAIN_PLANT_FAULT='MulFmaPath'"; then
  echo "FAIL: a malformed EMUTRAIN_PLANT_FAULT was not reported"
  printf '%s\n' "$out" | tail -5
  status=1
fi
exit $status
