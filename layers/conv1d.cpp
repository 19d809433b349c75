#include "layers/conv1d.h"

#include <fmt/format.h>

#include "layers/conv2d.h"

namespace emu {

Conv2dParams conv1d_params(int stride, int padding, int dilation, int groups) {
  Conv2dParams p;
  p.stride_w = stride, p.pad_w = padding, p.dilation_w = dilation, p.groups = groups;
  return p;
}

Conv1d::Conv1d(int64_t in, int64_t out, int k, int stride, int padding, int dilation, int groups,
               bool with_bias)
    : in_channels(in),
      out_channels(out),
      kernel(k),
      params(conv1d_params(stride, padding, dilation, groups)) {
  check_conv_arguments(fmt::format("Conv1d({}, {}, kernel {}, stride {}, padding {}, dilation {}, groups {})",
                                   in, out, k, stride, padding, dilation, groups),
                       in, out, 1, k, params);
  weight = register_parameter("weight", Tensor::zeros({out, in / groups, k}));
  if (with_bias) bias = register_parameter("bias", Tensor::zeros({out}));
}

void Conv1d::reset_parameters() { reset_conv_parameters(*this, weight, bias); }

Tensor Conv1d::forward(const Tensor& x) { return conv1d(*this, x, weight, bias, params); }

Tensor conv1d(const Module& m, const Tensor& x, const Tensor& weight, const Tensor& bias,
              const Conv2dParams& cp) {
  return convolution("conv1d", 3, m, x, weight, bias, cp);
}

}  // namespace emu
