// quantize and gemm on the CPU.
#include <fmt/format.h>

#include <stdexcept>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "core/tensor.h"
#include "numerics/bulk.h"

namespace emu {

// x -> y = R_f(x), element i drawing at index i (row-major order of the view).
void CpuBackend::quantize(const Format& f, const Tensor& x, Tensor& y, DrawKey key) {
  if (x.shape() != y.shape())
    throw std::invalid_argument(
        fmt::format("quantize: {} into {}", shape_string(x.shape()), shape_string(y.shape())));
  BulkOptions opt;
  opt.threads = static_cast<unsigned>(threads_);
  opt.seed = key.seed;
  opt.stream = key.stream;
  Tensor src = x.contiguous();
  if (y.is_contiguous()) {
    quantize_array(f, src.data(), y.data(), static_cast<size_t>(x.numel()), opt);
    return;
  }
  Tensor out = Tensor::zeros(x.shape());
  quantize_array(f, src.data(), out.data(), static_cast<size_t>(x.numel()), opt);
  y.copy_from(out);
}

// a (M,K), b (K,N), bias (N) -> c (M,N)
void CpuBackend::gemm(const MacPolicy& p, const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& c,
                      DrawKey key) {
  if (a.ndim() != 2 || b.ndim() != 2 || c.ndim() != 2 || a.dim(1) != b.dim(0) || c.dim(0) != a.dim(0) ||
      c.dim(1) != b.dim(1) || (bias && bias->numel() != b.dim(1)))
    throw std::invalid_argument(fmt::format("gemm: a {} x b {} -> c {}{}", shape_string(a.shape()),
                                            shape_string(b.shape()), shape_string(c.shape()),
                                            bias ? " with bias " + shape_string(bias->shape()) : ""));
  if (!c.is_contiguous()) throw std::invalid_argument("gemm: c must be contiguous");
  Tensor A = a.contiguous(), B = b.contiguous();
  Tensor bias_c = bias ? bias->contiguous() : Tensor();
  const int64_t M = a.dim(0), K = a.dim(1), N = b.dim(1);
  mac_gemm(p, A.data(), K, B.data(), N, c.data(), N, M, N, K, bias ? bias_c.data() : nullptr,
           GemmDraws{key.seed, key.stream}, threads_);
}

}  // namespace emu
