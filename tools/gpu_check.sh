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

# --- GPU benchmarks: every `emutrain bench` target that takes --device cuda ---
bench_lines=()
for b in $("$emutrain" bench --help 2>/dev/null | awk '/^Subcommands:/ {on = 1; next} on && NF {print $1}'); do
  if "$emutrain" bench "$b" --help 2>/dev/null | grep -q -- "--device"; then
    out=$("$emutrain" bench "$b" --device cuda 2>&1 | tail -15)
    bench_lines+=("### bench $b" '```' "$out" '```')
  fi
done
[ ${#bench_lines[@]} -gt 0 ] || bench_lines=("No benchmark takes --device cuda yet: the kernels of issue 15 are proven equal, not tuned.")

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
