#!/usr/bin/env bash
# The GPU session's one command (docs/gpu.md): runs a prebuilt GPU bundle
# (tools/gpu_bundle.sh) on a machine with an NVIDIA GPU, never builds or
# installs anything, and writes one markdown report plus at most 7 logs, flat
# names under 16 MiB each, so that all of it comes back from the device tool.
#
#   tools/gpu_check.sh --bundle ARCHIVE|DIR [--out DIR] [--only STEP,..] [--quick] [--device cuda|cuda-host]
#
# Steps, each under its own timeout (seconds; 505 in all with the unpack; the first H200 run took 151):
#   facts       20  nvidia-smi, `emutrain info` (the GPU and whether the binary has code for it)
#   validate    80  emutrain validate --device cuda: every op x every policy, bit for bit
#   memcheck    70  compute-sanitizer memcheck (leak check too) over the whole validate matrix
#   racecheck   40  racecheck over the tile GEMM, a reduction, a softmax, the recurrent cell, spmm
#   synccheck   25  synccheck over the same selection
#   bench_gemm  55  bench gemm 4096^3 against cuBLAS (TF32 off)
#   bench_train 140 bench train ResNet-18 batch 128 (100), GCN (20), the 200-epoch GCN run (20)
#   pytorch     40  the PyTorch ResNet-18 step on the same GPU (TF32 off)
#   nccl        20  emutrain comm-check --comm nccl: one rank through the all-reduce path
# A step that runs past its timeout is stopped and reported as such; the others
# still run. --only reruns some steps (facts always runs). --quick with --device
# cuda-host runs the same script with tiny sizes on a machine without a GPU (the
# ctest gpu_check_quick), so it cannot rot between GPU loans.
#
# Exit status: 0 when every step that ran passed, 1 when one failed or timed
# out, 2 when the bundle is unusable or (device cuda) no GPU is visible.
set -uo pipefail

usage() { sed -n '7,8p' "$0" | sed 's/^# *//' >&2; exit 2; }
say() { echo "gpu_check: $(date -u +%H:%M:%S) $*" >&2; }

bundle="" out="gpu-report" only="" quick=0 device=cuda
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle) bundle=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --only) only=${2:?}; shift 2 ;;
    --quick) quick=1; shift ;;
    --device) device=${2:?}; shift 2 ;;
    -h|--help) usage ;;
    *) echo "gpu_check: unknown argument '$1'" >&2; usage ;;
  esac
done
case "$device" in cuda|cuda-host) ;; *) echo "gpu_check: --device: '$device' (cuda or cuda-host)" >&2; exit 2 ;; esac
steps_all=(facts validate memcheck racecheck synccheck bench_gemm bench_train pytorch nccl)
if [ -n "$only" ]; then
  for s in ${only//,/ }; do
    [[ " ${steps_all[*]} " == *" $s "* ]] || { echo "gpu_check: --only: unknown step '$s' (${steps_all[*]})" >&2; exit 2; }
  done
fi
wanted() { [ "$1" = facts ] || [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }

mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
report=$out/gpu_report.md
started=$(date +%s)

# --- the bundle: an archive is unpacked into a scratch folder, a folder used as it is ---
if [ -z "$bundle" ]; then
  here=$(cd "$(dirname "$0")/.." && pwd)
  [ -x "$here/bin/emutrain" ] && bundle=$here || { echo "gpu_check: give --bundle ARCHIVE|DIR (tools/gpu_bundle.sh makes one)" >&2; exit 2; }
fi
if [ -f "$bundle" ]; then
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/emutrain-gpu.XXXXXX")
  trap 'rm -rf "$scratch"' EXIT
  if command -v xz >/dev/null; then
    tar -C "$scratch" -xJf "$bundle" || { echo "gpu_check: cannot unpack $bundle" >&2; exit 2; }
  else  # no xz(1): Python's lzma module reads the archive
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$bundle" "$scratch" ||
      { echo "gpu_check: cannot unpack $bundle (no xz, and Python could not)" >&2; exit 2; }
  fi
  root=$scratch/emutrain-gpu
else
  root=$(cd "$bundle" 2>/dev/null && pwd) || { echo "gpu_check: no bundle at '$bundle'" >&2; exit 2; }
fi
emutrain=$root/bin/emutrain
[ -x "$emutrain" ] || { echo "gpu_check: $bundle holds no bin/emutrain" >&2; exit 2; }
say "bundle unpacked in $(( $(date +%s) - started )) s: $root"

# --- sizes: the H100's, or tiny ones on cuda-host ---
if [ $quick -eq 1 ]; then
  validate_sel=(--op gemm,softmax_forward,spmm --policy fp32,e6m6)
  sanitize_sel=(--op gemm,softmax_forward --policy fp32)
  gemm_args=(--m 24 --n 20 --k 28 --min-time 0)
  resnet_args=(--steps 1 --warmup 1 --policy fp32 --no-profile --set model.width=2 --set data.batch_size=2
               --set data.eval_batch_size=2)
  gcn_args=(--steps 2 --warmup 1 --policy fp32 --no-profile)
  gcn_epochs=2
  torch_args=(--batch 2 --steps 1 --warmup 0 --device cpu)
  cifar_records=16
else
  validate_sel=()
  # memcheck over the whole matrix: on an H200 5 of the 20 policies took 5 s under it
  sanitize_sel=()
  race_sel=(--op gemm,batch_norm_stats,channel_sum,softmax_forward,lstm_forward,gru_forward,spmm
            --policy fp32,e6m6,fused-4-chunked)
  gemm_args=()
  # 1 + 2 steps: on an H200 a step took 0.8 s in fp32 and 3.6 s in e6m6 (first GPU run,
  # docs/gpu/2026-11-28-c9efc31-h200.md), so 5 steps of 4 policies outran 55 s
  resnet_args=(--steps 2 --warmup 1)
  gcn_args=(--steps 50)
  gcn_epochs=200
  torch_args=(--batch 128)
  cifar_records=2000
fi
[ $quick -eq 1 ] && race_sel=("${sanitize_sel[@]}")
declare -A budget=([facts]=20 [validate]=80 [memcheck]=70 [racecheck]=40 [synccheck]=25 [bench_gemm]=55
                   [bench_train]=140 [pytorch]=40 [nccl]=20)
[ $quick -eq 1 ] && for s in "${steps_all[@]}"; do budget[$s]=$((budget[$s] * 4)); done  # the host executor is slow

declare -A status seconds
failed=0
# run_step NAME LOG -- COMMAND...: the command under the step's timeout, output appended to LOG
# (capped at 15 MiB, the device tool's limit is 16).
run_step() {
  local name=$1 log=$2; shift 3
  local t0 rc
  t0=$(date +%s)
  echo "\$ $*" >> "$log"
  timeout --kill-after=5 "${budget[$name]}" "$@" >> "$log" 2>&1
  rc=$?
  truncate -s '<15M' "$log" 2>/dev/null
  seconds[$name]=$(( ${seconds[$name]:-0} + $(date +%s) - t0 ))
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    status[$name]="TIMED OUT after ${budget[$name]} s"
    echo "gpu_check: timed out after ${budget[$name]} s" >> "$log"
  elif [ $rc -ne 0 ]; then
    status[$name]="FAIL (exit $rc)"
  else
    status[$name]=${status[$name]:-pass}
  fi
  [ $rc -eq 0 ] || failed=1
  say "$name: ${status[$name]} (${seconds[$name]} s)"
  return $rc
}
skip() { status[$1]="not run: $2"; say "$1: not run: $2"; }

# --- facts ---
facts=$out/facts.txt
: > "$facts"
if [ "$device" = cuda ]; then
  if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
    say "no NVIDIA GPU visible (nvidia-smi -L fails): nothing to check here"
    printf '# gpu_check: no GPU visible on %s\n' "$(hostname)" > "$report"
    exit 2
  fi
  gpu=$(nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader | head -1)
  run_step facts "$facts" -- nvidia-smi
else
  gpu="none: device cuda-host runs the CUDA kernels on the CPU (host executor)"
fi
run_step facts "$facts" -- "$emutrain" info
{ echo "\$ nproc"; nproc; echo "\$ cat $root/MANIFEST.txt"; cat "$root/MANIFEST.txt"; } >> "$facts" 2>&1

# The Python with PyTorch: the machine's python3, else Debian's.
python=""
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null && "$p" -c 'import torch' 2>/dev/null; then python=$p; break; fi
done
# cuBLAS and NCCL come from the machine (the bundle carries neither): the binary searches the CUDA
# toolkit and pip's nvidia-* wheels; PyTorch's own copies are named explicitly when it has them.
if [ -n "$python" ]; then
  nvidia_dir=$("$python" -c 'import nvidia, os; print(list(nvidia.__path__)[0])' 2>/dev/null)
  if [ -n "$nvidia_dir" ]; then
    [ -n "${EMUTRAIN_CUBLAS:-}" ] || export EMUTRAIN_CUBLAS=$(find "$nvidia_dir" -name 'libcublas.so.13*' | head -1)
    [ -n "${EMUTRAIN_NCCL:-}" ] || export EMUTRAIN_NCCL=$(find "$nvidia_dir" -name 'libnccl.so.2*' | head -1)
    [ -n "$EMUTRAIN_CUBLAS" ] || unset EMUTRAIN_CUBLAS
    [ -n "$EMUTRAIN_NCCL" ] || unset EMUTRAIN_NCCL
  fi
fi

# --- validate ---
validate_log=$out/validate.log
: > "$validate_log"
wanted validate && run_step validate "$validate_log" -- "$emutrain" validate --device "$device" "${validate_sel[@]}"

# --- compute-sanitizer ---
sanitizer_log=$out/sanitizer.log
: > "$sanitizer_log"
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in memcheck racecheck synccheck; do
  wanted $tool || continue
  if [ "$device" != cuda ]; then skip $tool "compute-sanitizer needs a GPU (device $device)"; continue; fi
  if [ ! -x "$sanitizer" ]; then skip $tool "compute-sanitizer is not installed"; failed=1; continue; fi
  if [ $tool = memcheck ]; then sel=("${sanitize_sel[@]}"); else sel=("${race_sel[@]}"); fi
  extra=()
  [ $tool = memcheck ] && extra=(--leak-check full)
  run_step $tool "$sanitizer_log" -- "$sanitizer" --tool $tool "${extra[@]}" --error-exitcode 99 \
    "$emutrain" validate --device cuda "${sel[@]}"
done

# --- synthetic data in the canonical formats (throughput does not depend on the values):
#     CIFAR-10 binary records and a Cora-sized graph (2708 papers, 1433 binary features at
#     Cora's 1.27% density, 5429 citations) ---
data=$(mktemp -d "${TMPDIR:-/tmp}/emutrain-gpu-data.XXXXXX")
trap 'rm -rf "${scratch:-}" "$data"' EXIT
make_data() {
  local py=${python:-python3}
  "$py" - "$data" "$cifar_records" <<'EOF'
import os, random, sys
root, records = sys.argv[1], int(sys.argv[2])
rng = random.Random(1)
cifar = os.path.join(root, "cifar", "cifar-10-batches-bin")
os.makedirs(cifar)
for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
    with open(os.path.join(cifar, name), "wb") as f:
        for _ in range(records):
            f.write(bytes([rng.randrange(10)]) + rng.randbytes(3072))
cora = os.path.join(root, "cora")
os.makedirs(cora)
labels = "ABCDEFG"
with open(os.path.join(cora, "cora.content"), "w") as f:
    for i in range(2708):
        bits = ["1" if rng.random() < 0.0127 else "0" for _ in range(1433)]
        f.write(f"{1000 + i}\t" + "\t".join(bits) + f"\t{labels[i % 7]}\n")
with open(os.path.join(cora, "cora.cites"), "w") as f:
    for _ in range(5429):
        a, b = rng.randrange(2708), rng.randrange(2708)
        if a != b:
            f.write(f"{1000 + a}\t{1000 + b}\n")
EOF
}

# --- benchmarks ---
gemm_log=$out/bench_gemm.log
: > "$gemm_log"
wanted bench_gemm && run_step bench_gemm "$gemm_log" -- "$emutrain" bench gemm --device "$device" "${gemm_args[@]}"

train_log=$out/bench_train.log
: > "$train_log"
gcn_s=""
if wanted bench_train; then
  if ! make_data >> "$train_log" 2>&1; then
    status[bench_train]="FAIL (could not write the synthetic data)"; failed=1
  else
    full=${budget[bench_train]}
    budget[bench_train]=$(( full * 100 / 140 ))
    run_step bench_train "$train_log" -- "$emutrain" bench train "$root/recipes/resnet18_cifar10.yaml" \
      --device "$device" "${resnet_args[@]}" --set data.root="$data/cifar" --set data.workers=4
    budget[bench_train]=$(( full * 20 / 140 ))
    run_step bench_train "$train_log" -- "$emutrain" bench train "$root/recipes/gcn_cora.yaml" \
      --device "$device" "${gcn_args[@]}" --set data.root="$data/cora"
    t0=$(date +%s.%N)
    run_step bench_train "$train_log" -- "$emutrain" train "$root/recipes/gcn_cora.yaml" \
      --set data.root="$data/cora" --set device="$device" --set epochs=$gcn_epochs \
      --set checkpoint.every_epochs=0 --out "$data/gcn_run" && \
      gcn_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
    budget[bench_train]=$full
  fi
fi

torch_log=$out/pytorch.log
: > "$torch_log"
if wanted pytorch; then
  if [ -z "$python" ]; then
    skip pytorch "no python3 with PyTorch on this machine"
  elif [ "$device" = cuda ] && ! "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    skip pytorch "PyTorch here has no CUDA"
  else
    run_step pytorch "$torch_log" -- "$python" "$root/tools/pytorch_resnet18_step.py" "${torch_args[@]}"
  fi
fi

nccl_log=$out/nccl.log
: > "$nccl_log"
if wanted nccl; then
  if [ "$device" = cuda ]; then
    run_step nccl "$nccl_log" -- "$emutrain" comm-check --comm nccl
  else  # no GPU: the same command and path through the one-process communicator
    run_step nccl "$nccl_log" -- "$emutrain" comm-check --comm local
    status[nccl]="${status[nccl]} (comm local: NCCL needs a GPU)"
  fi
fi

# --- the report ---
total=$(( $(date +%s) - started ))
section() {  # title, log, lines to keep (grep pattern, "tail:N", or "skip:PATTERN": the last 150 others)
  local title=$1 log=$2 keep=$3
  echo
  echo "## $title"
  echo '```'
  if [ ! -s "$log" ]; then echo "(not run)"
  elif [[ $keep == tail:* ]]; then tail -n "${keep#tail:}" "$log"
  elif [[ $keep == skip:* ]]; then grep -vE "${keep#skip:}" "$log" | tail -n 150
  else grep -E "$keep" "$log" | head -80
  fi
  echo '```'
}
{
  echo "# gpu_check report"
  echo
  echo "- machine: $(hostname), $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPU cores"
  echo "- GPU (name, driver, compute capability, memory): $gpu"
  echo "- device: $device$([ $quick -eq 1 ] && echo ', --quick (tiny sizes)')"
  echo "- bundle: $(sed -n 's/^commit: *//p' "$root/MANIFEST.txt"), built for CUDA architectures $(sed -n 's/^cuda: *architectures //p' "$root/MANIFEST.txt")"
  echo "- cuBLAS: ${EMUTRAIN_CUBLAS:-searched by the binary}; NCCL: ${EMUTRAIN_NCCL:-searched by the binary}"
  echo "- wall time: ${total} s"
  echo
  echo "| step | status | seconds | budget | log |"
  echo "|---|---|---|---|---|"
  for s in "${steps_all[@]}"; do
    case $s in
      facts) log=facts.txt ;; validate) log=validate.log ;; memcheck|racecheck|synccheck) log=sanitizer.log ;;
      bench_gemm) log=bench_gemm.log ;; bench_train) log=bench_train.log ;; pytorch) log=pytorch.log ;; nccl) log=nccl.log ;;
    esac
    echo "| $s | ${status[$s]:-not selected (--only)} | ${seconds[$s]:--} | ${budget[$s]} | $log |"
  done
  section "GPU and build (nvidia-smi, emutrain info)" "$facts" '^GPU |^ *(GPU |cuda:|CUDA backend|CPU|\| *[0-9]+ +NVIDIA|\| NVIDIA-SMI)|^commit|^cuda:|^binary'
  section "validate --device $device" "$validate_log" "tail:60"
  section "compute-sanitizer" "$sanitizer_log" '^\$|ERROR SUMMARY|RACECHECK SUMMARY|SYNCCHECK SUMMARY|cells:|timed out'
  section "bench gemm" "$gemm_log" "tail:30"
  section "bench train (ResNet-18, GCN) and the GCN run" "$train_log" 'skip:^epoch [0-9]+/[0-9]+ \(step'
  [ -n "$gcn_s" ] && printf '\nGCN, %s epochs, device %s: %s s wall for the whole `emutrain train` (start-up, data, epochs, evaluation)\n' "$gcn_epochs" "$device" "$gcn_s"
  section "PyTorch ResNet-18 step (TF32 off)" "$torch_log" "tail:10"
  section "comm-check" "$nccl_log" "tail:10"
} > "$report"
say "report: $report (${total} s)"
exit $failed
