#include "numerics/block_format.h"

#include <fmt/format.h>

#include <stdexcept>

#include "numerics/format_spec.h"

namespace emu {

Format block_element(const Format& f) {
  if (!is_block(f)) throw std::invalid_argument(fmt::format("'{}' is not a block format", format_name(f)));
  const BlockSpec& b = f.block;
  Format e;
  e.family = b.elem_family;
  e.rounding = b.elem_rounding;
  e.specials = b.elem_specials;
  e.subnormals = b.elem_subnormals;
  e.saturate =
      true;  // elements saturate (OCP MX v1.0 section 6.3); the shared scale leaves no other overflow
  if (b.elem_family == Family::Ieee) {
    e.exp_bits = b.elem_exp_bits;
    e.man_bits = b.elem_man_bits;
  } else {
    e.nbits = b.elem_nbits;
    e.frac_bits = b.elem_frac_bits;
  }
  finalize_format(e);
  return e;
}

BlockParams block_params(const Format& f) {
  BlockParams p;
  p.kind = f.block.kind;
  p.elem = block_element(f);
  p.emax_elem = floor_log2_double(p.elem.max_finite);
  p.block_size = f.block.size;
  p.sign_magnitude = f.block.elem_sign_magnitude;
  p.elem_bits = p.elem.nbits;
  if (p.kind == BlockKind::Nvfp4) {
    p.scale_format = parse_format("fp8_e4m3:sat");
  }
  p.use_fast = p.kind != BlockKind::Nvfp4 && fast_ieee_d_supported(p.elem);
  if (p.use_fast) p.fast = fast_ieee_d_params(p.elem);
  return p;
}

ReadLayout block_layout(const BlockParams& p, ReadLayout layout) {
  if (layout.len <= 0) throw std::invalid_argument("block formats: the read layout has no row length");
  if (p.block_size > 0) return layout;
  ReadLayout whole;
  whole.len = layout.numel();
  return whole;
}

int64_t blocks_per_row(const BlockParams& p, const ReadLayout& l) {
  const int64_t b = p.block_size > 0 ? p.block_size : l.len;
  return b > 0 ? (l.len + b - 1) / b : 0;
}

BlockEncoded encode_blocks(const Format& f, const float* x, ReadLayout layout, uint64_t seed,
                           uint64_t stream) {
  const BlockParams p = block_params(f);
  BlockEncoded e;
  e.layout = block_layout(p, layout);
  e.block_size = p.block_size > 0 ? p.block_size : e.layout.len;
  e.blocks_per_row = blocks_per_row(p, e.layout);
  e.elem_bits = p.elem_bits;
  e.meta_bits = p.meta_bits;
  e.elements.assign(static_cast<size_t>(e.layout.numel()), 0u);
  e.meta.assign(static_cast<size_t>(e.layout.rows() * e.blocks_per_row), 0u);
  for (int64_t r = 0; r < e.layout.rows(); ++r) {
    for (int64_t j = 0; j < e.blocks_per_row; ++j) {
      const int64_t k0 = j * e.block_size,
                    k1 = k0 + e.block_size < e.layout.len ? k0 + e.block_size : e.layout.len;
      e.meta[static_cast<size_t>(r * e.blocks_per_row + j)] =
          encode_one_block(p, x, e.layout, r, k0, k1, e.elements.data(), seed, stream);
    }
  }
  return e;
}

void decode_blocks(const Format& f, const BlockEncoded& e, float* out) {
  const BlockParams p = block_params(f);
  // An encoding is only decoded as the format and layout it claims: blocks of
  // another size, or a row count that leaves elements without a block, would
  // leave outputs unwritten (found by tests/fuzz/fuzz_block_decode.cpp).
  if (e.layout.outer < 0 || e.layout.len < 0 || e.layout.inner < 0)
    throw std::invalid_argument("decode_blocks: the layout has a negative size");
  const int64_t block_size = p.block_size > 0 ? p.block_size : e.layout.len;
  if (e.block_size != block_size || e.blocks_per_row != blocks_per_row(p, e.layout))
    throw std::invalid_argument(
        fmt::format("decode_blocks: blocks of {} elements, {} per row, do not match {} "
                    "(blocks of {}, {} per row of {})",
                    e.block_size, e.blocks_per_row, format_name(f), block_size, blocks_per_row(p, e.layout),
                    e.layout.len));
  if (static_cast<int64_t>(e.elements.size()) != e.layout.numel() ||
      static_cast<int64_t>(e.meta.size()) != e.layout.rows() * e.blocks_per_row)
    throw std::invalid_argument("decode_blocks: codes do not match the layout");
  for (int64_t r = 0; r < e.layout.rows(); ++r) {
    for (int64_t j = 0; j < e.blocks_per_row; ++j) {
      const int64_t k0 = j * e.block_size,
                    k1 = k0 + e.block_size < e.layout.len ? k0 + e.block_size : e.layout.len;
      decode_one_block(p, e.meta[static_cast<size_t>(r * e.blocks_per_row + j)], e.elements.data(), e.layout,
                       r, k0, k1, out);
    }
  }
}

void quantize_blocks(const Format& f, const float* x, float* out, ReadLayout layout, uint64_t seed,
                     uint64_t stream) {
  const BlockParams p = block_params(f);
  const ReadLayout l = block_layout(p, layout);
  const int64_t B = p.block_size > 0 ? p.block_size : l.len, per_row = blocks_per_row(p, l);
  for (int64_t r = 0; r < l.rows(); ++r)
    for (int64_t j = 0; j < per_row; ++j)
      quantize_one_block(p, x, l, r, j * B, j * B + B < l.len ? j * B + B : l.len, out, seed, stream);
}

}  // namespace emu
