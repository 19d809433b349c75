// `emutrain compare-emulation`: how far layer-level emulation (inputs rounded
// to the format, products and sums in plain fp32, output rounded: the
// QPyTorch / GoldenEye style) and op-level emulation (every product and sum
// rounded by the engine's multiply-accumulate path, mul = format, acc = --acc,
// out = format) land from a float64 reference on the same rounded inputs, for
// one matmul or 3x3 convolution (docs/plots.md).
//
//   emutrain compare-emulation --op matmul --size 64,64,256 --range -1,1 --format bf16,fp16 [--acc fp32]
//                              [--seed 1] [--trials 3] [--out DIR]
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "numerics/format.h"

namespace emu::cli {

struct CompareOptions {
  std::string op = "matmul";             // matmul | conv3x3
  std::vector<int64_t> size;             // matmul: M,N,K; conv3x3: N,C,H,W,O (stride 1, padding 1)
  double lo = -1, hi = 1;                // inputs uniform in [lo, hi)
  std::vector<std::string> formats{"bf16"};
  std::string acc = "fp32";              // op-level accumulator
  uint64_t seed = 1;
  int trials = 1;
  std::string out_dir;                   // "": no files; else <op>.csv, .svg and .png there
};

// Inputs of one operand: x_i = (float)(lo + (hi - lo) * u_i), u_i = (philox_draw(seed, stream, i) >> 8) * 2^-24
// (binary32 nearest of the double). Trial t draws its first operand (A, or x) from stream 2t, the
// second (B, or w) from stream 2t + 1; both are then rounded to the format (round_value).
std::vector<float> uniform_inputs(uint64_t seed, uint64_t stream, int64_t n, double lo, double hi);

// The outputs of one case, on inputs already rounded to `fmt`.
struct CompareOutputs {
  std::vector<double> reference;  // float64 sums, k (or (ci, kh, kw)) ascending
  std::vector<float> layer;       // mul fp32, acc fp32, out fmt (engine: mac_gemm / conv2d_forward)
  std::vector<float> op;          // mul fmt, acc acc, out fmt (same engine path)
  std::vector<float> native;      // host _Float16 arithmetic (fp16 with acc fp16 or fp32 only); else empty
};

// A: (M, K), B: (K, N) -> (M, N).
CompareOutputs compare_matmul(const Format& fmt, const Format& acc, const std::vector<float>& A,
                              const std::vector<float>& B, int64_t M, int64_t N, int64_t K);
// x: (N, C, H, W), w: (O, C, 3, 3) -> (N, O, H, W), stride 1, padding 1.
CompareOutputs compare_conv3x3(const Format& fmt, const Format& acc, const std::vector<float>& x,
                               const std::vector<float>& w, int64_t N, int64_t C, int64_t H, int64_t W, int64_t O);

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

// Prints the table (and writes the files under out_dir); returns the exit code.
int run_compare_emulation(const CompareOptions& opts, std::ostream& out);

}  // namespace emu::cli
