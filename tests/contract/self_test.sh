#!/usr/bin/env bash
# Shows that check_citations.sh can fail: it must pass a small tree whose
# citations are all good, and report every bad citation planted in a copy of it
# (a section the cited document lacks, documents outside the repository, a
# broken link). Runs the tree both as a plain folder and as a git checkout.
set -euo pipefail

check="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/check_citations.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# The good tree: a contract with sections 1, 1.1 and 2, and files citing it.
make_good_tree() {
  mkdir -p "$1/docs" "$1/src" "$1/build/x"
  cat >"$1/docs/contract.md" <<'MD'
# Contract
## 1. Values
### 1.1 Carrier
As section 1.1 says; OCP MX v1.0 section 6.3 is a standard's section.
## 2. Formats
```sh
# 9. not a heading: inside a code fence
```
MD
  cat >"$1/docs/guide.md" <<'MD'
# Guide
See [contract.md](contract.md) section 1.1, [the formats](contract.md#2-formats),
[below](#guide), and [contract.md](contract.md)
section 2. Data lives in ../shared/data/cora. `[not](a-file)` is code.
MD
  cat >"$1/src/a.h" <<'H'
// Values travel in binary32 (docs/contract.md section 1.1), see docs/contract.md
// sections 1 and 2, docs/contract.md sections 1 to 2 and docs/guide.md "Guide".
// A wrapped one: (docs/contract.md
// section 2). https://example.org/OUTSIDE.md is a web page.
H
  printf '# A script writes $OUT/report.md and ${dir}/log.md at run time, not citations.\n' >"$1/src/run.sh"
  printf 'cites docs/contract.md section 7, but lives in an ignored build folder\n' >"$1/build/x/b.md"
}

# Expected "file:line" of each planted problem, one per line.
plant_bad_citations() {
  cat >>"$1/src/a.h" <<'H'
// docs/contract.md section 3 does not exist.
// Nor do docs/contract.md sections 1 to 3, nor docs/contract.md section 1.2.
// From elsewhere: NUMERICS.md section 4 and ../shared/notes/x.txt and TOOLCHAIN.md.
// Wrapped: (docs/contract.md
// section 9).
// A heading that is not there: docs/guide.md "Nowhere".
H
  cat >>"$1/docs/contract.md" <<'MD'
Bare references inside the contract: section 5.
MD
  cat >>"$1/docs/guide.md" <<'MD'
A [broken link](missing.md), [a missing image](img/none.png) and [a bad anchor](contract.md#3-arithmetic).
MD
  cat <<'EXPECTED'
src/a.h:5: cites docs/contract.md section 3, but docs/contract.md has no section 3
src/a.h:6: cites docs/contract.md section 3, but docs/contract.md has no section 3
src/a.h:6: cites docs/contract.md section 1.2, but docs/contract.md has no section 1.2
src/a.h:7: cites NUMERICS.md, which is not a file of the repository
src/a.h:7: cites ../shared/notes/x.txt, which is outside the repository
src/a.h:7: cites TOOLCHAIN.md, which is not a file of the repository
src/a.h:8: cites docs/contract.md section 9, but docs/contract.md has no section 9
src/a.h:10: cites heading "Nowhere" of docs/guide.md, which has no such heading
docs/contract.md:9: cites docs/contract.md section 5, but docs/contract.md has no section 5
docs/guide.md:5: cites missing.md, which is not a file of the repository
docs/guide.md:5: links to img/none.png, which does not exist
docs/guide.md:5: links to docs/contract.md#3-arithmetic, which is not a heading there
EXPECTED
}

run_case() {  # name, tree, git (yes/no)
  local name=$1 tree=$2
  if [ "$3" = yes ]; then
    git -C "$tree" init -q
    printf '/build*/\n' >"$tree/.gitignore"
  fi
  local rc=0
  bash "$check" "$tree" >"$work/$name.out" 2>&1 || rc=$?
  echo "$rc"
}

for git_mode in no yes; do
  if [ "$git_mode" = yes ] && ! command -v git >/dev/null; then
    echo "git not found: skipping the git-checkout cases"
    continue
  fi
  good="$work/good-$git_mode"
  bad="$work/bad-$git_mode"
  make_good_tree "$good"
  make_good_tree "$bad"
  plant_bad_citations "$bad" >"$work/expected-$git_mode"

  rc=$(run_case "good-$git_mode" "$good" "$git_mode")
  if [ "$rc" != 0 ]; then
    fail "good tree (git: $git_mode) exited $rc:"
    cat "$work/good-$git_mode.out"
  fi
  if grep -q ': cites \|: links ' "$work/good-$git_mode.out"; then
    fail "good tree (git: $git_mode) reported problems"
  fi

  rc=$(run_case "bad-$git_mode" "$bad" "$git_mode")
  if [ "$rc" != 1 ]; then fail "bad tree (git: $git_mode) exited $rc, want 1"; fi
  while IFS= read -r want; do
    if ! grep -qxF "$want" "$work/bad-$git_mode.out"; then fail "bad tree (git: $git_mode) did not report: $want"; fi
  done <"$work/expected-$git_mode"
  reported=$(grep -c ': cites \|: links ' "$work/bad-$git_mode.out" || true)
  expected=$(wc -l <"$work/expected-$git_mode")
  if [ "$reported" != "$expected" ]; then
    fail "bad tree (git: $git_mode) reported $reported problems, want $expected:"
    cat "$work/bad-$git_mode.out"
  fi
done

if [ "$failures" -gt 0 ]; then
  echo "$failures self-test failure(s)"
  exit 1
fi
echo "self-test passed: good trees pass, every planted bad citation is reported"
