// Layer-level and op-level emulation of one matmul or 3x3 convolution against
// float64 (analysis/compare_emulation.h), the computations behind `emutrain
// compare-emulation` (tools/compare_emulation.cpp).
//
// Both emulations run through the engine: mac_gemm for the matmul and the CPU
// backend's conv2d_forward for the convolution, with the policies
//   layer-level: mul fp32, acc fp32, out = format   (fp32 compute, output rounded)
//   op-level:    mul = format, acc = --acc, out = format
// on the same format-rounded inputs; the reference sums the exact products of
// those inputs in float64.
#include "analysis/compare_emulation.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "core/tensor.h"
#include "numerics/format_spec.h"
#include "numerics/philox.h"
#include "numerics/round.h"
#include "numerics/split_mul_spec.h"

namespace emu::analysis {
namespace {

MacPolicy policy(const Format& mul, const Format& acc, const Format& out) {
  MacPolicy p;
  p.mul_exact = false;
  p.mul = mul;
  p.acc = acc;
  p.out = out;
  p.acc_outer = parse_format("fp32");
  return p;
}

// fp16 with the settings _Float16 has (RNE, subnormals, Inf/NaN).
bool is_ieee_half(const Format& f) {
  return f.family == Family::Ieee && f.exp_bits == 5 && f.man_bits == 10 &&
         f.rounding == Rounding::NearestEven && f.subnormals && !f.saturate &&
         f.specials == Specials::InfNan && !f.accumulator_only;
}

#ifdef __FLT16_MAX__
constexpr bool kHaveFloat16 = true;
using Half = _Float16;
// One product or sum of halves, rounded to half: a native instruction where
// the CPU has AVX512-FP16, else float arithmetic and one rounding (exact for
// products; correctly rounded for sums, as binary32 has 24 >= 2*11 + 2 bits).
inline Half half_mul(Half a, Half b) {
#ifdef __AVX512FP16__
  return a * b;
#else
  return static_cast<Half>(static_cast<float>(a) * static_cast<float>(b));
#endif
}
inline Half half_add(Half a, Half b) {
#ifdef __AVX512FP16__
  return a + b;
#else
  return static_cast<Half>(static_cast<float>(a) + static_cast<float>(b));
#endif
}
#else
constexpr bool kHaveFloat16 = false;
#endif

// Host fp16: terms[o][k] pairs reduced k ascending, products in half, sums in
// half (acc fp16) or binary32 (acc fp32), output rounded to half.
template <class Terms>
std::vector<float> native_half(const Format& fmt, const Format& acc, int64_t outputs, int64_t K,
                               Terms terms) {
  std::vector<float> y;
#ifdef __FLT16_MAX__
  const bool acc_half = is_ieee_half(acc), acc_f32 = is_plain_fp32(acc);
  if (!is_ieee_half(fmt) || !(acc_half || acc_f32)) return y;
  y.resize(static_cast<size_t>(outputs));
  for (int64_t o = 0; o < outputs; ++o) {
    Half sh = 0;
    float sf = 0;
    for (int64_t k = 0; k < K; ++k) {
      float a, b;
      terms(o, k, a, b);
      const Half p = half_mul(static_cast<Half>(a), static_cast<Half>(b));
      if (acc_half)
        sh = half_add(sh, p);
      else
        sf = sf + static_cast<float>(p);
    }
    y[o] = acc_half ? static_cast<float>(sh) : static_cast<float>(static_cast<Half>(sf));
  }
#else
  (void)fmt, (void)acc, (void)outputs, (void)K, (void)terms;
#endif
  return y;
}

}  // namespace

std::vector<float> uniform_inputs(uint64_t seed, uint64_t stream, int64_t n, double lo, double hi) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double u = static_cast<double>(philox_draw(seed, stream, static_cast<uint64_t>(i)) >> 8) * 0x1p-24;
    v[i] = static_cast<float>(lo + (hi - lo) * u);
  }
  return v;
}

CompareOutputs compare_matmul(const Format& fmt, const Format& acc, const std::vector<float>& A,
                              const std::vector<float>& B, int64_t M, int64_t N, int64_t K, SplitMul split) {
  if (static_cast<int64_t>(A.size()) != M * K || static_cast<int64_t>(B.size()) != K * N)
    throw std::invalid_argument("compare-emulation: matmul operand sizes do not match M, N, K");
  CompareOutputs r;
  r.reference.resize(static_cast<size_t>(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += static_cast<double>(A[i * K + k]) * static_cast<double>(B[k * N + j]);
      r.reference[i * N + j] = s;
    }
  const Format fp32 = parse_format("fp32");
  r.layer.resize(static_cast<size_t>(M * N));
  r.op.resize(static_cast<size_t>(M * N));
  mac_gemm(policy(fp32, fp32, fmt), A.data(), K, B.data(), N, r.layer.data(), N, M, N, K, nullptr,
           GemmDraws{}, 0);
  MacPolicy op = policy(fmt, acc, fmt);
  if (split != SplitMul::None) set_split_mul(op, split);
  mac_gemm(op, A.data(), K, B.data(), N, r.op.data(), N, M, N, K, nullptr, GemmDraws{}, 0);
  r.native = native_half(fmt, acc, M * N, K, [&](int64_t o, int64_t k, float& a, float& b) {
    a = A[(o / N) * K + k];
    b = B[k * N + o % N];
  });
  return r;
}

CompareOutputs compare_conv3x3(const Format& fmt, const Format& acc, const std::vector<float>& x,
                               const std::vector<float>& w, int64_t N, int64_t C, int64_t H, int64_t W,
                               int64_t O) {
  if (static_cast<int64_t>(x.size()) != N * C * H * W || static_cast<int64_t>(w.size()) != O * C * 9)
    throw std::invalid_argument("compare-emulation: conv3x3 operand sizes do not match N, C, H, W, O");
  const int64_t K = C * 9, outputs = N * O * H * W;
  // Term k = (ci, kh, kw) of output (n, co, oh, ow): padding positions are zero operands.
  auto term = [&](int64_t o, int64_t k, float& a, float& b) {
    const int64_t ow = o % W, oh = o / W % H, co = o / (H * W) % O, n = o / (H * W * O);
    const int64_t ci = k / 9, kh = k / 3 % 3, kw = k % 3;
    const int64_t ih = oh - 1 + kh, iw = ow - 1 + kw;
    a = ih >= 0 && ih < H && iw >= 0 && iw < W ? x[((n * C + ci) * H + ih) * W + iw] : 0.0f;
    b = w[co * K + k];
  };
  CompareOutputs r;
  r.reference.resize(static_cast<size_t>(outputs));
  for (int64_t o = 0; o < outputs; ++o) {
    double s = 0;
    for (int64_t k = 0; k < K; ++k) {
      float a, b;
      term(o, k, a, b);
      s += static_cast<double>(a) * static_cast<double>(b);
    }
    r.reference[o] = s;
  }
  const Format fp32 = parse_format("fp32");
  Conv2dParams cp;
  cp.pad_h = cp.pad_w = 1;
  const Tensor xt = Tensor::from_vector({N, C, H, W}, x), wt = Tensor::from_vector({O, C, 3, 3}, w);
  Tensor y = Tensor::zeros({N, O, H, W});
  auto run = [&](const MacPolicy& p) {
    cpu_backend().conv2d_forward(p, cp, xt, wt, nullptr, y, DrawKey{});
    return std::vector<float>(y.data(), y.data() + outputs);
  };
  r.layer = run(policy(fp32, fp32, fmt));
  r.op = run(policy(fmt, acc, fmt));
  r.native = native_half(fmt, acc, outputs, K, term);
  return r;
}

std::vector<double> relative_errors(const std::vector<double>& ref, const std::vector<float>& got,
                                    int64_t* exact, int64_t* zero_ref) {
  std::vector<double> e;
  e.reserve(ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    const double g = got[i];
    if (exact && g == ref[i]) ++*exact;
    if (ref[i] == 0) {
      if (zero_ref) ++*zero_ref;
      continue;
    }
    e.push_back(std::fabs(g - ref[i]) / std::fabs(ref[i]));
  }
  return e;
}

ErrorStats error_stats(std::vector<double> errors) {
  ErrorStats s;
  s.count = static_cast<int64_t>(errors.size());
  if (errors.empty()) return s;
  double sum = 0;
  for (double e : errors) sum += e, s.max = std::max(s.max, e);
  s.mean = sum / static_cast<double>(errors.size());
  const size_t mid = (errors.size() - 1) / 2;
  std::nth_element(errors.begin(), errors.begin() + static_cast<std::ptrdiff_t>(mid), errors.end());
  s.median = errors[mid];
  return s;
}

std::string host_fp16_note() {
  if (!kHaveFloat16) return "fp16: this compiler has no _Float16; no native fp16 column";
#ifdef __AVX512FP16__
  return "fp16: native _Float16 arithmetic (AVX512-FP16 vmulsh/vaddsh, one rounding per operation)";
#else
  return "fp16: _Float16 is computed as binary32 arithmetic then rounded to half (no native fp16 "
         "instructions "
         "in this build); one rounding per operation all the same";
#endif
}

}  // namespace emu::analysis
