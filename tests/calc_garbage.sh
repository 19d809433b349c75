#!/bin/sh
# The real `emutrain calc --batch` on input no line parser should choke on:
# NUL bytes, CR, bytes >= 0x80, empty lines, multi-megabyte lines, huge
# exponents, and a last line without '\n'. Checks one answer line per input
# line, every answer "0x..." or "error: ...", printable ASCII only, exit 1.
#
#   usage: calc_garbage.sh EMUTRAIN_BINARY
set -u
bin=$1
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

{
  printf 'mul fp8_e4m3 0.1 0.3\r\n'
  printf '\000\000\000\n'
  printf '\n'
  printf '\r\n'
  printf 'add fp16 1e99999999999999999999 -1e-99999999\n'
  printf '\377\376\375 \001\002\n'
  printf 'dot exact int32 fp32 chunk=2 1 2 3\n'
  head -c 3000000 /dev/zero | tr '\000' '9'
  printf '\n'
  printf 'quantize fp16 '
  head -c 2000000 /dev/zero | tr '\000' '7'
  printf '\n'
  # Deterministic random bytes, never '\n' (so the line count stays known).
  awk 'BEGIN { srand(7); for (i = 0; i < 5000; i++) { n = int(rand() * 60);
        for (j = 0; j < n; j++) { c = int(rand() * 255) + 1; if (c == 10) c = 13; printf "%c", c }
        printf "\n" } }'
  printf 'quantize fp16 1'
} > "$tmp/in"

lines_in=$(( $(wc -l < "$tmp/in") + 1 ))
"$bin" calc --batch < "$tmp/in" > "$tmp/out"
rc=$?
lines_out=$(wc -l < "$tmp/out")
bad_shape=$(LC_ALL=C grep -c -v -E '^(0x[0-9a-f]+|error: .+)$' "$tmp/out")
unprintable=$(LC_ALL=C grep -c '[^ -~]' "$tmp/out")
first=$(head -n 1 "$tmp/out")
last=$(tail -n 1 "$tmp/out")

status=0
[ "$rc" -eq 1 ] || { echo "FAIL: exit code $rc, expected 1"; status=1; }
[ "$lines_out" -eq "$lines_in" ] || { echo "FAIL: $lines_out answer lines for $lines_in input lines"; status=1; }
[ "$bad_shape" -eq 0 ] || { echo "FAIL: $bad_shape answers are neither 0x... nor error: ..."; status=1; }
[ "$unprintable" -eq 0 ] || { echo "FAIL: $unprintable answers hold bytes outside printable ASCII"; status=1; }
[ "$first" = "0x3d000000" ] || { echo "FAIL: first answer '$first', expected 0x3d000000"; status=1; }
[ "$last" = "0x3f800000" ] || { echo "FAIL: last answer '$last', expected 0x3f800000"; status=1; }
[ "$status" -eq 0 ] && echo "PASS: $lines_in lines, $lines_out answers"
exit $status
