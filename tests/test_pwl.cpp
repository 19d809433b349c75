// Piecewise-linear function approximations (numerics/pwl.h, docs/functions.md):
//  * pwl:3 tanh and sigmoid: breakpoints, values, slopes and intercepts against
//    hand-computed float64 numbers;
//  * every piece evaluates as R(R(slope*x) + intercept) bit for bit against a
//    separate evaluation with round_value on doubles and a linear piece search,
//    in several formats, at random points, at every breakpoint and beyond;
//  * saturation outside the interval (constant, identity, extended edge piece);
//  * continuity at the interior breakpoints within one rounding of the format;
//  * the policy key: pwl:<K>, user breakpoints, and errors naming key, value and token.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/backend_ops_elementwise.h"
#include "core/numerics_policy.h"
#include "numerics/element_arith.h"
#include "numerics/format_spec.h"
#include "numerics/pwl.h"
#include "numerics/round.h"

using namespace emu;

namespace {

constexpr PwlFunction kAll[] = {PwlFunction::Exp, PwlFunction::Tanh, PwlFunction::Sigmoid, PwlFunction::Gelu,
                                PwlFunction::Silu};

uint32_t bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

// The documented evaluation, written separately: the piece by a linear scan,
// the roundings by round_value on binary64 values.
float reference(const FunctionApprox& fa, const Format& f, float x) {
  const int K = fa.pieces;
  if (std::isnan(x)) return static_cast<float>(round_value(f, x));
  int k = -1;
  if (x < fa.breaks[0]) {
    if (fa.below_side == PwlSide::Constant) return static_cast<float>(round_value(f, fa.below));
    if (fa.below_side == PwlSide::Identity) return static_cast<float>(round_value(f, x));
    k = 0;
  } else if (x > fa.breaks[K]) {
    if (fa.above_side == PwlSide::Constant) return static_cast<float>(round_value(f, fa.above));
    if (fa.above_side == PwlSide::Identity) return static_cast<float>(round_value(f, x));
    k = K - 1;
  } else {
    for (int j = 0; j < K; ++j)
      if (fa.breaks[j] <= x) k = j;
  }
  const double p = round_value(f, static_cast<double>(fa.slope[k]) * static_cast<double>(x));
  return static_cast<float>(round_value(f, p + static_cast<double>(fa.intercept[k])));
}

float evaluate(const FunctionApprox& fa, const Format& f, float x) {
  ElementArith a(f, 0, 0);
  return pwl_value(fa, a, x, 0, 1);
}

// Unit in the last place of format f at |v| (IEEE-like formats).
double ulp_of(const Format& f, double v) {
  const int emin = 1 - ((1 << (f.exp_bits - 1)) - 1);
  const int e = std::max(static_cast<int>(std::floor(std::log2(std::fabs(v)))), emin);
  return std::ldexp(1.0, e - f.man_bits);
}

}  // namespace

TEST_CASE("pwl:3 tanh and sigmoid: hand-computed breakpoints, values and constants", "[pwl]") {
  const FunctionApprox t = make_pwl(PwlFunction::Tanh, 3);
  REQUIRE(t.pwl());
  REQUIRE(t.pieces == 3);
  CHECK(std::vector<float>(t.breaks, t.breaks + 4) == std::vector<float>{-3.0f, -1.0f, 1.0f, 3.0f});
  // tanh(1) = 0.7615941559557649, tanh(3) = 0.9950547536867305.
  CHECK(t.values[2] == Approx(0.7615941559557649).epsilon(1e-7));
  CHECK(t.values[3] == Approx(0.9950547536867305).epsilon(1e-7));
  CHECK(t.values[0] == -t.values[3]);
  CHECK(t.values[1] == -t.values[2]);
  // Middle piece: (tanh 1 - tanh -1) / 2 = tanh 1 exactly, intercept 0.
  CHECK(t.slope[1] == t.values[2]);
  CHECK(t.intercept[1] == 0.0f);
  // Outer pieces: (0.9950547536867305 - 0.7615941559557649) / 2 = 0.1167302988654828,
  // intercept -0.9950547536867305 + 3 * that = -0.6448638570902821 (and mirrored).
  CHECK(t.slope[0] == Approx(0.1167302988654828).epsilon(1e-6));
  CHECK(t.slope[2] == t.slope[0]);
  CHECK(t.intercept[0] == Approx(-0.6448638570902821).epsilon(1e-6));
  CHECK(t.intercept[2] == -t.intercept[0]);
  CHECK(t.below_side == PwlSide::Constant);
  CHECK(t.below == -1.0f);
  CHECK(t.above == 1.0f);

  const FunctionApprox s = make_pwl(PwlFunction::Sigmoid, 3);
  CHECK(std::vector<float>(s.breaks, s.breaks + 4) == std::vector<float>{-6.0f, -2.0f, 2.0f, 6.0f});
  // sigmoid(2) = 0.8807970779778823, sigmoid(6) = 0.9975273768433653.
  CHECK(s.values[2] == Approx(0.8807970779778823).epsilon(1e-7));
  CHECK(s.values[3] == Approx(0.9975273768433653).epsilon(1e-7));
  // Middle: (0.8808 - 0.1192) / 4 = 0.19039853898894116, intercept 0.5.
  CHECK(s.slope[1] == Approx(0.19039853898894116).epsilon(1e-6));
  CHECK(s.intercept[1] == Approx(0.5).epsilon(1e-7));
  // Left: (0.11920292202211755 - 0.0024726231566347743) / 4 = 0.029182574716370694,
  // intercept 0.0024726231566347743 + 6 * that = 0.17756807145485894.
  CHECK(s.slope[0] == Approx(0.029182574716370694).epsilon(1e-6));
  CHECK(s.intercept[0] == Approx(0.17756807145485894).epsilon(1e-6));
  CHECK(s.below == 0.0f);
  CHECK(s.above == 1.0f);

  // The constants are the documented binary64 formulas rounded once.
  for (PwlFunction f : kAll)
    for (int K : {1, 3, 7, 32}) {
      const FunctionApprox fa = make_pwl(f, K);
      for (int k = 0; k < K; ++k) {
        const double s =
            (double(fa.values[k + 1]) - fa.values[k]) / (double(fa.breaks[k + 1]) - fa.breaks[k]);
        CHECK(bits(fa.slope[k]) == bits(static_cast<float>(s)));
        CHECK(bits(fa.intercept[k]) ==
              bits(static_cast<float>(double(fa.values[k]) - double(fa.slope[k]) * fa.breaks[k])));
        CHECK(bits(fa.values[k]) == bits(pwl_exact(f, fa.breaks[k])));
      }
    }
}

TEST_CASE("pwl pieces evaluate as R(R(slope*x) + intercept) bit for bit", "[pwl]") {
  std::mt19937_64 rng(7);
  for (const char* spec : {"fp32", "bf16", "e5m10", "fp8_e4m3", "e5m2:rup", "e4m3:rtz:sat", "posit16_1"}) {
    const Format f = parse_format(spec);
    for (PwlFunction fn : kAll)
      for (int K : {1, 3, 8, 32}) {
        const FunctionApprox fa = make_pwl(fn, K);
        const float lo = fa.breaks[0], hi = fa.breaks[K];
        std::uniform_real_distribution<float> u(lo - 3.0f, hi + 3.0f);
        std::vector<float> xs = {-std::numeric_limits<float>::infinity(),
                                 std::numeric_limits<float>::infinity(), std::nanf(""), 0.0f, -0.0f};
        for (int k = 0; k <= K; ++k) {
          xs.push_back(fa.breaks[k]);
          xs.push_back(std::nextafter(fa.breaks[k], -INFINITY));
          xs.push_back(std::nextafter(fa.breaks[k], INFINITY));
        }
        for (int i = 0; i < 400; ++i) xs.push_back(u(rng));
        for (float x : xs) {
          const float got = evaluate(fa, f, x), want = reference(fa, f, x);
          INFO(spec << " " << pwl_function_name(fn) << " pwl:" << K << " x=" << x << " got " << got
                    << " want " << want);
          REQUIRE(((std::isnan(got) && std::isnan(want)) || bits(got) == bits(want)));
        }
      }
  }
}

TEST_CASE("pwl saturation outside the interval", "[pwl]") {
  const Format fp32;
  const float inf = std::numeric_limits<float>::infinity();
  const FunctionApprox t = make_pwl(PwlFunction::Tanh, 3), s = make_pwl(PwlFunction::Sigmoid, 3),
                       e = make_pwl(PwlFunction::Exp, 4), g = make_pwl(PwlFunction::Gelu, 3),
                       si = make_pwl(PwlFunction::Silu, 3);
  for (float x : {-3.0001f, -5.0f, -100.0f, -inf}) CHECK(evaluate(t, fp32, x) == -1.0f);
  for (float x : {3.0001f, 5.0f, 1e30f, inf}) CHECK(evaluate(t, fp32, x) == 1.0f);
  for (float x : {-6.5f, -inf}) CHECK(bits(evaluate(s, fp32, x)) == bits(0.0f));
  for (float x : {6.5f, inf}) CHECK(evaluate(s, fp32, x) == 1.0f);
  // exp: 0 below -8; above 0 the last piece continues.
  CHECK(bits(evaluate(e, fp32, -8.5f)) == bits(0.0f));
  CHECK(bits(evaluate(e, fp32, -inf)) == bits(0.0f));
  CHECK(evaluate(e, fp32, 1.0f) == e.slope[3] + e.intercept[3]);  // exact in binary32 here
  CHECK(evaluate(e, fp32, inf) == inf);
  // gelu, silu: 0 below, the identity above (rounded to the format).
  CHECK(bits(evaluate(g, fp32, -4.5f)) == bits(0.0f));
  CHECK(evaluate(g, fp32, 4.5f) == 4.5f);
  CHECK(evaluate(si, fp32, 8.25f) == 8.25f);
  CHECK(evaluate(si, parse_format("e4m3"), 9.3f) == quantize(parse_format("e4m3"), 9.3f));
  CHECK(bits(evaluate(si, fp32, -9.0f)) == bits(0.0f));
  // Their derivatives: 0 on a constant side, 1 on the identity, the edge slope extended.
  CHECK(pwl_slope(t, -5.0f) == 0.0f);
  CHECK(pwl_slope(t, 5.0f) == 0.0f);
  CHECK(pwl_slope(g, 5.0f) == 1.0f);
  CHECK(pwl_slope(e, 2.0f) == e.slope[3]);
  CHECK(pwl_slope(t, 0.5f) == t.slope[1]);
  CHECK(pwl_slope(t, -1.0f) == t.slope[1]);  // a breakpoint takes the piece to its right
  CHECK(pwl_slope(t, 3.0f) == t.slope[2]);   // b_K belongs to the last piece
  CHECK(std::isnan(pwl_slope(t, std::nanf(""))));
  CHECK(std::isnan(evaluate(t, fp32, std::nanf(""))));
}

TEST_CASE("pwl is continuous at the breakpoints within one rounding", "[pwl]") {
  // At an interior breakpoint b_k the piece to the left, continued to b_k, and
  // the piece to the right differ by at most one rounding of each of their
  // operations and of the binary32 constants: ulp(M) + ulp(v_k) in the format
  // plus ulp_fp32(M), M the largest magnitude among the products slope * b_k and
  // the intercepts (where the pieces cancel, M is well above |v_k|).
  for (const char* spec : {"bf16", "e5m10", "fp32"}) {
    const Format f = parse_format(spec);
    double worst = 0;  // in units of the bound
    for (PwlFunction fn : kAll)
      for (int K : {2, 3, 8, 32}) {
        const FunctionApprox fa = make_pwl(fn, K);
        ElementArith a(f, 0, 0);
        for (int k = 1; k < K; ++k) {
          const float b = fa.breaks[k];
          const float left = a.add(a.mul(fa.slope[k - 1], b, 0), fa.intercept[k - 1], 0);
          const float right = evaluate(fa, f, b);
          if (fa.values[k] == 0.0f) {
            CHECK(std::fabs(left - right) <= 1e-6);
            continue;
          }
          const double M =
              std::max({std::fabs(double(fa.slope[k - 1]) * b), std::fabs(double(fa.slope[k]) * b),
                        std::fabs(double(fa.intercept[k - 1])), std::fabs(double(fa.intercept[k]))});
          const double d = std::fabs(double(left) - right) /
                           (ulp_of(f, M) + ulp_of(f, fa.values[k]) + ulp_of(Format{}, M));
          INFO(spec << " " << pwl_function_name(fn) << " pwl:" << K << " b=" << b << " left " << left
                    << " right " << right);
          CHECK(d <= 1.0);
          worst = std::max(worst, d);
        }
      }
    WARN(spec << ": worst jump at a breakpoint " << worst << " of the bound");
  }
}

TEST_CASE("functions.* policy: pwl:<K>, user breakpoints and errors naming key, value and token", "[pwl]") {
  NumericsPolicy p;
  p.set("functions.tanh", "pwl:3");
  p.set("functions.sigmoid", "pwl:-4,-1,0,1,4");
  p.set("functions.softmax_exp", "pwl:8");
  p.set_override("head", "functions.tanh", "exact");
  const LayerNumerics n = p.resolve("rnn");
  CHECK(n.function(Function::Tanh).pwl());
  CHECK(n.function(Function::Tanh).pieces == 3);
  CHECK(n.function(Function::Tanh).fn == PwlFunction::Tanh);
  const FunctionApprox& s = n.function(Function::Sigmoid);
  REQUIRE(s.pieces == 4);
  CHECK(std::vector<float>(s.breaks, s.breaks + 5) == std::vector<float>{-4, -1, 0, 1, 4});
  CHECK(s.values[2] == 0.5f);
  CHECK(s.below == 0.0f);
  CHECK(n.function(Function::SoftmaxExp).fn == PwlFunction::Exp);
  CHECK(n.function(Function::SoftmaxExp).breaks[0] == -8.0f);
  CHECK_FALSE(n.function(Function::Gelu).pwl());
  CHECK_FALSE(p.resolve("head").function(Function::Tanh).pwl());
  CHECK(n.describe().find("tanh=pwl:3 [-3, 3]") != std::string::npos);
  CHECK(n.describe().find("sigmoid=pwl:-4,-1,0,1,4") != std::string::npos);

  auto message = [](const std::string& key, const std::string& value) {
    NumericsPolicy q;
    try {
      q.set(key, value);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto has = [](const std::string& m, const std::string& part) {
    INFO(m);
    CHECK(m.find(part) != std::string::npos);
  };
  std::string m = message("functions.tanh", "pwl:-3,abc,3");
  has(m, "numerics.default.functions.tanh");
  has(m, "'pwl:-3,abc,3'");
  has(m, "'abc'");
  m = message("functions.tanh", "pwl:-3,,3");
  has(m, "breakpoint ''");
  m = message("functions.sigmoid", "pwl:1,0.5,2");
  has(m, "'0.5' follows '1'");
  m = message("functions.gelu", "pwl:0");
  has(m, "piece count '0'");
  has(m, "1 to 32");
  m = message("functions.gelu", "pwl:33");
  has(m, "piece count '33'");
  m = message("functions.silu", "pwl:2.5");
  has(m, "'2.5'");
  m = message("functions.exp", "pwl:");
  has(m, "after 'pwl:'");
  m = message("functions.tanh", "linear");
  has(m, "allowed: exact, pwl:<K>");
  m = message("functions.log", "pwl:3");
  has(m, "numerics.default.functions.log");
  has(m, "allowed: exact");
  m = message("functions.tanh", "pwl:1e39,2");
  has(m, "'1e39'");
  has(m, "binary32 range");
  m = message("functions.tanh", "pwl:5");
  CHECK(m == "no error");
  std::string many = "pwl:0";
  for (int i = 1; i <= 33; ++i) many += "," + std::to_string(i);
  has(message("functions.tanh", many), "2 to 33 breakpoints");
}
