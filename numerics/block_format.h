// Block formats (bfp, OCP MX, nvfp4, AdaptivFloat): rounding a tensor into one,
// with its element codes and its metadata (shared exponents, scales, biases)
// kept as real data so that faults can hit either. The rules, and our choices
// where the sources are silent, are in docs/block_formats.md.
//
//   BlockEncoded e = encode_blocks(f, x, layout, seed, stream);   // codes + metadata
//   e.meta[3] ^= 1u << 2;                                          // a fault in a scale
//   decode_blocks(f, e, y);                                         // y: what the datapath sees
//   quantize_blocks(f, x, y, layout, seed, stream);                // = decode(encode(x)), one shot
//
// Blocks: the tensor is viewed through a ReadLayout (numerics/read_layout.h) as
// rows of `layout.len` elements; each row is cut into blocks of f.block.size
// consecutive elements (a last partial block is a shorter block). Block b of the
// whole tensor is block j of row r with b = r * blocks_per_row + j. AdaptivFloat
// (block size 0) has a single block: the whole tensor, whatever the layout.
//
// Per block (the same code on the CPU and in the CUDA kernels of
// backends/cuda/ops/blocks.cu: the per-block functions below are host+device):
//   amax = max |x_i| over the block.
//   Bfp, Mx, Afp: NaN or Inf anywhere -> scale code 0xFF (NaN): every element decodes to NaN;
//     amax = 0 -> s = -127 (code 0x00); else s = max(-127, floor(log2 amax) - emax_elem)
//     with emax_elem = floor(log2(element max finite)); scale X = 2^s, code s + 127 (E8M0).
//   Nvfp4: NaN or Inf anywhere -> scale code 0x7F (e4m3 NaN): the block decodes to NaN;
//     else scale S = R_e4m3(amax / 6) (exact quotient, round to nearest even, saturating at 448);
//     S = 0 (amax < 6 * 2^-10) -> every element code 0.
//   Elements: code of R_elem(x_i / X) (x_i / S exactly, then one rounding), saturating at the
//     element's max finite value (OCP MX v1.0 section 6.3); Fixed elements (mxint8, bfp) clamp
//     symmetrically at +-max. Element i (flat index) draws philox_draw(seed, stream, i) under
//     an :sr element rounding.
//   Decode: element value * scale, as a binary32 (exact for every format but afp with wide
//     exponents on tensors whose values fall below fp32's subnormals: then rounded to nearest).
#pragma once

#include <cstdint>
#include <vector>

#include "numerics/fast_round.h"
#include "numerics/format.h"
#include "numerics/philox.h"
#include "numerics/read_layout.h"
#include "numerics/round.h"

namespace emu {

// What the per-block functions need, built once on the host by block_params()
// (device-friendly: plain values, no pointers).
struct BlockParams {
  BlockKind kind = BlockKind::None;
  Format elem;             // the element format (saturating), with the spec's rounding
  Format scale_format;     // Nvfp4: e4m3 (rne, saturating); unused otherwise
  int emax_elem = 0;       // floor(log2(elem max finite))
  int64_t block_size = 0;  // elements per block along a row (Afp: the whole tensor)
  bool sign_magnitude = false;
  int elem_bits = 0;  // width of an element code
  int meta_bits = 8;  // width of a metadata code
  // Power-of-two scales with IEEE-like elements, not :sr: x / 2^s is a binary64
  // value and the bit-pattern kernel fast_ieee_d (numerics/fast_round.h, tested
  // against round_value in tests/test_gemm.cpp) rounds it.
  bool use_fast = false;
  FastIeeeD fast;
};

// Throws std::invalid_argument if f is not a block format.
BlockParams block_params(const Format& f);
// The element format of a block format, finalized (e.g. e4m3 fn :sat for mxfp8_e4m3).
Format block_element(const Format& f);

// A tensor in a block format: element codes and metadata codes.
struct BlockEncoded {
  ReadLayout layout;               // the layout it was encoded with (Afp: {1, numel, 1})
  int64_t block_size = 0;          // elements per block along a row
  int64_t blocks_per_row = 0;      // ceil(layout.len / block_size)
  int elem_bits = 0;               // element code width (low bits of each elements[] entry)
  int meta_bits = 8;               // metadata code width (low bits of each meta[] entry)
  std::vector<uint32_t> elements;  // one code per element, at the element's flat index
  std::vector<uint32_t> meta;      // one code per block: b = r * blocks_per_row + j
};

// The block (index into e.meta) that holds the element at flat index i.
inline int64_t block_index(const BlockEncoded& e, int64_t i) {
  const int64_t plane = e.layout.len * e.layout.inner;
  const int64_t o = i / plane, k = (i % plane) / e.layout.inner, in = i % e.layout.inner;
  return (o * e.layout.inner + in) * e.blocks_per_row + k / e.block_size;
}

// x: layout.numel() floats (row-major tensor viewed through layout).
BlockEncoded encode_blocks(const Format& f, const float* x, ReadLayout layout, uint64_t seed = 0,
                           uint64_t stream = 0);
// out: e.layout.numel() floats, at the same flat indices.
void decode_blocks(const Format& f, const BlockEncoded& e, float* out);
// out = decode(encode(x)) without the codes (quantize_one_block: the same
// roundings, no encode/decode step; out may be x); one thread (the CPU backend
// op quantize_blocks runs the per-block functions on threads).
void quantize_blocks(const Format& f, const float* x, float* out, ReadLayout layout, uint64_t seed = 0,
                     uint64_t stream = 0);

// The layout blocks are taken over: `layout` itself, or the whole tensor as one
// row for AdaptivFloat; and the number of blocks per row.
ReadLayout block_layout(const BlockParams& p, ReadLayout layout);
int64_t blocks_per_row(const BlockParams& p, const ReadLayout& block_layout);

// ---- per-block arithmetic (host+device) ----

EMU_HD int floor_log2_double(double a) {  // a > 0, a normal binary64 (every binary32 is one)
  return static_cast<int>((double_bits(a) >> 52) & 0x7ff) - 1023;
}

// Element code -> element value (not scaled).
EMU_HD double block_elem_decode(const BlockParams& p, uint32_t code) {
  if (p.sign_magnitude) {
    const int m = p.elem.nbits - 1;
    double mag = fixed_value(p.elem, static_cast<int64_t>(code & ((1u << m) - 1)));
    return (code >> m) & 1 ? -mag : mag;
  }
  return decode(p.elem, code);
}

// R_elem(v) for the exact, unscaled element value v, drawing `rand` under :sr:
// saturating, Fixed elements clamped symmetrically (-max, not -max - ulp).
EMU_HD double block_elem_round(const BlockParams& p, const Exact& v, uint32_t rand) {
  double q = round_exact(p.elem, v, rand);
  if (p.elem.family == Family::Fixed) {
    if (q < -p.elem.max_finite) q = -p.elem.max_finite;
    if (q == 0) q = 0.0;  // fixed point has one zero, +0
  }
  return q;
}

// The exact unscaled element value of x_i: x_i / scale (a power of two but for nvfp4).
EMU_HD Exact block_unscaled(const BlockParams& p, float x, double scale) {
  return p.kind == BlockKind::Nvfp4 ? exact_div(x, scale) : exact_from_double(x / scale);
}

// R_elem(x / scale): the fast kernel where it applies, else the exact path.
EMU_HD double block_elem_value(const BlockParams& p, float x, double scale, uint32_t rand) {
  if (p.use_fast) {
    const double v = static_cast<double>(x) / scale;  // exact: scale is a power of two
    switch (p.elem.rounding) {
      case Rounding::NearestEven:
        return fast_ieee_d<Rounding::NearestEven, double>(p.fast, v);
      case Rounding::TowardZero:
        return fast_ieee_d<Rounding::TowardZero, double>(p.fast, v);
      case Rounding::Up:
        return fast_ieee_d<Rounding::Up, double>(p.fast, v);
      case Rounding::Down:
        return fast_ieee_d<Rounding::Down, double>(p.fast, v);
      case Rounding::NearestAway:
        return fast_ieee_d<Rounding::NearestAway, double>(p.fast, v);
      case Rounding::Stochastic:
        break;
    }
  }
  return block_elem_round(p, block_unscaled(p, x, scale), rand);
}

// An element value (a result of block_elem_round) -> its code.
EMU_HD uint32_t block_elem_code(const BlockParams& p, double q) {
  uint64_t code = 0;
  if (p.sign_magnitude) {
    const int m = p.elem.nbits - 1;
    fixed_encode(p.elem, q < 0 ? -q : q, &code);
    return static_cast<uint32_t>((q < 0 ? 1u << m : 0u) | (code & ((1u << m) - 1)));
  }
  encode(p.elem, q, &code);
  return static_cast<uint32_t>(code);
}

// Metadata code -> the block's scale (NaN for a NaN code).
EMU_HD double block_scale_value(const BlockParams& p, uint32_t meta) {
  if (p.kind == BlockKind::Nvfp4) return decode(p.scale_format, meta & 0xff);
  meta &= 0xff;
  if (meta == 0xff) return quiet_nan();
  return pow2_scale(1, static_cast<int>(meta) - 127);
}

// The metadata of the block k0 .. k1-1 of row r: its code, the scale it stands
// for, and whether the block is NaN (a NaN or Inf in it).
struct BlockScale {
  uint32_t meta = 0;
  double scale = 0;
  bool nan = false;
};

EMU_HD BlockScale block_scale(const BlockParams& p, const float* x, const ReadLayout& l, int64_t r,
                              int64_t k0, int64_t k1) {
  double amax = 0;
  BlockScale b;
  for (int64_t k = k0; k < k1; ++k) {
    double a = x[l.index(r, k)];
    if (is_nan(a) || is_inf(a)) b.nan = true;
    a = a < 0 ? -a : a;
    if (a > amax) amax = a;
  }
  if (b.nan) {
    b.meta = p.kind == BlockKind::Nvfp4 ? 0x7fu : 0xffu;
    b.scale = quiet_nan();
    return b;
  }
  if (p.kind == BlockKind::Nvfp4) {
    b.scale = round_exact(p.scale_format, exact_div(amax, 6.0), 0);
    uint64_t c = 0;
    encode(p.scale_format, b.scale, &c);
    b.meta = static_cast<uint32_t>(c);
  } else {
    int s = amax == 0 ? -127 : floor_log2_double(amax) - p.emax_elem;
    if (s < -127) s = -127;
    b.meta = static_cast<uint32_t>(s + 127);
    b.scale = pow2_scale(1, s);
  }
  return b;
}

// Encodes the elements k0 .. k1-1 of row r: writes their codes at their flat
// indices in `codes` and returns the block's metadata code. A NaN block, and an
// nvfp4 block whose scale is 0, get element codes 0.
EMU_HD uint32_t encode_one_block(const BlockParams& p, const float* x, const ReadLayout& l, int64_t r,
                                 int64_t k0, int64_t k1, uint32_t* codes, uint64_t seed, uint64_t stream) {
  const BlockScale b = block_scale(p, x, l, r, k0, k1);
  const bool sr = p.elem.rounding == Rounding::Stochastic;
  for (int64_t k = k0; k < k1; ++k) {
    const int64_t i = l.index(r, k);
    if (b.nan || b.scale == 0) {
      codes[i] = 0;
      continue;
    }
    const uint32_t rand = sr ? philox_draw(seed, stream, static_cast<uint64_t>(i)) : 0;
    codes[i] = block_elem_code(p, block_elem_value(p, x[i], b.scale, rand));
  }
  return b.meta;
}

// decode(encode(x_i)) of the element at flat index i of a block whose metadata
// is b: the quantize path's per-element step (a kernel may run it one thread
// per element once the block's metadata is known).
EMU_HD float quantize_block_element(const BlockParams& p, const BlockScale& b, float x, int64_t i,
                                    uint64_t seed, uint64_t stream) {
  // Code 0 times the scale: NaN, or +0 (nvfp4 zero scale). The NaN is written
  // as quiet_nan()'s binary32 bits rather than computed as NaN * 0, whose
  // payload a GPU's multiply would not keep.
  if (b.nan) return bits_float(0x7fc00000u);
  if (b.scale == 0) return 0.0f;
  const uint32_t rand =
      p.elem.rounding == Rounding::Stochastic ? philox_draw(seed, stream, static_cast<uint64_t>(i)) : 0;
  return static_cast<float>(block_elem_value(p, x, b.scale, rand) * b.scale);
}

// decode(encode(block)) without the codes: the quantize path. out may be x.
EMU_HD void quantize_one_block(const BlockParams& p, const float* x, const ReadLayout& l, int64_t r,
                               int64_t k0, int64_t k1, float* out, uint64_t seed, uint64_t stream) {
  const BlockScale b = block_scale(p, x, l, r, k0, k1);
  for (int64_t k = k0; k < k1; ++k) {
    const int64_t i = l.index(r, k);
    out[i] = quantize_block_element(p, b, x[i], i, seed, stream);
  }
}

// Decodes the elements k0 .. k1-1 of row r from their codes and the block's metadata.
EMU_HD void decode_one_block(const BlockParams& p, uint32_t meta, const uint32_t* codes, const ReadLayout& l,
                             int64_t r, int64_t k0, int64_t k1, float* out) {
  const double scale = block_scale_value(p, meta);
  for (int64_t k = k0; k < k1; ++k) {
    const int64_t i = l.index(r, k);
    out[i] = static_cast<float>(block_elem_decode(p, codes[i]) * scale);
  }
}

}  // namespace emu
