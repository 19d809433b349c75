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
inline void transpose_8x8_rows(const float* const* rows, float* out, int64_t ld_out) {
  v8f32 r[8], t[8], u[8];
  for (int i = 0; i < 8; ++i) std::memcpy(&r[i], rows[i], sizeof r[i]);
  for (int i = 0; i < 8; i += 2) {  // interleave row pairs: (a_i0 a_j0 a_i1 a_j1 | a_i4 a_j4 a_i5 a_j5), ...
    t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (int i = 0; i < 8; i += 4) {  // columns of four rows, in the two 128-bit halves
    u[i] = __builtin_shufflevector(t[i], t[i + 2], 0, 1, 8, 9, 4, 5, 12, 13);
    u[i + 1] = __builtin_shufflevector(t[i], t[i + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    u[i + 2] = __builtin_shufflevector(t[i + 1], t[i + 3], 0, 1, 8, 9, 4, 5, 12, 13);
    u[i + 3] = __builtin_shufflevector(t[i + 1], t[i + 3], 2, 3, 10, 11, 6, 7, 14, 15);
  }
  for (int c = 0; c < 4; ++c) {  // rows 0-3 from u[c], rows 4-7 from u[c + 4]
    const v8f32 lo = __builtin_shufflevector(u[c], u[c + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    const v8f32 hi = __builtin_shufflevector(u[c], u[c + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    std::memcpy(out + c * ld_out, &lo, sizeof lo);
    std::memcpy(out + (c + 4) * ld_out, &hi, sizeof hi);
  }
}

// out[c * ld_out + r] = in[r * ld_in + c] for r, c < 8.
inline void transpose_8x8(const float* in, int64_t ld_in, float* out, int64_t ld_out) {
  const float* rows[8];
  for (int i = 0; i < 8; ++i) rows[i] = in + i * ld_in;
  transpose_8x8_rows(rows, out, ld_out);
}

}  // namespace emu::cpu_copy
