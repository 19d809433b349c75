// quantize (core/backend_ops_dense.h) on the device: y = R_f(x) element-wise
// for every format family, element e (row-major over the view) drawing
// philox_draw(seed, stream, e) under :sr, exactly as the CPU's quantize_array.
#include "backends/cuda/ops/common.h"
#include "backends/cuda/ops/cuda_backend.h"
#include "core/dense_checks.h"
#include "numerics/format_spec.h"
#include "numerics/philox.h"
#include "numerics/round.h"

namespace emu::EMU_CUDA_NS {
namespace {

__global__ void quantize_kernel(Format f, KernelView x, KernelView y, DrawKey key) {
  const bool sr = is_stochastic(f);
  EMU_GRID_STRIDE_LOOP(e, y.numel) {
    const uint32_t rand = sr ? philox_draw(key.seed, key.stream, static_cast<uint64_t>(e)) : 0u;
    y.at(e) = quantize(f, x.at(e), rand);
  }
}

}  // namespace

// x -> y, same shape, any views (y may be x).
void CudaBackend::quantize(const Format& f, const Tensor& x, Tensor& y, DrawKey key) {
  OpScope scope("quantize");
  check_quantize(x, y);
  require_storage(f,
                  "quantize_array");  // as the CPU's bulk rounding: no tensor holds accumulator-only values
  if (y.numel() == 0) return;
  // Views of one storage other than the same view: read a copy first (as the CPU does).
  const bool overlap =
      x.impl()->storage == y.impl()->storage && !(x.offset() == y.offset() && x.strides() == y.strides());
  const Tensor src = overlap ? x.clone() : x;
  const KernelView xv = view_of(src), yv = view_of(y);
  gpu::launch("quantize_kernel", quantize_kernel, element_grid(yv.numel), dim3(kElementBlock), 0, stream(), f,
              xv, yv, key);
}

}  // namespace emu::EMU_CUDA_NS
