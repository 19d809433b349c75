// quantize_blocks (core/backend_ops_blocks.h) on the device, with the per-block
// functions of numerics/block_format.h that the CPU runs (backends/cpu/block_ops.cpp).
//
// Two passes, the metadata kept as data between them:
//   1. one thread per block: block_scale, the block's max |x| (and whether it
//      holds a NaN or Inf), then its scale and metadata code;
//   2. one thread per element: quantize_block_element, R_elem(x_i / scale)
//      times the scale of the element's block, drawing at the element's flat
//      index under :sr.
// A block's max is taken by one thread in the block's element order, so no
// atomics and no reduction tree; every element is computed alone. AdaptivFloat
// has one block, the whole tensor: its pass 1 is a single thread scanning every
// element (a latency bound, one load per element), pass 2 is as parallel as for
// any other format.
#include "backends/cuda/ops/common.h"
#include "backends/cuda/ops/cuda_backend.h"
#include "backends/cuda/ops/launch_each.h"
#include "backends/cuda/ops/scratch.h"
#include "core/block_checks.h"
#include "numerics/block_format.h"

namespace emu::EMU_CUDA_NS {
namespace {

// Where the blocks lie: rows of l (the block layout), blocks of B elements
// along each row (the last one shorter), per_row of them per row.
struct BlockGrid {
  ReadLayout l;
  int64_t B, per_row;
};

// scales[b] = metadata of block b = r * per_row + j (block j of row r).
__global__ void block_scales_kernel(BlockParams p, BlockGrid g, const float* x, BlockScale* scales,
                                    int64_t blocks) {
  EMU_GRID_STRIDE_LOOP(b, blocks) {
    const int64_t r = b / g.per_row, k0 = b % g.per_row * g.B;
    const int64_t k1 = k0 + g.B < g.l.len ? k0 + g.B : g.l.len;
    scales[b] = block_scale(p, x, g.l, r, k0, k1);
  }
}

// y[i] = decode(encode(x[i])) against the metadata of the element's block.
__global__ void block_elements_kernel(BlockParams p, BlockGrid g, const float* x, const BlockScale* scales,
                                      float* y, int64_t n, DrawKey key) {
  EMU_GRID_STRIDE_LOOP(i, n) {
    const int64_t plane = g.l.len * g.l.inner;
    const int64_t o = i / plane, k = (i % plane) / g.l.inner, r = o * g.l.inner + i % g.l.inner;
    y[i] = quantize_block_element(p, scales[r * g.per_row + k / g.B], x[i], i, key.seed, key.stream);
  }
}

}  // namespace

// x: (n) viewed as [layout.outer, layout.len, layout.inner] -> y: same shape (y may be x)
void CudaBackend::quantize_blocks(const Format& f, const Tensor& x, Tensor& y, const ReadLayout& layout,
                                  DrawKey key) {
  OpScope scope("quantize_blocks");
  check_quantize_blocks(x, y, layout);
  const BlockParams p = block_params(f);
  const ReadLayout l = block_layout(p, layout);
  const BlockGrid g{l, p.block_size > 0 ? p.block_size : l.len, blocks_per_row(p, l)};
  const int64_t n = x.numel(), blocks = l.rows() * g.per_row;
  if (n == 0) return;
  // As the CPU: a view is read from a contiguous copy, a view output written
  // through a contiguous temporary. In place is safe: pass 1 reads every
  // block before pass 2 writes, and pass 2 reads element i before writing it.
  const Tensor src = x.contiguous();
  const bool direct = y.is_contiguous();
  Tensor out = direct ? y : Tensor::zeros(x.shape(), Device::Cuda);
  DeviceArray<BlockScale> scales(static_cast<size_t>(blocks));
  const float* xp = contiguous_data(src, "x");
  launch_each("block_scales_kernel", block_scales_kernel, blocks, p, g, xp, scales.get(), blocks);
  launch_each("block_elements_kernel", block_elements_kernel, n, p, g, xp,
              static_cast<const BlockScale*>(scales.get()), contiguous_data(out, "y"), n, key);
  if (!direct) y.copy_from(out);
}

}  // namespace emu::EMU_CUDA_NS
