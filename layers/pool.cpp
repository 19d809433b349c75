#include "layers/pool.h"

#include <fmt/format.h>

#include <stdexcept>

#include "core/autograd.h"
#include "layers/layer_io.h"

namespace emu {
namespace {

Pool2dParams pool_params(const char* what, Size2 kernel, Size2 stride, Size2 padding) {
  Pool2dParams p;
  p.kernel_h = kernel.h, p.kernel_w = kernel.w;
  p.stride_h = stride.h ? stride.h : kernel.h, p.stride_w = stride.w ? stride.w : kernel.w;
  p.pad_h = padding.h, p.pad_w = padding.w;
  if (p.kernel_h < 1 || p.kernel_w < 1 || p.stride_h < 1 || p.stride_w < 1 || p.pad_h < 0 || p.pad_w < 0 ||
      2 * p.pad_h > p.kernel_h || 2 * p.pad_w > p.kernel_w)
    throw std::invalid_argument(
        fmt::format("{}(kernel {}x{}, stride {}x{}, padding {}x{}): kernel and stride must be "
                    "positive, padding >= 0 and at most half the kernel",
                    what, kernel.h, kernel.w, stride.h, stride.w, padding.h, padding.w));
  return p;
}

// (N, C, OH, OW) of a strided pooling of x.
Shape pooled_shape(const Module& m, const Tensor& x, const Pool2dParams& pp) {
  if (x.ndim() != 4)
    throw std::invalid_argument(
        fmt::format("{}: input of shape {} is not (N, C, H, W)", m.path(), shape_string(x.shape())));
  const int64_t eh = x.dim(2) + 2 * pp.pad_h - pp.kernel_h, ew = x.dim(3) + 2 * pp.pad_w - pp.kernel_w;
  if (eh < 0 || ew < 0)
    throw std::invalid_argument(
        fmt::format("{}: input of shape {} is smaller than the {}x{} window after padding", m.path(),
                    shape_string(x.shape()), pp.kernel_h, pp.kernel_w));
  return {x.dim(0), x.dim(1), eh / pp.stride_h + 1, ew / pp.stride_w + 1};
}

}  // namespace

MaxPool2d::MaxPool2d(Size2 kernel, Size2 stride, Size2 padding)
    : params(pool_params("MaxPool2d", kernel, stride, padding)) {}
Tensor MaxPool2d::forward(const Tensor& x) { return max_pool2d(*this, x, params); }

AvgPool2d::AvgPool2d(Size2 kernel, Size2 stride, Size2 padding)
    : params(pool_params("AvgPool2d", kernel, stride, padding)) {}
Tensor AvgPool2d::forward(const Tensor& x) { return avg_pool2d(*this, x, params); }

AdaptiveAvgPool2d::AdaptiveAvgPool2d(Size2 out) : output(out) {
  if (out.h < 1 || out.w < 1)
    throw std::invalid_argument(
        fmt::format("AdaptiveAvgPool2d({}x{}): the output size must be positive", out.h, out.w));
}
Tensor AdaptiveAvgPool2d::forward(const Tensor& x) { return adaptive_avg_pool2d(*this, x, output); }

Tensor max_pool2d(const Module& m, const Tensor& x, const Pool2dParams& pp) {
  const Shape out_shape = pooled_shape(m, x, pp);
  const LayerNumerics& n = m.numerics();
  const LayerNumerics cn = compute_numerics(n);
  Backend& be = backend_for(x.device());
  // x: (N, C, H, W) -> y, argmax: (N, C, OH, OW).
  Tensor xr = read_as(cn.activations, x.contiguous(), draw_key(m, DrawSite::ReadInput));
  Tensor y = Tensor::zeros(out_shape, x.device());
  Tensor argmax = Tensor::zeros(out_shape, x.device());
  be.max_pool2d_forward(cn.out(), pp, xr, y, argmax, draw_key(m, DrawSite::Forward));
  finish_output(n, y, draw_key(m, DrawSite::Forward));

  const Module* mp = &m;
  record_lambda(y, "max_pool2d", {x}, [=](const Tensor& gy) -> std::vector<Tensor> {
    const LayerNumerics& n = mp->numerics();
    const LayerNumerics cn = compute_numerics(n);
    Tensor g = read_as(cn.grads, gy.contiguous(), draw_key(*mp, DrawSite::ReadGrad));
    // g, argmax: (N, C, OH, OW) -> gx: (N, C, H, W).
    Tensor gx = Tensor::zeros(x.shape(), gy.device());
    backend_for(gy.device())
        .max_pool2d_backward(backward_mac(cn), pp, g, argmax, gx, draw_key(*mp, DrawSite::GradInput));
    finish_grad(n, gx, draw_key(*mp, DrawSite::GradInput));
    return {gx};
  });
  return y;
}

namespace {

// Average pooling, strided (pp) or adaptive (out_shape given, pp null).
Tensor average(const Module& m, const Tensor& x, const Pool2dParams* pp, const Shape& out_shape) {
  const LayerNumerics& n = m.numerics();
  const LayerNumerics cn = compute_numerics(n);
  Backend& be = backend_for(x.device());
  // x: (N, C, H, W) -> y: (N, C, OH, OW).
  Tensor xr = read_as(cn.activations, x.contiguous(), draw_key(m, DrawSite::ReadInput));
  Tensor y = Tensor::zeros(out_shape, x.device());
  if (pp)
    be.avg_pool2d_forward(cn.mac, *pp, xr, y, draw_key(m, DrawSite::Forward));
  else
    be.adaptive_avg_pool2d_forward(cn.mac, xr, y, draw_key(m, DrawSite::Forward));
  finish_output(n, y, draw_key(m, DrawSite::Forward));

  const Module* mp = &m;
  const bool strided = pp != nullptr;
  const Pool2dParams params = pp ? *pp : Pool2dParams{};
  record_lambda(
      y, strided ? "avg_pool2d" : "adaptive_avg_pool2d", {x}, [=](const Tensor& gy) -> std::vector<Tensor> {
        const LayerNumerics& n = mp->numerics();
        const LayerNumerics cn = compute_numerics(n);
        Backend& be = backend_for(gy.device());
        Tensor g = read_as(cn.grads, gy.contiguous(), draw_key(*mp, DrawSite::ReadGrad));
        // g: (N, C, OH, OW) -> gx: (N, C, H, W).
        Tensor gx = Tensor::zeros(x.shape(), gy.device());
        if (strided)
          be.avg_pool2d_backward(backward_mac(cn), params, g, gx, draw_key(*mp, DrawSite::GradInput));
        else
          be.adaptive_avg_pool2d_backward(backward_mac(cn), g, gx, draw_key(*mp, DrawSite::GradInput));
        finish_grad(n, gx, draw_key(*mp, DrawSite::GradInput));
        return {gx};
      });
  return y;
}

}  // namespace

Tensor avg_pool2d(const Module& m, const Tensor& x, const Pool2dParams& pp) {
  return average(m, x, &pp, pooled_shape(m, x, pp));
}

Tensor adaptive_avg_pool2d(const Module& m, const Tensor& x, Size2 output) {
  if (x.ndim() != 4 || x.dim(2) < 1 || x.dim(3) < 1)
    throw std::invalid_argument(
        fmt::format("{}: input of shape {} is not (N, C, H, W)", m.path(), shape_string(x.shape())));
  return average(m, x, nullptr, {x.dim(0), x.dim(1), output.h, output.w});
}

}  // namespace emu
