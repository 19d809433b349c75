// quantize_blocks on the CPU: the per-block functions of numerics/block_format.h,
// threaded over the rows of the read layout (blocks never straddle rows, so the
// split cannot change a bit).
#include "backends/cpu/cpu_backend.h"
#include "core/block_checks.h"
#include "core/tensor.h"
#include "numerics/block_format.h"

namespace emu {

void CpuBackend::quantize_blocks(const Format& f, const Tensor& x, Tensor& y, const ReadLayout& layout,
                                 DrawKey key) {
  check_quantize_blocks(x, y, layout);
  const BlockParams p = block_params(f);
  const ReadLayout l = block_layout(p, layout);
  const int64_t B = p.block_size > 0 ? p.block_size : l.len;
  const int64_t per_row = blocks_per_row(p, l);
  Tensor src = x.contiguous();
  const float* xp = src.data();
  Tensor out = y.is_contiguous()
                   ? y
                   : Tensor::zeros(x.shape());  // in place is safe: a block is read before it is written
  float* yp = out.data();
  // Rows are independent; a row of many small blocks is cheap, so grain in elements.
  const int64_t grain = l.len > 0 ? (4096 + l.len - 1) / l.len : 1;
  parallel_for(l.rows(), threads_, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      for (int64_t j = 0; j < per_row; ++j) {
        const int64_t k0 = j * B, k1 = k0 + B < l.len ? k0 + B : l.len;
        quantize_one_block(p, xp, l, r, k0, k1, yp, key.seed, key.stream);
      }
    }
  });
  if (out.data() != y.data()) y.copy_from(out);
}

}  // namespace emu
