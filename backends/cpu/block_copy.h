// Data movement for the GEMM's operand fills, in fixed-size vector moves:
// - copy_run: a short run of floats (rows of a B panel, runs of pixels in a
//   convolution's operands). std::copy_n of 4 to 64 floats compiles to a
//   memmove call, whose overhead was most of the time of such fills (a
//   64 x 32768 x 576 GEMM spent 38% of its time in memmove, on the 16-float
//   rows of its B panels).
// - transpose_8x8 (and transpose_8x8_rows, rows at any addresses): eight rows
//   of eight floats written as eight columns (A packed term by term from a
//   row-major matrix, a convolution's taps or channels packed pixel by pixel),
//   instead of one scalar store per element into a different cache line.
#pragma once

#include <cstdint>
#include <cstring>
#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "numerics/fast_round_lanes.h"

namespace emu::cpu_copy {

// count floats from src to out (not overlapping), 8 at a time (two overlapping vectors from 8 to 16).
inline void copy_run(const float* src, float* out, int64_t count) {
  v8f32 v;
  if (count >= 8 && count <= 16) {
    std::memcpy(&v, src, sizeof v);
    std::memcpy(out, &v, sizeof v);
    std::memcpy(&v, src + count - 8, sizeof v);
    std::memcpy(out + count - 8, &v, sizeof v);
    return;
  }
  int64_t c = 0;
  for (; c + 8 <= count; c += 8) {
    std::memcpy(&v, src + c, sizeof v);
    std::memcpy(out + c, &v, sizeof v);
  }
  for (; c < count; ++c) out[c] = src[c];
}

// out[c * ld_out + r] = rows[r][c] for r, c < 8: eight runs of eight floats, wherever each lies
// (a convolution's taps read its input planes at offsets of their own), written as eight columns.
// Rows r and r + 4 are loaded into the two 128-bit halves of one vector (a 128-bit insert from
// memory, which Intel cores run on any vector port), so that the 4 x 4 transposes within the halves
// finish the job: 16 shuffles, where the three shuffle stages over whole rows took 24, and Intel
// cores run 256-bit shuffles on one port only (port 5).
inline void transpose_8x8_rows(const float* const* rows, float* out, int64_t ld_out) {
  v8f32 lo[4], hi[4];  // lo[i]: columns 0-3 of rows i and i + 4; hi[i]: columns 4-7
  for (int i = 0; i < 4; ++i) {
#if defined(__AVX__)
    // Spelled as intrinsics: GCC turns the generic form below into 256-bit shuffles again.
    lo[i] = (v8f32)_mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(rows[i])),
                                        _mm_loadu_ps(rows[i + 4]), 1);
    hi[i] = (v8f32)_mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(rows[i] + 4)),
                                        _mm_loadu_ps(rows[i + 4] + 4), 1);
#else
    v4f32 a0, a1, b0, b1;
    std::memcpy(&a0, rows[i], sizeof a0);
    std::memcpy(&a1, rows[i] + 4, sizeof a1);
    std::memcpy(&b0, rows[i + 4], sizeof b0);
    std::memcpy(&b1, rows[i + 4] + 4, sizeof b1);
    lo[i] = __builtin_shufflevector(a0, b0, 0, 1, 2, 3, 4, 5, 6, 7);
    hi[i] = __builtin_shufflevector(a1, b1, 0, 1, 2, 3, 4, 5, 6, 7);
#endif
  }
  // The 4 x 4 transpose in each half: column c of rows 0-3 (low half) and of rows 4-7 (high half).
  auto columns = [&](const v8f32* v, int c0) {
    const v8f32 t0 = __builtin_shufflevector(v[0], v[1], 0, 8, 1, 9, 4, 12, 5, 13);
    const v8f32 t1 = __builtin_shufflevector(v[0], v[1], 2, 10, 3, 11, 6, 14, 7, 15);
    const v8f32 t2 = __builtin_shufflevector(v[2], v[3], 0, 8, 1, 9, 4, 12, 5, 13);
    const v8f32 t3 = __builtin_shufflevector(v[2], v[3], 2, 10, 3, 11, 6, 14, 7, 15);
    const v8f32 c[4] = {__builtin_shufflevector(t0, t2, 0, 1, 8, 9, 4, 5, 12, 13),
                        __builtin_shufflevector(t0, t2, 2, 3, 10, 11, 6, 7, 14, 15),
                        __builtin_shufflevector(t1, t3, 0, 1, 8, 9, 4, 5, 12, 13),
                        __builtin_shufflevector(t1, t3, 2, 3, 10, 11, 6, 7, 14, 15)};
    for (int k = 0; k < 4; ++k) std::memcpy(out + (c0 + k) * ld_out, &c[k], sizeof c[k]);
  };
  columns(lo, 0);
  columns(hi, 4);
}

// out[c * ld_out + r] = in[r * ld_in + c] for r, c < 8.
inline void transpose_8x8(const float* in, int64_t ld_in, float* out, int64_t ld_out) {
  const float* rows[8];
  for (int i = 0; i < 8; ++i) rows[i] = in + i * ld_in;
  transpose_8x8_rows(rows, out, ld_out);
}

}  // namespace emu::cpu_copy
