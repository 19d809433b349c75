// The element-wise ops of core/backend_ops_elementwise.h on the device:
// activations and their gradients, the residual add, dropout. One thread per
// element (grid-stride), each element computed alone through the definitions
// of numerics/activations.h and numerics/element_arith.h and drawing at its
// row-major index, as on the CPU (backends/cpu/elementwise_ops.cpp,
// random_ops.cpp), so the bits do not depend on the launch shape. Plain fp32
// takes Fp32Arith (native binary32 operations), every other format
// ElementArith; both give the same bits where both apply, and the split is the
// CPU's. Inputs are read from contiguous copies where they are views, as the
// CPU reads them, so an output may alias an input exactly where it may there.
#include "backends/cuda/ops/common.h"
#include "backends/cuda/ops/cuda_backend.h"
#include "backends/cuda/ops/launch_each.h"
#include "core/elementwise_checks.h"
#include "numerics/activations.h"
#include "numerics/element_arith.h"
#include "numerics/format_spec.h"
#include "numerics/philox.h"
#include "numerics/round.h"

namespace emu::EMU_CUDA_NS {
namespace {

// y[i] = R_out(f(x[i])): f in binary32, then the rounding of the CPU's bulk
// pass (quantize_array: quantize with element i drawing at index i of
// key.stream under :sr); plain fp32 keeps f's bits.
__global__ void activation_kernel(Activation kind, Format out, bool plain, const float* x, float* y,
                                  int64_t n, DrawKey key) {
  const bool sr = is_stochastic(out);
  EMU_GRID_STRIDE_LOOP(i, n) {
    const float v = activation_value(kind, x[i]);
    y[i] =
        plain ? v : quantize(out, v, sr ? philox_draw(key.seed, key.stream, static_cast<uint64_t>(i)) : 0u);
  }
}

// A pwl activation: y[i] = pwl_value (numerics/pwl.h), element i at index i.
template <class A>
__global__ void pwl_activation_kernel(A arith, FunctionApprox fn, const float* x, float* y, int64_t n) {
  EMU_GRID_STRIDE_LOOP(i, n) {
    A a = arith;
    a.at(static_cast<uint64_t>(i));
    y[i] = pwl_value(fn, a, x[i], 0, kPwlMulSite);
  }
}

// gx[i] = activation_grad (sites 0..2 in format g), or for a pwl activation
// the derivative of the approximation (activation_pwl_grad).
template <class A>
__global__ void activation_grad_kernel(A arith, Activation kind, FunctionApprox fn, bool pwl, const float* x,
                                       const float* y, const float* gy, float* gx, int64_t n) {
  EMU_GRID_STRIDE_LOOP(i, n) {
    A a = arith;
    a.at(static_cast<uint64_t>(i));
    gx[i] = pwl ? activation_pwl_grad(fn, a, x[i], gy[i]) : activation_grad(kind, a, x[i], y[i], gy[i]);
  }
}

// y[i] = R_f(a[i] + b[i]), site 0.
template <class A>
__global__ void add_kernel(A arith, const float* a_in, const float* b_in, float* y, int64_t n) {
  EMU_GRID_STRIDE_LOOP(i, n) {
    A a = arith;
    a.at(static_cast<uint64_t>(i));
    y[i] = a.add(a_in[i], b_in[i], 0);
  }
}

// Dropout: element i is kept when word i & 3 of Philox block i >> 2 of the mask
// stream is at least `threshold` (philox_draw(seed, stream, i)), and is then
// R_f(x[i] * scale) (site 0 of the round key), else +0. A thread takes a whole
// block of four elements, so each block is computed once.
template <class A>
__global__ void dropout_kernel(A arith, uint64_t threshold, float scale, const float* x, float* y, int64_t n,
                               DrawKey mask) {
  const Philox4x32Key key = philox_key(mask.seed);
  const int64_t blocks = (n + 3) / 4;
  EMU_GRID_STRIDE_LOOP(q, blocks) {
    const Philox4x32Counter words = philox4x32_10(philox_counter(mask.stream, static_cast<uint64_t>(q)), key);
    const int64_t end = 4 * q + 4 < n ? 4 * q + 4 : n;
    A a = arith;
    for (int64_t i = 4 * q; i < end; ++i) {
      a.at(static_cast<uint64_t>(i));
      y[i] = words.v[i & 3] >= threshold ? a.mul(x[i], scale, 0) : 0.0f;
    }
  }
}

}  // namespace

// x: (n) -> y: (n), y[i] = R_out(f(x[i])); a pwl function (not relu): pwl_value.
void CudaBackend::activation_forward(Activation kind, const FunctionApprox& fn, const Format& out,
                                     const Tensor& x, Tensor& y, DrawKey key) {
  OpScope scope("activation_forward");
  check_activation_forward(x, y);
  const Tensor xc = x.contiguous();
  const int64_t n = x.numel();
  if (n == 0) return;
  const float* xp = contiguous_data(xc, "x");
  float* yp = contiguous_data(y, "y");
  const bool plain = is_plain_fp32(out);
  if (fn.pwl() && kind != Activation::Relu) {
    if (plain)
      launch_each("pwl_activation_kernel", pwl_activation_kernel<Fp32Arith>, n, Fp32Arith{}, fn, xp, yp, n);
    else
      launch_each("pwl_activation_kernel", pwl_activation_kernel<ElementArith>, n,
                  ElementArith(out, key.seed, key.stream), fn, xp, yp, n);
    return;
  }
  if (!plain)
    require_storage(out, "quantize_array");  // the CPU's bulk rounding refuses accumulator-only formats
  launch_each("activation_kernel", activation_kernel, n, kind, out, plain, xp, yp, n, key);
}

// x, y, gy: (n) -> gx: (n), activation_grad in format g (pwl: activation_pwl_grad).
void CudaBackend::activation_backward(Activation kind, const FunctionApprox& fn, const Format& g,
                                      const Tensor& x, const Tensor& y, const Tensor& gy, Tensor& gx,
                                      DrawKey key) {
  OpScope scope("activation_backward");
  check_activation_backward(x, y, gy, gx);
  const Tensor xc = x.contiguous(), yc = y.contiguous(), gc = gy.contiguous();
  const int64_t n = x.numel();
  if (n == 0) return;
  const float *xp = contiguous_data(xc, "x"), *yp = contiguous_data(yc, "y"), *gp = contiguous_data(gc, "gy");
  float* out = contiguous_data(gx, "gx");
  const bool pwl = fn.pwl() && kind != Activation::Relu;
  if (is_plain_fp32(g))
    launch_each("activation_grad_kernel", activation_grad_kernel<Fp32Arith>, n, Fp32Arith{}, kind, fn, pwl,
                xp, yp, gp, out, n);
  else
    launch_each("activation_grad_kernel", activation_grad_kernel<ElementArith>, n,
                ElementArith(g, key.seed, key.stream), kind, fn, pwl, xp, yp, gp, out, n);
}

// a, b: (n) -> y: (n), y[i] = R_f(a[i] + b[i]).
void CudaBackend::elementwise_add(const Format& f, const Tensor& a, const Tensor& b, Tensor& y, DrawKey key) {
  OpScope scope("elementwise_add");
  check_elementwise_add(a, b, y);
  const Tensor ac = a.contiguous(), bc = b.contiguous();
  const int64_t n = a.numel();
  if (n == 0) return;
  const float *ap = contiguous_data(ac, "a"), *bp = contiguous_data(bc, "b");
  float* out = contiguous_data(y, "y");
  if (is_plain_fp32(f))
    launch_each("add_kernel", add_kernel<Fp32Arith>, n, Fp32Arith{}, ap, bp, out, n);
  else
    launch_each("add_kernel", add_kernel<ElementArith>, n, ElementArith(f, key.seed, key.stream), ap, bp, out,
                n);
}

// x: (n) -> y: (n): kept elements R_f(x * scale), dropped ones +0.
void CudaBackend::dropout(float p, float scale, const Format& f, const Tensor& x, Tensor& y, DrawKey mask_key,
                          DrawKey round_key) {
  OpScope scope("dropout");
  check_dropout(p, x, y);
  const Tensor xc = x.contiguous();
  const int64_t n = x.numel();
  if (n == 0) return;
  const float* xp = contiguous_data(xc, "x");
  float* yp = contiguous_data(y, "y");
  const uint64_t threshold = dropout_threshold(p);
  const int64_t blocks = (n + 3) / 4;
  if (is_plain_fp32(f))
    launch_each("dropout_kernel", dropout_kernel<Fp32Arith>, blocks, Fp32Arith{}, threshold, scale, xp, yp, n,
                mask_key);
  else
    launch_each("dropout_kernel", dropout_kernel<ElementArith>, blocks,
                ElementArith(f, round_key.seed, round_key.stream), threshold, scale, xp, yp, n, mask_key);
}

}  // namespace emu::EMU_CUDA_NS
