#!/usr/bin/env bash
# The build's slowest steps from ninja's log (issue 31's report): the top N
# steps by wall time, and the totals by kind (nvcc, C++ objects, links).
#   tools/ninja_top.sh BUILD_DIR [N]
# Times are wall seconds of each step as ninja measured them; on the 2-core
# build machine with -j2 and nothing else running they are CPU seconds.
set -euo pipefail
log=${1:?usage: tools/ninja_top.sh BUILD_DIR [N]}/.ninja_log
n=${2:-20}
[ -f "$log" ] || { echo "ninja_top: no $log" >&2; exit 1; }
# The log appends a line per (re)build of an output; keep each output's last one.
awk 'NR > 1 { t[$4] = ($2 - $1) / 1000 } END { for (o in t) printf "%8.1f  %s\n", t[o], o }' "$log" |
  sort -rn > "${TMPDIR:-/tmp}/ninja_top.$$"
echo "| seconds | step |"
echo "|---:|---|"
head -n "$n" "${TMPDIR:-/tmp}/ninja_top.$$" | awk '{ printf "| %s | `%s` |\n", $1, $2 }'
awk '{ s += $1; if ($2 ~ /\.cu\.o$/) cu += $1; else if ($2 ~ /\.o$/) cc += $1; else other += $1 }
     END { printf "\nsteps: %d; seconds: %.0f in all, %.0f nvcc, %.0f host C++ objects, %.0f links and other\n", NR, s, cu, cc, other }' \
  "${TMPDIR:-/tmp}/ninja_top.$$"
rm -f "${TMPDIR:-/tmp}/ninja_top.$$"
