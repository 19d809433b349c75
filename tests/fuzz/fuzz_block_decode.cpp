// libFuzzer target: the block format decoder (numerics/block_format.h), which
// reads codes that faults may have flipped (train/faults.h). The input is a
// block format spec (first line), then a layout and codes:
//   bytes 0..2  outer, len, inner (each 0..15); byte 3 the declared block size
//   byte 4      the declared blocks per row; then little-endian uint32 codes,
//               the metadata codes first, then the element codes.
// decode_blocks either throws std::invalid_argument (one line) or writes every
// element of the output, whatever the codes hold.
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "numerics/block_format.h"
#include "numerics/format_spec.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace emu::fuzz;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nl = in.find('\n');
  if (nl == std::string_view::npos) return 0;
  emu::Format f;
  try {
    f = emu::parse_format(in.substr(0, nl));
  } catch (const emu::FormatError&) {
    return 0;
  }
  if (f.block.kind == emu::BlockKind::None) return 0;
  in.remove_prefix(nl + 1);
  if (in.size() < 5) return 0;
  emu::BlockEncoded e;
  e.layout.outer = in[0] & 15;
  e.layout.len = in[1] & 15;
  e.layout.inner = in[2] & 15;
  e.block_size = static_cast<uint8_t>(in[3]);
  e.blocks_per_row = static_cast<uint8_t>(in[4]);
  in.remove_prefix(5);
  std::vector<uint32_t> codes(in.size() / 4);
  if (!codes.empty()) std::memcpy(codes.data(), in.data(), codes.size() * 4);
  const size_t n_meta = static_cast<size_t>(e.layout.rows() * e.blocks_per_row);
  const size_t take_meta = n_meta < codes.size() ? n_meta : codes.size();
  e.meta.assign(codes.begin(), codes.begin() + static_cast<std::ptrdiff_t>(take_meta));
  e.elements.assign(codes.begin() + static_cast<std::ptrdiff_t>(take_meta), codes.end());
  const emu::BlockParams p = emu::block_params(f);
  e.elem_bits = p.elem_bits;
  e.meta_bits = p.meta_bits;

  // A signalling NaN no decode produces (a decoded NaN is a quiet one).
  const uint32_t kUnwritten = 0x7f800001u;
  std::vector<uint32_t> out(static_cast<size_t>(e.layout.numel()), kUnwritten);
  try {
    emu::decode_blocks(f, e, reinterpret_cast<float*>(out.data()));
  } catch (const std::invalid_argument& err) {
    require_one_line(err);
    return 0;
  }
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i] == kUnwritten) fail("decode_blocks", "element " + std::to_string(i) + " not written");
  return 0;
}
