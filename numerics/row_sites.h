// Rounding sites of the row ops (softmax, log-softmax, the losses): the stream
// offset key.stream + site of each rounding under :sr (docs/layers_elementwise.md).
// Shared by the CPU reference and the CUDA kernels.
#pragma once

#include <cstdint>

namespace emu {

// Stream offsets (key.stream + site) of the rounding sites of the row ops.
namespace softmax_site {
constexpr uint32_t kSub = 0;     // d_j = R_out(x_j - m)
constexpr uint32_t kExp = 1;     // e_j = R_out(exp(d_j))
constexpr uint32_t kSum = 2;     // s = sum_j e_j (a reduction)
constexpr uint32_t kLog = 3;     // l = R_out(log(s))  (log-softmax)
constexpr uint32_t kResult = 4;  // y_j = R_out(e_j / s) or R_out(d_j - l)
constexpr uint32_t kPwlMul = 8;  // pwl exp: R_out(slope_k * d_j) (its sum at kExp); 8: after loss_site
// Backward.
constexpr uint32_t kReduce = 0;  // dot = sum_j gy_j y_j (softmax) or S = sum_j gy_j (log-softmax)
constexpr uint32_t kStep1 = 1;   // R_g(gy_j - dot) / R_g(exp(y_j))
constexpr uint32_t kStep2 = 2;   // R_g(y_j * t_j) / R_g(p_j * S)
constexpr uint32_t kStep3 = 3;   // log-softmax: R_g(gy_j - u_j)
}  // namespace softmax_site

namespace loss_site {
// cross_entropy_forward uses softmax_site 0..4 for its log-softmax, then:
constexpr uint32_t kRow = 5;    // row_i = sum_j q_j logp_ij (a reduction)
constexpr uint32_t kTotal = 6;  // total = sum_i -row_i, index i
constexpr uint32_t kMean = 7;   // R_out(total / count), index 0
// cross_entropy_backward: w = R_g(gloss / count) at index 0 of kScale; per element:
constexpr uint32_t kScale = 0;
constexpr uint32_t kProb = 1;  // p_j = R_g(exp(logp_j))
constexpr uint32_t kDiff = 2;  // R_g(p_j - q_j)
constexpr uint32_t kGrad = 3;  // R_g(diff * w)
// mse_forward:
constexpr uint32_t kMseDiff = 0;  // diff_i = R_out(x_i - t_i)
constexpr uint32_t kMseSum = 1;   // sum_i diff_i^2 (one reduction, row 0)
constexpr uint32_t kMseMean = 2;  // R_out(total / n)
// mse_backward: w = R_g(2 gloss / n) at kScale, gx_i = R_g(diff_i * w) at kGrad,
// gtarget_i = R_g(-(diff_i * w)) at kTargetGrad.
constexpr uint32_t kTargetGrad = 4;
}  // namespace loss_site

}  // namespace emu
