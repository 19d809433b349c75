#!/usr/bin/env bash
# ctest gpu_bundle: tools/gpu_bundle.sh packs the test build's binary; the
# archive, copied to a fresh folder and unpacked there, is self-contained:
#   - every library `ldd` lists for bin/emutrain resolves inside the bundle or
#     to the allowlist (glibc and its loader, libstdc++, libgcc_s, the NVIDIA
#     driver), with a scrubbed environment (env -i: no LD_LIBRARY_PATH);
#   - the copied binary runs `info` and a small `validate --device cuda-host`
#     selection under env -i.
# The archive stays at OUT/emutrain-gpu.tar.xz for the gpu_check_quick test.
#   tests/gpu_kit/check_bundle.sh SOURCE_DIR BUILD_DIR OUT
set -euo pipefail
src=$1 build=$2 out=$3
fail() { echo "gpu_bundle test: FAIL: $*" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out"
# --allow-jit: the test build is PTX only by default (no GPU here); what is
# checked is the packing, the same for either.
# xz -1: 4 s instead of 26 s for an archive of 16 MiB instead of 11 (the real
# bundle keeps xz -6).
EMUTRAIN_BUNDLE_XZ_LEVEL=1 "$src/tools/gpu_bundle.sh" --allow-jit "$build" "$out" | tee "$out/bundle.txt"
archive=$out/emutrain-gpu.tar.xz
[ -f "$archive" ] || fail "no archive"
size=$(stat -c %s "$archive")
[ "$size" -le $((48 * 1024 * 1024)) ] || fail "archive of $size bytes exceeds 48 MiB"

fresh=$(mktemp -d "${TMPDIR:-/tmp}/emutrain-bundle-test.XXXXXX")
trap 'rm -rf "$fresh"' EXIT
cp "$archive" "$fresh/"
tar -C "$fresh" -xJf "$fresh/emutrain-gpu.tar.xz"
root=$fresh/emutrain-gpu
exe=$root/bin/emutrain
[ -x "$exe" ] || fail "the archive holds no bin/emutrain"

allowed_re='^(linux-vdso\.so|libc\.so|libm\.so|libpthread\.so|libdl\.so|librt\.so|ld-linux[-a-z0-9_]*\.so|libstdc\+\+\.so|libgcc_s\.so|libcuda\.so|libnvidia-)'
bad=0 inside=0
while read -r line; do
  name=$(basename "${line%% *}")
  case "$line" in
    *"not found"*) echo "  unresolved: $line" >&2; bad=1; continue ;;
    *" => "*) path=${line#*=> }; path=$(readlink -f "${path%% (*}") ;;
    *) continue ;;
  esac
  if [[ $path == "$(readlink -f "$root")/lib/"* ]]; then
    inside=$((inside + 1))
  elif [[ $name =~ $allowed_re ]]; then
    :
  else
    echo "  outside the bundle and not allowed: $line" >&2; bad=1
  fi
done < <(env -i /usr/bin/ldd "$exe")
[ $bad -eq 0 ] || fail "ldd: libraries resolve outside the bundle (above)"
[ $inside -gt 0 ] || fail "ldd: no library resolved inside the bundle (is the RPATH set?)"
echo "ldd: every library of bin/emutrain resolves inside the bundle ($inside) or to the allowlist"

env -i "$exe" info > "$fresh/info.txt" 2>&1 || { cat "$fresh/info.txt"; fail "env -i emutrain info"; }
grep -q "^devices" "$fresh/info.txt" || fail "info printed no devices section"
env -i "$exe" validate --device cuda-host --op gemm,softmax_forward --policy fp32,e6m6 > "$fresh/validate.txt" 2>&1 ||
  { cat "$fresh/validate.txt"; fail "env -i emutrain validate --device cuda-host"; }
grep -E "cells: [0-9]+ pass, 0 FAIL" "$fresh/validate.txt" || { cat "$fresh/validate.txt"; fail "validate summary"; }
echo "gpu_bundle test: pass"
