// How far layer-level emulation (inputs rounded to the format, products and
// sums in plain fp32, output rounded: the QPyTorch / GoldenEye style) and
// op-level emulation (every product and sum rounded by the engine's
// multiply-accumulate path, mul = format, acc = acc, out = format) land from a
// float64 reference on the same rounded inputs, for one matmul or 3x3
// convolution: the computations of `emutrain compare-emulation` (the command,
// its table and plots are tools/compare_emulation.cpp; docs/plots.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "numerics/format.h"
#include "numerics/split_mul.h"

namespace emu::analysis {

// Inputs of one operand: x_i = (float)(lo + (hi - lo) * u_i), u_i = (philox_draw(seed, stream, i) >> 8) *
// 2^-24 (binary32 nearest of the double). Trial t draws its first operand (A, or x) from stream 2t, the
// second (B, or w) from stream 2t + 1; both are then rounded to the format (round_value).
std::vector<float> uniform_inputs(uint64_t seed, uint64_t stream, int64_t n, double lo, double hi);

// The outputs of one case, on inputs already rounded to `fmt`.
struct CompareOutputs {
  std::vector<double> reference;  // float64 sums, k (or (ci, kh, kw)) ascending
  std::vector<float> layer;       // mul fp32, acc fp32, out fmt (engine: mac_gemm / conv2d_forward)
  std::vector<float> op;          // mul fmt, acc acc, out fmt (same engine path)
  std::vector<float> native;      // host _Float16 arithmetic (fp16 with acc fp16 or fp32 only); else empty
};

// A: (M, K), B: (K, N) -> (M, N). With a split scheme (docs/contract.md section 5.6)
// the op-level products are the scheme's instead of R_fmt(a b) (fmt is then fp32).
CompareOutputs compare_matmul(const Format& fmt, const Format& acc, const std::vector<float>& A,
                              const std::vector<float>& B, int64_t M, int64_t N, int64_t K,
                              SplitMul split = SplitMul::None);
// x: (N, C, H, W), w: (O, C, 3, 3) -> (N, O, H, W), stride 1, padding 1.
CompareOutputs compare_conv3x3(const Format& fmt, const Format& acc, const std::vector<float>& x,
                               const std::vector<float>& w, int64_t N, int64_t C, int64_t H, int64_t W,
                               int64_t O);

// Relative errors |got - ref| / |ref| over the outputs with ref != 0 (those
// with ref == 0 are counted in zero_ref and exact when got == 0 too).
struct ErrorStats {
  double max = 0, mean = 0, median = 0;  // median: the lower middle element when the count is even
  int64_t count = 0;                     // outputs with ref != 0
  int64_t exact = 0;                     // outputs with got == ref
  int64_t zero_ref = 0;
};
std::vector<double> relative_errors(const std::vector<double>& ref, const std::vector<float>& got,
                                    int64_t* exact = nullptr, int64_t* zero_ref = nullptr);
ErrorStats error_stats(std::vector<double> errors);

// What the host does for fp16 arithmetic (native instructions, or float then round).
std::string host_fp16_note();

}  // namespace emu::analysis
