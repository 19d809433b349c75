#!/usr/bin/env bash
# Fails when a source or documentation file cites a document outside the
# repository (NUMERICS.md, TOOLCHAIN.md, ../shared/...) or a section that the
# cited document does not have ("docs/contract.md section 12"). The rules are
# in citations.awk; tests/contract.cmake runs this on the tree.
#
#   check_citations.sh [ROOT]    ROOT: the repository root (default: .)
#
# Files: in a git checkout, the tracked and the untracked-but-not-ignored ones
# (git ls-files), else every file; build*/ folders are skipped. Checked:
# *.h *.cpp *.cu *.cuh *.c *.cmake CMakeLists.txt *.sh *.py *.yaml *.yml *.md,
# except this folder (its self-test writes bad citations on purpose).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "${1:-.}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if git rev-parse --show-toplevel >/dev/null 2>&1 && [ "$(git rev-parse --show-toplevel)" = "$(pwd -P)" ]; then
  git ls-files --cached --others --exclude-standard >"$work/listed"
else
  find . \( -path ./.git -o -path './build*' \) -prune -o -type f -print | sed 's|^\./||' >"$work/listed"
fi

# Files git still lists but another change deleted are not there to cite.
while IFS= read -r path; do
  if [ -f "$path" ]; then printf '%s\n' "$path"; fi
done <"$work/listed" | { grep -v '^build[^/]*/' || true; } >"$work/existing"

{ grep -E '(\.(h|cpp|cu|cuh|c|cmake|sh|py|yaml|yml|md)|(^|/)CMakeLists\.txt)$' "$work/existing" || true; } |
  { grep -v '^tests/contract/' || true; } >"$work/scan"

echo "checking $(wc -l <"$work/scan") files of $(pwd -P)"
awk -v existing="$work/existing" -v scan="$work/scan" -f "$here/citations.awk"
