// Accuracy and determinism of the binary32 non-linear functions
// (numerics/functions.h) against MPFR.
//
// For every function: a dense deterministic sample of the inputs where the
// function is not saturated (every binade, both signs), a coarse sweep over all
// 2^32 encodings, and a corpus of special values and branch/threshold edges.
// Each result is compared with an MPFR value good to 48 bits; the error is
// |y - f(x)| / ulp(f(x)), ulp of binary32 at the exact value (2^(e-23) for f(x)
// in [2^e, 2^(e+1)), e clamped at -126), and its maximum must stay within the
// bound in docs/functions.md. NaN results must be the canonical quiet NaN,
// infinities and zeros must match IEEE (signs included), and sqrt, rsqrt and
// reciprocal must equal MPFR's correctly rounded binary32 result bit for bit.
//
// A second test pins the exact output bits (a hash over a fixed sweep), which
// is what the CUDA backend must reproduce; a hidden test ("[.exhaustive]") runs
// every one of the 2^32 inputs, by hand: see docs/functions.md.
//
// EMUTRAIN_FUNCTIONS_SCALE=k multiplies the sample sizes (default 1, about 20 s
// on one core; k = 2 gives at least 2^22 points per function).
#include <mpfr.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "numerics/functions.h"
#include "tests/sanitized.h"

using emu::bits_float;
using emu::float_bits;

namespace {

enum class Fn { kExp, kLog, kTanh, kSigmoid, kErf, kGelu, kSilu, kRsqrt, kReciprocal, kSqrt };

// Bit patterns first..last, inclusive.
struct Range {
  uint32_t first;
  uint32_t last;
};

struct FnCase {
  Fn fn;
  const char* name;
  float (*f)(float);
  double bound;            // max ulp error over all 2^32 inputs (docs/functions.md), rounded up
  bool correctly_rounded;  // must equal MPFR's binary32 result bit for bit
  std::vector<Range> domain;
  uint32_t points;  // sampled from `domain` (times EMUTRAIN_FUNCTIONS_SCALE)
  uint64_t golden;  // FNV-1a of the output bits over determinism_sweep()
};

constexpr uint32_t kNeg = 0x80000000u;

// Domains: where the result is neither saturated nor rounded to 0/Inf
// (thresholds from docs/functions.md, slightly widened).
const std::vector<FnCase>& cases() {
  // clang-format off
  static const std::vector<FnCase> all = {
      // fn             name          f                   bound  CR     domain                                           points    golden hash
      {Fn::kExp,        "exp",        emu::fn_exp,        0.54, false, {{0, 0x42b20000u}, {kNeg, kNeg | 0x42d00000u}}, 1u << 22, 0xdd9f3f993c791b77ull},
      {Fn::kLog,        "log",        emu::fn_log,        0.57, false, {{1, 0x7f7fffffu}},                             1u << 21, 0x3d5bda1a06b49748ull},
      {Fn::kTanh,       "tanh",       emu::fn_tanh,       0.58, false, {{0, 0x41110000u}, {kNeg, kNeg | 0x41110000u}}, 1u << 22, 0xcb537b95807cea6bull},
      {Fn::kSigmoid,    "sigmoid",    emu::fn_sigmoid,    0.54, false, {{0, 0x418b0000u}, {kNeg, kNeg | 0x42f00000u}}, 1u << 22, 0xe3df027493a8c180ull},
      {Fn::kErf,        "erf",        emu::fn_erf,        0.58, false, {{0, 0x407b0000u}, {kNeg, kNeg | 0x407b0000u}}, 1u << 21, 0x212241899ebe1d88ull},
      {Fn::kGelu,       "gelu",       emu::fn_gelu,       0.58, false, {{0, 0x40ad0000u}, {kNeg, kNeg | 0x41700000u}}, 1u << 21, 0x38a1f9b7982cfda7ull},
      {Fn::kSilu,       "silu",       emu::fn_silu,       0.54, false, {{0, 0x41860000u}, {kNeg, kNeg | 0x42f00000u}}, 1u << 22, 0xa200e1556a8a2763ull},
      {Fn::kRsqrt,      "rsqrt",      emu::fn_rsqrt,      0.5,  true,  {{1, 0x7f7fffffu}},                             1u << 22, 0x75a2e4603461be58ull},
      {Fn::kReciprocal, "reciprocal", emu::fn_reciprocal, 0.5,  true,  {{1, 0x7f7fffffu}, {kNeg | 1, 0xff7fffffu}},    1u << 22, 0x352e8468d5dd1263ull},
      {Fn::kSqrt,       "sqrt",       emu::fn_sqrt,       0.5,  true,  {{1, 0x7f7fffffu}},                             1u << 22, 0x7440aa9e1abfc601ull},
  };
  // clang-format on
  return all;
}

bool is_nan(float x) { return (float_bits(x) & 0x7fffffffu) > 0x7f800000u; }
bool is_inf(float x) { return (float_bits(x) & 0x7fffffffu) == 0x7f800000u; }
float neg_zero() { return bits_float(kNeg); }

// MPFR reference. Values are computed to kPrec bits in MPFR's (huge) exponent
// range, so nothing over- or underflows before the comparison.
class Reference {
 public:
  static constexpr int kPrec = 48;
  Reference() {
    mpfr_inits2(kPrec, x_, y_, t_, d_, static_cast<mpfr_ptr>(nullptr));
    mpfr_init2(cr_, 24);
  }
  ~Reference() { mpfr_clears(x_, y_, t_, d_, cr_, static_cast<mpfr_ptr>(nullptr)); }
  Reference(const Reference&) = delete;
  Reference& operator=(const Reference&) = delete;

  // y_ = f(x). IEEE limits that a composite MPFR expression gets wrong
  // (silu(-Inf), gelu(-Inf): -Inf * 0) and the one deliberate difference
  // (rsqrt(-0) = -Inf as IEEE 754 rSqrt; MPFR says +Inf) are set directly.
  void eval(Fn f, float x) {
    // gelu and silu of a tiny x are x/2 plus a term ~x^2 that decides the tie
    // when x/2 falls between two subnormals: those need the bits to see it.
    bool tiny = (f == Fn::kGelu || f == Fn::kSilu) && std::fabs(x) < 0x1p-125f;
    mpfr_prec_t prec = tiny ? 320 : kPrec;
    if (mpfr_get_prec(y_) != prec) {
      mpfr_set_prec(y_, prec);
      mpfr_set_prec(t_, prec);
    }
    mpfr_set_flt(x_, x, MPFR_RNDN);
    bool neg_inf = float_bits(x) == 0xff800000u;
    switch (f) {
      case Fn::kExp:
        mpfr_exp(y_, x_, MPFR_RNDN);
        break;
      case Fn::kLog:
        mpfr_log(y_, x_, MPFR_RNDN);
        break;
      case Fn::kTanh:
        mpfr_tanh(y_, x_, MPFR_RNDN);
        break;
      case Fn::kSigmoid:  // 1 / (1 + e^-x)
        mpfr_neg(t_, x_, MPFR_RNDN);
        mpfr_exp(t_, t_, MPFR_RNDN);
        mpfr_add_ui(t_, t_, 1, MPFR_RNDN);
        mpfr_ui_div(y_, 1, t_, MPFR_RNDN);
        break;
      case Fn::kErf:
        mpfr_erf(y_, x_, MPFR_RNDN);
        break;
      case Fn::kGelu:  // x erfc(-x / sqrt 2) / 2, no cancellation for x < 0
        if (neg_inf) {
          mpfr_set_zero(y_, -1);
          break;
        }
        mpfr_sqrt_ui(t_, 2, MPFR_RNDN);
        mpfr_div(t_, x_, t_, MPFR_RNDN);
        mpfr_neg(t_, t_, MPFR_RNDN);
        mpfr_erfc(t_, t_, MPFR_RNDN);
        mpfr_mul(y_, t_, x_, MPFR_RNDN);
        mpfr_div_2ui(y_, y_, 1, MPFR_RNDN);
        break;
      case Fn::kSilu:  // x / (1 + e^-x)
        if (neg_inf) {
          mpfr_set_zero(y_, -1);
          break;
        }
        mpfr_neg(t_, x_, MPFR_RNDN);
        mpfr_exp(t_, t_, MPFR_RNDN);
        mpfr_add_ui(t_, t_, 1, MPFR_RNDN);
        mpfr_div(y_, x_, t_, MPFR_RNDN);
        break;
      case Fn::kRsqrt:
        if (float_bits(x) == kNeg) {
          mpfr_set_inf(y_, -1);
          break;
        }
        mpfr_rec_sqrt(y_, x_, MPFR_RNDN);
        break;
      case Fn::kReciprocal:
        mpfr_ui_div(y_, 1, x_, MPFR_RNDN);
        break;
      case Fn::kSqrt:
        mpfr_sqrt(y_, x_, MPFR_RNDN);
        break;
    }
  }

  // The binary32 nearest to y_ (subnormals and overflow included). Rounded
  // from kPrec bits: used for signs of zero and Inf decisions, not for ulps.
  float nearest() const { return mpfr_get_flt(y_, MPFR_RNDN); }
  double value() const { return mpfr_get_d(y_, MPFR_RNDN); }

  // Error of y in ulps of the exact value; infinity when y is the wrong
  // special (NaN payload, Inf vs finite, sign of a zero).
  double ulp_error(float y) {
    const double kFail = INFINITY;
    if (mpfr_nan_p(y_)) return float_bits(y) == 0x7fc00000u ? 0.0 : kFail;
    float near = nearest();
    if (is_nan(y)) return kFail;
    if (mpfr_inf_p(y_) || mpfr_zero_p(y_) || is_inf(near) || is_inf(y))
      return float_bits(y) == float_bits(near) ? 0.0 : kFail;
    if (y == 0.0f && near == 0.0f && float_bits(y) != float_bits(near)) return kFail;
    long e = static_cast<long>(mpfr_get_exp(y_)) - 1;  // |f(x)| in [2^e, 2^(e+1))
    if (e < -126) e = -126;
    mpfr_set_flt(d_, y, MPFR_RNDN);
    mpfr_sub(d_, d_, y_, MPFR_RNDN);
    mpfr_mul_2si(d_, d_, 23 - e, MPFR_RNDN);
    return std::fabs(mpfr_get_d(d_, MPFR_RNDN));
  }

  // MPFR's correctly rounded binary32 f(x), for the functions MPFR has as one
  // operation (sqrt, rsqrt, reciprocal): computed at 24 bits in binary32's
  // exponent range, then subnormalized.
  float correctly_rounded(Fn f, float x) {
    mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
    mpfr_set_emin(-148);
    mpfr_set_emax(128);
    mpfr_set_flt(x_, x, MPFR_RNDN);
    int t = 0;
    switch (f) {
      case Fn::kRsqrt:
        t = mpfr_rec_sqrt(cr_, x_, MPFR_RNDN);
        break;
      case Fn::kReciprocal:
        t = mpfr_ui_div(cr_, 1, x_, MPFR_RNDN);
        break;
      case Fn::kSqrt:
        t = mpfr_sqrt(cr_, x_, MPFR_RNDN);
        break;
      default:
        FAIL("no single MPFR operation");
        break;
    }
    t = mpfr_check_range(cr_, t, MPFR_RNDN);
    mpfr_subnormalize(cr_, t, MPFR_RNDN);
    float r = mpfr_get_flt(cr_, MPFR_RNDN);
    if (f == Fn::kRsqrt && float_bits(x) == kNeg) r = bits_float(0xff800000u);  // IEEE rSqrt(-0)
    mpfr_set_emin(emin);
    mpfr_set_emax(emax);
    return r;
  }

 private:
  mpfr_t x_, y_, t_, d_, cr_;
};

// A sanitizer build (tests/sanitized.h) samples a quarter as many inputs; the
// edge inputs below are all checked there too.
double sample_scale() {
  const char* s = std::getenv("EMUTRAIN_FUNCTIONS_SCALE");
  double k = s ? std::atof(s) : 1.0;
  return (k > 0 ? k : 1.0) / static_cast<double>(emu::test::sanitized_stride(4));
}

// Inputs that must be right whatever the sample: specials, subnormal and
// overflow boundaries, every branch point and saturation threshold of
// functions.h (with their neighbours).
std::vector<float> edge_inputs() {
  std::vector<uint32_t> bits = {0x00000000u, 0x00000001u, 0x00000002u, 0x007fffffu, 0x00800000u,
                                0x00800001u, 0x3f7fffffu, 0x3f800000u, 0x3f800001u, 0x7f7fffffu,
                                0x7f800000u, 0x7fc00000u, 0x7f800001u, 0x7fffffffu, 0x7fa00000u};
  // clang-format off
  const float edges[] = {
      0x1p-100f, 0x1p-60f,                                   // tiny-argument branches (erf; gelu, silu)
      0.3f, 0.5f, 0.75f,                                     // polynomial / tail switches (tanh; gelu; erf)
      1.0f, 1.5f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f,              // Mills' ratio pieces in gelu (u = |x|)
      0x1.6a09e6p-1f, 0x1.0f876cp+0f, 0x1.6a09e6p+0f,        // ... and in erf (u = sqrt2 |x|): 1/sqrt2 .. 4/sqrt2
      0x1.c48c6p+0f, 0x1.0f876cp+1f, 0x1.3cc8aap+1f, 0x1.6a09e6p+1f,
      0x1.f5a88ap+1f, 0x1.563dbp+2f, 6.0f,                   // erf = 1; gelu = x; gelu's guard
      0x1.205968p+3f, 0x1.cb64eap+3f, 15.0f,                 // tanh = 1; gelu = -0; gelu's guard
      0x1.0ad4ep+4f, 17.0f, 0x1.154246p+4f, 18.0f,           // silu = x, its guard; sigmoid = 1, its guard
      0x1.62e42ep+6f, 0x1.62e43p+6f,                         // exp overflow
      0x1.9fe368p+6f, 0x1.9fe36ap+6f, 0x1.b2a428p+6f, 120.0f,  // exp/sigmoid underflow; silu = -0; guards
      0x1.5d5e5p+6f, 0x1.5f67bep+6f,                         // results just below the normal range
  };
  // clang-format on
  for (float e : edges)
    for (int d = -3; d <= 3; ++d) bits.push_back(float_bits(e) + d);
  std::vector<float> out;
  for (uint32_t b : bits) {
    out.push_back(bits_float(b));
    out.push_back(bits_float(b ^ kNeg));
  }
  return out;
}

std::vector<float> sample_inputs(const FnCase& c) {
  std::vector<float> xs = edge_inputs();
  uint64_t span = 0;
  for (const Range& r : c.domain) span += uint64_t{r.last} - r.first + 1;
  uint64_t points = static_cast<uint64_t>(c.points * sample_scale());
  uint64_t stride = (span / points) | 1;  // odd: the low fraction bits vary too
  for (const Range& r : c.domain)
    for (uint64_t u = r.first; u <= r.last; u += stride) xs.push_back(bits_float(static_cast<uint32_t>(u)));
  for (uint64_t u = 0; u <= 0xffffffffull; u += 65537) xs.push_back(bits_float(static_cast<uint32_t>(u)));
  return xs;
}

struct Stats {
  double max_err = 0;
  float worst_x = 0, worst_y = 0;
  double worst_exact = 0;
  uint64_t n = 0, n_nearest = 0;
  std::vector<std::string> failures;  // wrong specials, or mismatches for correctly rounded functions
};

void record_failure(Stats& s, const FnCase& c, float x, float y, const char* what) {
  if (s.failures.size() < 8) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s(%a) = %a (bits %08x): %s", c.name, x, y, float_bits(y), what);
    s.failures.emplace_back(buf);
  }
}

// Compares one input; the shared core of the sampled and the exhaustive runs.
void check_point(const FnCase& c, Reference& ref, float x, float y, Stats& s) {
  ++s.n;
  if (c.correctly_rounded) {  // bit for bit; the ulp error is only worked out for a mismatch
    float cr = ref.correctly_rounded(c.fn, x);
    if (is_nan(cr) ? float_bits(y) == 0x7fc00000u : float_bits(y) == float_bits(cr)) {
      ++s.n_nearest;
      return;
    }
    record_failure(s, c, x, y, "not correctly rounded");
  }
  ref.eval(c.fn, x);
  double err = ref.ulp_error(y);
  if (!c.correctly_rounded &&
      (float_bits(y) == float_bits(ref.nearest()) || (is_nan(y) && std::isnan(ref.value()))))
    ++s.n_nearest;
  if (!(err <= 1e6)) record_failure(s, c, x, y, "wrong special value (NaN bits, Inf, or sign of zero)");
  if (err > s.max_err) {
    s.max_err = err;
    s.worst_x = x;
    s.worst_y = y;
    s.worst_exact = ref.value();
  }
}

// The 48-bit reference is itself off by up to about 2^-22 ulp.
constexpr double kReferenceSlack = 1e-6;

void print_stats(const FnCase& c, const Stats& s, const char* how) {
  if (c.correctly_rounded) {
    std::printf("%-10s %s: %llu inputs, %llu bit-identical to MPFR's correctly rounded result%s\n", c.name,
                how, static_cast<unsigned long long>(s.n), static_cast<unsigned long long>(s.n_nearest),
                s.n == s.n_nearest ? "" : " (MISMATCHES)");
    return;
  }
  std::printf(
      "%-10s %s: %llu inputs, max %.4f ulp (bound %.2f) at x = %a (%.9g): got %a, exact %.12g; "
      "%.4f%% nearest\n",
      c.name, how, static_cast<unsigned long long>(s.n), s.max_err, c.bound, s.worst_x, s.worst_x, s.worst_y,
      s.worst_exact, 100.0 * s.n_nearest / (s.n ? s.n : 1));
}

// The fixed sweep whose output bits are pinned: every 4099th encoding.
uint64_t determinism_hash(float (*f)(float)) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, 64-bit
  for (uint64_t u = 0; u <= 0xffffffffull; u += 4099) {
    uint32_t y = float_bits(f(bits_float(static_cast<uint32_t>(u))));
    for (int b = 0; b < 4; ++b) {
      h ^= (y >> (8 * b)) & 0xffu;
      h *= 0x100000001b3ull;
    }
  }
  return h;
}

}  // namespace

TEST_CASE("binary32 functions stay within their documented ulp bounds (MPFR)", "[functions]") {
  Reference ref;
  for (const FnCase& c : cases()) {
    SECTION(c.name) {
      Stats s;
      for (float x : sample_inputs(c)) check_point(c, ref, x, c.f(x), s);
      print_stats(c, s, "sampled");
      INFO(c.name << ": max " << s.max_err << " ulp at x = " << s.worst_x);
      for (const std::string& f : s.failures) FAIL_CHECK(f);
      CHECK(s.max_err <= c.bound + kReferenceSlack);
      CHECK(s.n >= static_cast<uint64_t>(c.points * sample_scale()));
    }
  }
}

TEST_CASE("binary32 functions: IEEE special values", "[functions]") {
  const float inf = bits_float(0x7f800000u), nan = bits_float(0x7fc00000u);
  const float ninf = -inf, nz = neg_zero();
  struct Expect {
    float (*f)(float);
    float x;
    float y;
  };
  const Expect expects[] = {
      {emu::fn_exp, ninf, 0.0f},
      {emu::fn_exp, inf, inf},
      {emu::fn_exp, nz, 1.0f},
      {emu::fn_log, 0.0f, ninf},
      {emu::fn_log, nz, ninf},
      {emu::fn_log, -1.0f, nan},
      {emu::fn_log, ninf, nan},
      {emu::fn_log, inf, inf},
      {emu::fn_log, 1.0f, 0.0f},
      {emu::fn_tanh, inf, 1.0f},
      {emu::fn_tanh, ninf, -1.0f},
      {emu::fn_tanh, nz, nz},
      {emu::fn_sigmoid, inf, 1.0f},
      {emu::fn_sigmoid, ninf, 0.0f},
      {emu::fn_sigmoid, nz, 0.5f},
      {emu::fn_erf, inf, 1.0f},
      {emu::fn_erf, ninf, -1.0f},
      {emu::fn_erf, nz, nz},
      {emu::fn_gelu, inf, inf},
      {emu::fn_gelu, ninf, nz},
      {emu::fn_gelu, nz, nz},
      {emu::fn_silu, inf, inf},
      {emu::fn_silu, ninf, nz},
      {emu::fn_silu, nz, nz},
      {emu::fn_rsqrt, 0.0f, inf},
      {emu::fn_rsqrt, nz, ninf},
      {emu::fn_rsqrt, inf, 0.0f},
      {emu::fn_rsqrt, -1.0f, nan},
      {emu::fn_rsqrt, 4.0f, 0.5f},
      {emu::fn_reciprocal, 0.0f, inf},
      {emu::fn_reciprocal, nz, ninf},
      {emu::fn_reciprocal, ninf, nz},
      {emu::fn_reciprocal, 4.0f, 0.25f},
      {emu::fn_sqrt, nz, nz},
      {emu::fn_sqrt, -1.0f, nan},
      {emu::fn_sqrt, inf, inf},
      {emu::fn_sqrt, 0x1p-149f, 0x1.6a09e6p-75f},
  };
  for (const Expect& e : expects) {
    INFO("x = " << e.x << " (bits " << std::hex << float_bits(e.x) << ")");
    CHECK(float_bits(e.f(e.x)) == float_bits(e.y));
  }
  // Every NaN input gives the one canonical NaN, whatever its sign and payload.
  for (uint32_t nb : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu, 0x7fa5a5a5u}) {
    for (const FnCase& c : cases()) {
      INFO(c.name << " of NaN bits " << std::hex << nb);
      CHECK(float_bits(c.f(bits_float(nb))) == 0x7fc00000u);
    }
  }
}

// Pins the output bits: any change (an edit to functions.h, a compiler that
// fuses a*b+c, flushed subnormals) changes a hash. The CUDA backend must give
// the same hashes over the same sweep. After a deliberate change, re-measure
// (docs/functions.md) and update the constants above.
TEST_CASE("binary32 functions: output bits are pinned", "[functions]") {
  for (const FnCase& c : cases()) {
    INFO(c.name << ": hash 0x" << std::hex << determinism_hash(c.f));
    CHECK(determinism_hash(c.f) == c.golden);
  }
}

// ---------------------------------------------------------------------------
// Exhaustive, by hand (hours on one core): test_functions "[.exhaustive]",
// optionally EMUTRAIN_FUNCTIONS_ONLY=exp,log. Every encoding is compared with
// a binary64 libm value first (glibc: within a few binary64 ulps, i.e. about
// 2^-27 binary32 ulp here); MPFR decides every input whose estimate comes
// within 0.02 ulp of the running maximum, every special and every input of a
// correctly rounded function that is not obviously correctly rounded.
namespace {

double libm_reference(Fn f, double x) {
  switch (f) {
    case Fn::kExp:
      return std::exp(x);
    case Fn::kLog:
      return std::log(x);
    case Fn::kTanh:
      return std::tanh(x);
    case Fn::kSigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case Fn::kErf:
      return std::erf(x);
    case Fn::kGelu:
      return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    case Fn::kSilu:
      return x / (1.0 + std::exp(-x));
    case Fn::kRsqrt:
      return 1.0 / std::sqrt(x);
    case Fn::kReciprocal:
      return 1.0 / x;
    case Fn::kSqrt:
      return std::sqrt(x);
  }
  return NAN;
}

bool selected(const char* name) {
  const char* only = std::getenv("EMUTRAIN_FUNCTIONS_ONLY");
  if (!only) return true;
  std::string list = std::string(",") + only + ",";
  return list.find(std::string(",") + name + ",") != std::string::npos;
}

}  // namespace

TEST_CASE("binary32 functions: every input (by hand)", "[.exhaustive]") {
  Reference ref;
  for (const FnCase& c : cases()) {
    if (!selected(c.name)) continue;
    Stats s;
    double max_estimate = 0;
    uint64_t decided_by_mpfr = 0;
    for (uint64_t u = 0; u <= 0xffffffffull; ++u) {
      float x = bits_float(static_cast<uint32_t>(u));
      float y = c.f(x);
      double r = libm_reference(c.fn, x);
      // Decided here when the binary64 value leaves no doubt; else by MPFR.
      bool easy = false;
      double est = 0;
      if (std::isnan(r)) {
        easy = float_bits(y) == 0x7fc00000u;
      } else if (std::fabs(r) > 0x1.ffffffp+127 * (1 + 0x1p-30)) {  // surely overflows
        easy = is_inf(y) && std::signbit(y) == std::signbit(r);
      } else if (std::fabs(r) < 0x1p-150 * (1 - 0x1p-30)) {  // surely rounds to zero
        easy = y == 0.0f && std::signbit(y) == std::signbit(r);
      } else if (!is_nan(y) && !is_inf(y) && std::fabs(r) < 0x1.ffffffp+127 * (1 - 0x1p-30)) {
        int e = std::ilogb(r);
        if (e < -126) e = -126;
        est = std::fabs(static_cast<double>(y) - r) / std::ldexp(1.0, e - 23);
        bool zero_ok = y != 0.0f || std::signbit(y) == std::signbit(r);
        double cut = c.correctly_rounded ? 0.5 - 0x1p-20 : std::max(0.45, max_estimate - 0.02);
        easy = zero_ok && est < cut;
      }
      if (easy) {
        ++s.n;
        if (est < 0.5 - 0x1p-20) ++s.n_nearest;  // nearest, as far as binary64 can tell
        continue;
      }
      ++decided_by_mpfr;
      check_point(c, ref, x, y, s);
      if (est > max_estimate) max_estimate = est;
    }
    char how[64];
    std::snprintf(how, sizeof how, "exhaustive (%llu decided by MPFR)",
                  static_cast<unsigned long long>(decided_by_mpfr));
    print_stats(c, s, how);
    INFO(c.name);
    for (const std::string& f : s.failures) FAIL_CHECK(f);
    CHECK(s.max_err <= c.bound + kReferenceSlack);
  }
}
