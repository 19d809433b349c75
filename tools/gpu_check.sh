#!/usr/bin/env bash
# One command for a machine with an NVIDIA GPU (issue 15): builds emutrain for
# the visible GPU, proves the CUDA backend equal to the CPU reference bit for
# bit (emutrain validate --device cuda), runs compute-sanitizer (memcheck,
# racecheck, synccheck) over the harness' cases, runs the GPU benchmarks that
# exist, and writes one report.
#
#   tools/gpu_check.sh REPORT_DIR [BUILD_DIR]
#
# REPORT_DIR gets gpu_check_report.txt (markdown) (GPU, driver, validate matrix, sanitizer verdicts,
# benchmarks) and the full logs. Exit status: 0 when validate and every
# sanitizer pass, 1 otherwise, 2 when there is no GPU or the build fails.
set -uo pipefail

report_dir=${1:?usage: tools/gpu_check.sh REPORT_DIR [BUILD_DIR]}
build=${2:-build-gpu}
cd "$(dirname "$0")/.."
mkdir -p "$report_dir"
report_dir=$(cd "$report_dir" && pwd)
report=$report_dir/gpu_check_report.txt
cuda_bin=/usr/local/cuda/bin
export PATH=$cuda_bin:$PATH

say() { echo "gpu_check: $*" >&2; }

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  say "no NVIDIA GPU visible (nvidia-smi -L fails); nothing to check here"
  echo "# gpu_check: no GPU visible on $(hostname)" > "$report"
  exit 2
fi
gpu=$(nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader | head -1)
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '. ')
say "GPU: $gpu (building for sm_$cc)"

# --- build for this GPU ---
if [ -x tools/install_deps.sh ]; then tools/install_deps.sh > "$report_dir/install.log" 2>&1 || say "install_deps failed (see install.log); trying the build anyway"; fi
start=$(date +%s)
if ! { cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${cc}-real" &&
       cmake --build "$build" -j"$(nproc)" --target emutrain; } > "$report_dir/build.log" 2>&1; then
  say "build failed: $report_dir/build.log"
  { echo "# gpu_check: build failed"; echo; echo '```'; tail -40 "$report_dir/build.log"; echo '```'; } > "$report"
  exit 2
fi
build_s=$(( $(date +%s) - start ))
emutrain=$build/emutrain

# --- validate on the GPU ---
start=$(date +%s)
"$emutrain" validate --device cuda > "$report_dir/validate.log" 2>&1
validate_rc=$?
validate_s=$(( $(date +%s) - start ))
say "validate: exit $validate_rc in ${validate_s} s"

# --- compute-sanitizer over the harness' cases ---
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
declare -A verdict
status=0
[ "$validate_rc" -eq 0 ] || status=1
for tool in memcheck racecheck synccheck; do
  if [ ! -x "$sanitizer" ]; then
    verdict[$tool]="not run: compute-sanitizer not installed"
    status=1
    continue
  fi
  "$sanitizer" --tool "$tool" --error-exitcode 99 "$emutrain" validate --device cuda \
    > "$report_dir/sanitizer-$tool.log" 2>&1
  rc=$?
  summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$report_dir/sanitizer-$tool.log" | tail -1)
  if [ $rc -eq 0 ]; then verdict[$tool]="pass ${summary}"; else verdict[$tool]="FAIL (exit $rc) ${summary}"; status=1; fi
  say "$tool: ${verdict[$tool]}"
done

# --- GPU benchmarks (issue 16) ---
# Datasets in their canonical formats with random contents (throughput does not
# depend on the values): CIFAR-10 binary records and a Cora-sized graph
# (2708 papers, 1433 binary features at Cora's 1.27% density, 5429 citations).
data=$report_dir/synthetic
mkdir -p "$data/cifar/cifar-10-batches-bin" "$data/cora"
perl -e 'srand(1); for $f (@ARGV) { open(F, ">", $f) or die; binmode F;
  for (1..2000) { print F chr(int(rand(10))), pack("C*", map { int(rand(256)) } 1..3072) } close F }' \
  "$data"/cifar/cifar-10-batches-bin/{data_batch_1,data_batch_2,data_batch_3,data_batch_4,data_batch_5,test_batch}.bin
perl -e 'srand(2); open(C, ">", "$ARGV[0]/cora.content") or die; @l = qw(A B C D E F G);
  for $i (0..2707) { print C 1000 + $i; for (1..1433) { print C (rand() < 0.0127 ? "\t1" : "\t0") }
    print C "\t", $l[$i % 7], "\n" } close C; open(E, ">", "$ARGV[0]/cora.cites") or die;
  for (1..5429) { $a = int(rand(2708)); $b = int(rand(2708)); print E 1000 + $a, "\t", 1000 + $b, "\n" if $a != $b } close E' \
  "$data/cora"
bench() {  # title, command...
  local title=$1; shift
  say "bench: $title"
  local out
  out=$("$@" 2>&1 | tail -60)
  bench_lines+=("### $title" '```' "\$ $*" "$out" '```')
}
bench_lines=()
bench "gemm 4096^3, emulated vs cuBLAS (TF32 off)" "$emutrain" bench gemm --device cuda
bench "ResNet-18 CIFAR batch 128: samples/s per policy, per-op profile" \
  "$emutrain" bench train recipes/resnet18_cifar10.yaml --device cuda --steps 10 \
  --set data.root="$data/cifar" --set data.workers=4
bench "GCN on Cora-sized data: step time per policy, per-op profile" \
  "$emutrain" bench train recipes/gcn_cora.yaml --device cuda --steps 50 --set data.root="$data/cora"
start=$(date +%s.%N)
"$emutrain" train recipes/gcn_cora.yaml --set data.root="$data/cora" --set device=cuda \
  --set checkpoint.every_epochs=0 --out "$report_dir/gcn_run" > "$report_dir/gcn_train.log" 2>&1
gcn_rc=$?
gcn_s=$(echo "$(date +%s.%N) - $start" | bc)
bench_lines+=("### GCN on Cora-sized data, 200 epochs, device cuda (target: under 1 s)" \
  "exit $gcn_rc, ${gcn_s} s wall for the whole emutrain train (start-up, data loading, 200 epochs with evaluation)")
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  bench "PyTorch ResNet-18 CIFAR step, batch 128, TF32 off (same GPU)" python3 tools/pytorch_resnet18_step.py --batch 128
else
  bench_lines+=("### PyTorch baseline" "not measured: no PyTorch with CUDA on this machine")
fi

{
  echo "# gpu_check report"
  echo
  echo "- machine: $(hostname), $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "- GPU (name, driver, compute capability, memory): $gpu"
  echo "- commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "- build for sm_$cc: ${build_s} s"
  echo
  echo "## emutrain validate --device cuda (exit $validate_rc, ${validate_s} s)"
  echo '```'
  cat "$report_dir/validate.log"
  echo '```'
  echo
  echo "## compute-sanitizer over the validate cases"
  for tool in memcheck racecheck synccheck; do echo "- $tool: ${verdict[$tool]}"; done
  echo
  echo "## GPU benchmarks"
  printf '%s\n' "${bench_lines[@]}"
} > "$report"
say "report: $report"
exit $status
