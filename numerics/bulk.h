// Whole arrays at once: quantize, decode and encode n values, threaded.
//
//   quantize_array(f, in, out, n, opt)   out[i] = quantize(f, in[i], draw(i))
//   decode_array(f, codes, out, n, opt)  out[i] = decode(f, codes[i])
//   encode_array(f, in, codes, n, opt)   codes[i] = encode(f, in[i]); returns how many had no code
//
// The results are bit-identical to the scalar functions of numerics/round.h for
// every storage format, rounding mode and thread count (tests/test_bulk.cpp).
// IEEE-like formats go through the branch-free bit kernel of numerics/bulk_ieee.h,
// posits and fixed point through the scalar functions; see docs/performance.md.
#pragma once

#include <cstddef>
#include <cstdint>

#include "numerics/format.h"

namespace emu {

// The fewest elements of the IEEE bit kernel worth a thread of their own:
// about 0.4 ms of work, well above the cost of waking a pool thread and its
// core (docs/performance.md).
constexpr size_t kBulkMinPerThread = size_t{1} << 20;

struct BulkOptions {
  // Threads of the CPU thread pool (numerics/parallel_for.h), each taking one
  // contiguous chunk: at most `threads` (0 = std::thread::hardware_concurrency()),
  // and no more than give every thread `min_per_thread` elements, so that a
  // thread's work outweighs waking it. min_per_thread = 0 picks the path's
  // default: kBulkMinPerThread for the IEEE bit kernel, kGrainElements (16Ki)
  // for loops over the scalar functions. Tests and benchmarks set
  // min_per_thread = 1 to get exactly `threads` chunks.
  unsigned threads = 0;
  size_t min_per_thread = 0;
  // Stochastic rounding (:sr) only: element i draws
  // philox_draw(seed, stream, first_index + i) (numerics/philox.h), so the bits
  // do not depend on the thread count or on how a caller splits an array.
  uint64_t seed = 0;
  uint64_t stream = 0;
  uint64_t first_index = 0;
};

// in, out: (n) -> (n). R_f of every element; in == out (in place) is allowed,
// other overlaps are not. Throws FormatError for accumulator-only formats.
void quantize_array(const Format& f, const float* in, float* out, size_t n, const BulkOptions& opt = {});

// codes: (n) -> out: (n). Bits of a code above f.nbits are ignored, as decode()
// does. Throws std::invalid_argument if f's codes are wider than the code type,
// FormatError for accumulator-only formats.
void decode_array(const Format& f, const uint8_t* codes, float* out, size_t n, const BulkOptions& opt = {});
void decode_array(const Format& f, const uint16_t* codes, float* out, size_t n, const BulkOptions& opt = {});
void decode_array(const Format& f, const uint32_t* codes, float* out, size_t n, const BulkOptions& opt = {});

// in: (n) -> codes: (n). Returns the number of values without a code (not a
// value of f, or NaN in a format without a NaN code); their code is set to 0.
// Same throws as decode_array.
size_t encode_array(const Format& f, const float* in, uint8_t* codes, size_t n, const BulkOptions& opt = {});
size_t encode_array(const Format& f, const float* in, uint16_t* codes, size_t n, const BulkOptions& opt = {});
size_t encode_array(const Format& f, const float* in, uint32_t* codes, size_t n, const BulkOptions& opt = {});

// Which quantize kernel f gets: "ieee-bits" (numerics/bulk_ieee.h) or "scalar",
// and how many threads quantize_array(f, ..., n, opt) runs.
const char* quantize_array_kernel(const Format& f);
unsigned quantize_array_threads(const Format& f, size_t n, const BulkOptions& opt);

// The thread count for n elements under opt, with default_min_per_thread
// standing in for opt.min_per_thread = 0.
unsigned bulk_thread_count(size_t n, const BulkOptions& opt,
                           size_t default_min_per_thread = kBulkMinPerThread);

}  // namespace emu
