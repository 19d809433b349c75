// Threaded array loops around the scalar numerics and the IEEE bit kernel.
//
// Each thread takes one contiguous chunk; stochastic draws are keyed by the
// global element index, never by thread, so the bits are independent of the
// split. Loops that must vectorise (the IEEE kernel, the Philox blocks) are
// plain counted loops over local copies of their constants; see
// docs/performance.md for how to check the compiler's vectorisation report.
#include "numerics/bulk.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "numerics/bulk_ieee.h"
#include "numerics/format_spec.h"
#include "numerics/parallel_for.h"
#include "numerics/philox.h"
#include "numerics/round.h"

namespace emu {
namespace {

// Elements per tile of stochastic rounding: the draws of one tile stay in L1.
constexpr size_t kTile = 2048;

// Loops over the scalar functions cost 10-50 ns per element, so they take a
// thread for far fewer elements than the bit kernel (BulkOptions::min_per_thread):
// the element-wise grain of the CPU thread pool.
constexpr size_t kScalarMinPerThread = static_cast<size_t>(kGrainElements);

// Runs body(chunk, lo, hi) over [0, n) split into at most `threads` contiguous
// non-empty chunks (chunk = 0, 1, ...) on the CPU thread pool
// (numerics/parallel_for.h), the first in the calling thread. Chunk starts are
// multiples of 16 elements (one cache line of floats) when chunks are large.
template <class Body>
void run_chunks(size_t n, unsigned threads, const Body& body) {
  if (threads <= 1 || n <= 1) {
    body(0u, size_t{0}, n);
    return;
  }
  size_t per = (n + threads - 1) / threads;
  if (per >= 1024) per = (per + 15) / 16 * 16;
  const size_t chunks = (n + per - 1) / per;  // <= threads; rounding `per` up can leave the last ones empty
  parallel_parts(static_cast<int>(chunks), [&](int chunk) {
    const size_t lo = per * static_cast<size_t>(chunk);
    body(static_cast<unsigned>(chunk), lo, std::min(n, lo + per));
  });
}

// Room for the draws of one tile: whole Philox blocks around it.
struct DrawTile {
  uint32_t words[kTile + 8];
};

// Returns draws with draws[j] = philox_draw(seed, stream, first + j) for
// j < count <= kTile, computed one Philox block per four consecutive indices
// instead of one block per index.
const uint32_t* fill_draws(uint64_t seed, uint64_t stream, uint64_t first, size_t count, DrawTile& tile) {
  if (first > UINT64_MAX - count) {  // the index wraps around 2^64 inside this tile
    for (size_t j = 0; j < count; ++j) tile.words[j] = philox_draw(seed, stream, first + j);
    return tile.words;
  }
  const Philox4x32Key key = philox_key(seed);
  const uint64_t block0 = first >> 2;
  const size_t skip = static_cast<size_t>(first & 3);
  const size_t blocks = (skip + count + 3) / 4;
  uint32_t* words = tile.words;
  for (size_t b = 0; b < blocks; ++b) {
    Philox4x32Counter out = philox4x32_10(philox_counter(stream, block0 + b), key);
    words[4 * b + 0] = out.v[0];
    words[4 * b + 1] = out.v[1];
    words[4 * b + 2] = out.v[2];
    words[4 * b + 3] = out.v[3];
  }
  return words + skip;
}

// in, out: (n); rand: (n) draws, read by Stochastic only.
template <Rounding Mode>
void ieee_loop(const IeeeBulkParams& params, const float* in, float* out, size_t n, const uint32_t* rand) {
  const IeeeBulkParams p = params;  // a local copy: provably not aliased by out
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = Mode == Rounding::Stochastic ? rand[i] : 0u;
    out[i] = bits_float(ieee_quantize_bits<Mode>(p, float_bits(in[i]), r));
  }
}

template <Rounding Mode>
void ieee_chunk(const IeeeBulkParams& p, const float* in, float* out, size_t lo, size_t hi,
                const BulkOptions& opt) {
  if constexpr (Mode != Rounding::Stochastic) {
    (void)opt;
    ieee_loop<Mode>(p, in + lo, out + lo, hi - lo, nullptr);
  } else {
    DrawTile tile;
    for (size_t t = lo; t < hi; t += kTile) {
      size_t len = std::min(kTile, hi - t);
      ieee_loop<Mode>(p, in + t, out + t, len,
                      fill_draws(opt.seed, opt.stream, opt.first_index + t, len, tile));
    }
  }
}

void scalar_chunk(const Format& f, const float* in, float* out, size_t lo, size_t hi,
                  const BulkOptions& opt) {
  const Format fl = f;
  if (!is_stochastic(fl)) {
    for (size_t i = lo; i < hi; ++i) out[i] = quantize(fl, in[i], 0);
    return;
  }
  DrawTile tile;
  for (size_t t = lo; t < hi; t += kTile) {
    size_t len = std::min(kTile, hi - t);
    const uint32_t* draws = fill_draws(opt.seed, opt.stream, opt.first_index + t, len, tile);
    for (size_t j = 0; j < len; ++j) out[t + j] = quantize(fl, in[t + j], draws[j]);
  }
}

template <Rounding Mode>
void ieee_run(const Format& f, const float* in, float* out, size_t n, const BulkOptions& opt) {
  const IeeeBulkParams p = ieee_bulk_params(f);
  run_chunks(n, quantize_array_threads(f, n, opt),
             [&](unsigned, size_t lo, size_t hi) { ieee_chunk<Mode>(p, in, out, lo, hi, opt); });
}

template <class Code>
void check_code_width(const Format& f, const char* what) {
  require_storage(f, what);
  if (f.nbits > static_cast<int>(8 * sizeof(Code)))
    throw std::invalid_argument(std::string(what) + ": format '" + format_name(f) + "' has " +
                                std::to_string(f.nbits) + "-bit codes, wider than the " +
                                std::to_string(8 * sizeof(Code)) + "-bit code array");
}

template <class Code>
void decode_impl(const Format& f, const Code* codes, float* out, size_t n, const BulkOptions& opt) {
  check_code_width<Code>(f, "decode_array");
  const Format fl = f;
  // Formats of up to 16 bits: decode every code once, then look up.
  if (fl.nbits <= 16 && (size_t{1} << fl.nbits) <= n) {
    const uint32_t mask = (1u << fl.nbits) - 1;
    std::vector<float> table(size_t{1} << fl.nbits);
    for (size_t c = 0; c < table.size(); ++c) table[c] = static_cast<float>(decode(fl, c));
    const float* lut = table.data();
    run_chunks(n, bulk_thread_count(n, opt), [&](unsigned, size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) out[i] = lut[codes[i] & mask];
    });
    return;
  }
  run_chunks(n, bulk_thread_count(n, opt, kScalarMinPerThread), [&](unsigned, size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) out[i] = static_cast<float>(decode(fl, codes[i]));
  });
}

template <class Code>
size_t encode_impl(const Format& f, const float* in, Code* codes, size_t n, const BulkOptions& opt) {
  check_code_width<Code>(f, "encode_array");
  const Format fl = f;
  const unsigned threads = bulk_thread_count(n, opt, kScalarMinPerThread);
  std::vector<size_t> missing(std::max(threads, 1u), 0);
  run_chunks(n, threads, [&](unsigned chunk, size_t lo, size_t hi) {
    size_t count = 0;
    for (size_t i = lo; i < hi; ++i) {
      uint64_t code = 0;
      if (encode(fl, static_cast<double>(in[i]), &code)) {
        codes[i] = static_cast<Code>(code);
      } else {
        codes[i] = 0;
        ++count;
      }
    }
    missing[chunk] = count;
  });
  size_t total = 0;
  for (size_t m : missing) total += m;
  return total;
}

}  // namespace

unsigned bulk_thread_count(size_t n, const BulkOptions& opt, size_t default_min_per_thread) {
  const size_t most = opt.threads != 0 ? opt.threads : static_cast<size_t>(resolve_threads(0));
  const size_t min_per_thread =
      std::max<size_t>(1, opt.min_per_thread != 0 ? opt.min_per_thread : default_min_per_thread);
  return static_cast<unsigned>(std::max<size_t>(1, std::min(most, n / min_per_thread)));
}

const char* quantize_array_kernel(const Format& f) { return ieee_bulk_supported(f) ? "ieee-bits" : "scalar"; }

unsigned quantize_array_threads(const Format& f, size_t n, const BulkOptions& opt) {
  return bulk_thread_count(n, opt, ieee_bulk_supported(f) ? kBulkMinPerThread : kScalarMinPerThread);
}

void quantize_array(const Format& f, const float* in, float* out, size_t n, const BulkOptions& opt) {
  require_storage(f, "quantize_array");
  if (n == 0) return;
  if (!ieee_bulk_supported(f)) {
    run_chunks(n, quantize_array_threads(f, n, opt),
               [&](unsigned, size_t lo, size_t hi) { scalar_chunk(f, in, out, lo, hi, opt); });
    return;
  }
  switch (f.rounding) {
    case Rounding::NearestEven:
      return ieee_run<Rounding::NearestEven>(f, in, out, n, opt);
    case Rounding::TowardZero:
      return ieee_run<Rounding::TowardZero>(f, in, out, n, opt);
    case Rounding::Up:
      return ieee_run<Rounding::Up>(f, in, out, n, opt);
    case Rounding::Down:
      return ieee_run<Rounding::Down>(f, in, out, n, opt);
    case Rounding::NearestAway:
      return ieee_run<Rounding::NearestAway>(f, in, out, n, opt);
    case Rounding::Stochastic:
      return ieee_run<Rounding::Stochastic>(f, in, out, n, opt);
  }
}

void decode_array(const Format& f, const uint8_t* codes, float* out, size_t n, const BulkOptions& opt) {
  decode_impl(f, codes, out, n, opt);
}
void decode_array(const Format& f, const uint16_t* codes, float* out, size_t n, const BulkOptions& opt) {
  decode_impl(f, codes, out, n, opt);
}
void decode_array(const Format& f, const uint32_t* codes, float* out, size_t n, const BulkOptions& opt) {
  decode_impl(f, codes, out, n, opt);
}

size_t encode_array(const Format& f, const float* in, uint8_t* codes, size_t n, const BulkOptions& opt) {
  return encode_impl(f, in, codes, n, opt);
}
size_t encode_array(const Format& f, const float* in, uint16_t* codes, size_t n, const BulkOptions& opt) {
  return encode_impl(f, in, codes, n, opt);
}
size_t encode_array(const Format& f, const float* in, uint32_t* codes, size_t n, const BulkOptions& opt) {
  return encode_impl(f, in, codes, n, opt);
}

}  // namespace emu
