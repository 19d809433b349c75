#!/usr/bin/env bash
# Installs the Debian packages emutrain builds, tests and benchmarks with.
# Uses sudo when not root; does nothing for packages already installed.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libfmt-dev libyaml-cpp-dev catch2 libstb-dev libcli11-dev zlib1g-dev
  libopenblas-dev libmpfr-dev libgmp-dev
  libopenmpi-dev openmpi-bin
  curl ca-certificates  # emutrain data fetch downloads with curl (or wget)
  python3               # the fetch tests serve files with Python's http.server
  python3-dev pybind11-dev                      # the Python module emutrain (python/, docs/python.md)
  python3-numpy python3-torch python3-pytest    # its tests and emutrain.torch (tests/python/)
  clang-14 libclang-rt-14-dev llvm-14  # sanitizer build and libFuzzer targets (tools/sanitize_check.sh)
  clang-format          # the layout check (ctest clang_format, tools/format.sh)
  patchelf xz-utils     # the GPU bundle (tools/gpu_bundle.sh, docs/gpu.md)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install_deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install_deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
