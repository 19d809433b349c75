#!/usr/bin/env bash
# Formats the repository's C++ and CUDA sources with its .clang-format
# (clang-format 14, Debian's clang-format package), or with --check only
# lists the files that do not follow it and exits 1 (the ctest clang_format).
#   tools/format.sh [--check] [FILE...]    (default: every tracked source file)
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
[ "${1:-}" = --check ] && { check=1; shift; }
command -v clang-format >/dev/null || { echo "format: clang-format is not installed (tools/install_deps.sh)" >&2; exit 2; }
if [ $# -gt 0 ]; then files=("$@"); else
  mapfile -t files < <(git ls-files '*.h' '*.hpp' '*.cpp' '*.cc' '*.cu' '*.cuh')
fi
[ ${#files[@]} -gt 0 ] || exit 0
if [ $check -eq 0 ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
# One clang-format process for all files; it names each offending file in "FILE:LINE:COL: error:".
mapfile -t bad < <(clang-format --dry-run --Werror "${files[@]}" 2>&1 | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error:.*/\1/p' | sort -u)
if [ ${#bad[@]} -gt 0 ]; then
  echo "format: ${#bad[@]} of ${#files[@]} files do not follow .clang-format ($(clang-format --version | head -1)):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  echo "format: run tools/format.sh (or tools/format.sh FILE...) and commit the result" >&2
  exit 1
fi
echo "format: all ${#files[@]} source files follow .clang-format"
