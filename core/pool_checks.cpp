#include "core/pool_checks.h"

#include <fmt/format.h>

#include <stdexcept>

#include "core/op_checks.h"

namespace emu {
namespace {

void check_4d(const char* op, const char* what, const Tensor& t) {
  if (t.ndim() != 4)
    throw std::invalid_argument(
        fmt::format("{}: {} must be (N, C, H, W), got {}", op, what, shape_string(t.shape())));
}

// The strided pooling over an input of `in` shape (N, C, H, W).
PoolShape strided_pool(const char* op, const Pool2dParams& pp, const Shape& in) {
  if (pp.kernel_h < 1 || pp.kernel_w < 1 || pp.stride_h < 1 || pp.stride_w < 1 || pp.pad_h < 0 ||
      pp.pad_w < 0 || 2 * pp.pad_h > pp.kernel_h || 2 * pp.pad_w > pp.kernel_w)
    throw std::invalid_argument(
        fmt::format("{}: kernel {}x{}, stride {}x{}, padding {}x{}: kernel and stride must be "
                    ">= 1, padding >= 0 and at most half the kernel",
                    op, pp.kernel_h, pp.kernel_w, pp.stride_h, pp.stride_w, pp.pad_h, pp.pad_w));
  if (in[2] + 2 * pp.pad_h - pp.kernel_h < 0 || in[3] + 2 * pp.pad_w - pp.kernel_w < 0)
    throw std::invalid_argument(fmt::format("{}: kernel {}x{} larger than the padded input {}", op,
                                            pp.kernel_h, pp.kernel_w, shape_string(in)));
  return PoolShape{in[0], in[1], strided_pool_axis(in[2], pp.kernel_h, pp.stride_h, pp.pad_h),
                   strided_pool_axis(in[3], pp.kernel_w, pp.stride_w, pp.pad_w)};
}

PoolShape adaptive_pool(const char* op, const Shape& in, const Shape& out) {
  if (in[0] != out[0] || in[1] != out[1] || in[2] < 1 || in[3] < 1 || out[2] < 1 || out[3] < 1)
    throw std::invalid_argument(
        fmt::format("{}: input {} and output {} do not fit", op, shape_string(in), shape_string(out)));
  return PoolShape{in[0], in[1], adaptive_pool_axis(in[2], out[2]), adaptive_pool_axis(in[3], out[3])};
}

// argmax holds an index within the plane as a binary32: exact, and distinct, below 2^24.
void check_argmax_plane(const char* op, const PoolShape& pl) {
  const int64_t plane = pl.h.in * pl.w.in;
  if (plane >= (int64_t{1} << 24))
    throw std::invalid_argument(
        fmt::format("{}: planes of {} elements: argmax indices must stay below 2^24", op, plane));
}

}  // namespace

PoolShape check_max_pool2d_forward(const Pool2dParams& pp, const Tensor& x, const Tensor& y,
                                   const Tensor& argmax) {
  const char* op = "max_pool2d_forward";
  check_4d(op, "x", x);
  const PoolShape pl = strided_pool(op, pp, x.shape());
  check_argmax_plane(op, pl);
  check_result(op, "y", y, pl.out_shape());
  check_result(op, "argmax", argmax, pl.out_shape());
  return pl;
}

PoolShape check_max_pool2d_backward(const Pool2dParams& pp, const Tensor& gy, const Tensor& argmax,
                                    const Tensor& gx) {
  const char* op = "max_pool2d_backward";
  check_4d(op, "gx", gx);
  const PoolShape pl = strided_pool(op, pp, gx.shape());
  check_argmax_plane(op, pl);
  check_result(op, "gx", gx, pl.in_shape());
  if (gy.shape() != pl.out_shape() || argmax.shape() != pl.out_shape())
    throw std::invalid_argument(fmt::format("{}: gy {} and argmax {} must be {}", op,
                                            shape_string(gy.shape()), shape_string(argmax.shape()),
                                            shape_string(pl.out_shape())));
  return pl;
}

PoolShape check_avg_pool2d_forward(const Pool2dParams& pp, const Tensor& x, const Tensor& y) {
  const char* op = "avg_pool2d_forward";
  check_4d(op, "x", x);
  const PoolShape pl = strided_pool(op, pp, x.shape());
  check_result(op, "y", y, pl.out_shape());
  return pl;
}

PoolShape check_avg_pool2d_backward(const Pool2dParams& pp, const Tensor& gy, const Tensor& gx) {
  const char* op = "avg_pool2d_backward";
  check_4d(op, "gx", gx);
  const PoolShape pl = strided_pool(op, pp, gx.shape());
  check_result(op, "gx", gx, pl.in_shape());
  if (gy.shape() != pl.out_shape())
    throw std::invalid_argument(
        fmt::format("{}: gy {} must be {}", op, shape_string(gy.shape()), shape_string(pl.out_shape())));
  return pl;
}

PoolShape check_adaptive_avg_pool2d_forward(const Tensor& x, const Tensor& y) {
  const char* op = "adaptive_avg_pool2d_forward";
  check_4d(op, "x", x);
  check_4d(op, "y", y);
  const PoolShape pl = adaptive_pool(op, x.shape(), y.shape());
  check_result(op, "y", y, pl.out_shape());
  return pl;
}

PoolShape check_adaptive_avg_pool2d_backward(const Tensor& gy, const Tensor& gx) {
  const char* op = "adaptive_avg_pool2d_backward";
  check_4d(op, "gy", gy);
  check_4d(op, "gx", gx);
  const PoolShape pl = adaptive_pool(op, gx.shape(), gy.shape());
  check_result(op, "gx", gx, pl.in_shape());
  return pl;
}

}  // namespace emu
