// quantize and gemm on the CPU.
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "core/dense_checks.h"
#include "core/tensor.h"
#include "numerics/bulk.h"

namespace emu {

// x -> y = R_f(x), element i drawing at index i (row-major order of the view).
void CpuBackend::quantize(const Format& f, const Tensor& x, Tensor& y, DrawKey key) {
  check_quantize(x, y);
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
  check_gemm(a, b, bias, c);
  Tensor A = a.contiguous(), B = b.contiguous();
  Tensor bias_c = bias ? bias->contiguous() : Tensor();
  const int64_t M = a.dim(0), K = a.dim(1), N = b.dim(1);
  mac_gemm(p, A.data(), K, B.data(), N, c.data(), N, M, N, K, bias ? bias_c.data() : nullptr,
           GemmDraws{key.seed, key.stream}, threads_);
}

}  // namespace emu
