// Approximate multipliers as mantissa tables (numerics/approx_mul.h): the
// built-in models against hand-checked closed forms, the table against its
// model on every pair of e5m7 codes, special values, overflow, underflow and
// subnormals against hand-derived values, spec errors and table validation.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "numerics/approx_mul.h"
#include "numerics/format_spec.h"
#include "numerics/round.h"
#include "tests/sanitized.h"

using namespace emu;

namespace {

uint64_t bits(double v) { return double_bits(v); }

// Mitchell's product of two significands in [1, 2), from the closed form
// (independent of the implementation): xa + xb < 1 ? 1 + xa + xb : 2 (xa + xb).
double mitchell_closed_form(double a, double b) {
  const double s = (a - 1.0) + (b - 1.0);
  return s < 1.0 ? 1.0 + s : 2.0 * s;
}

// The message of the ApproxMulError `f` throws ("" if none).
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const ApproxMulError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("Mitchell's model matches the closed form on hand-checked pairs", "[approx_mul]") {
  // 1.5 x 1.5: xa + xb = 1 -> 2^1 * 1.0 = 2 (exact product 2.25).
  CHECK(approx_mul_mitchell(1.5f, 1.5f) == 2.0f);
  // 1.25 x 1.25: 0.5 < 1 -> 1.5 (exact 1.5625).
  CHECK(approx_mul_mitchell(1.25f, 1.25f) == 1.5f);
  // 1.75 x 1.5: 1.25 >= 1 -> 2 * 1.25 = 2.5 (exact 2.625).
  CHECK(approx_mul_mitchell(1.75f, 1.5f) == 2.5f);
  // 3 x 0.75 = (2 * 1.5) (2^-1 * 1.5) -> 2^0 * 2 * 1.0 = 2 (exact 2.25); signs exact.
  CHECK(approx_mul_mitchell(3.0f, 0.75f) == 2.0f);
  CHECK(approx_mul_mitchell(-3.0f, 0.75f) == -2.0f);
  CHECK(approx_mul_mitchell(-3.0f, -0.75f) == 2.0f);
  // Powers of two are exact; 1 x b = b.
  CHECK(approx_mul_mitchell(0.125f, 1024.0f) == 128.0f);
  CHECK(approx_mul_mitchell(1.0f, 1.3f) == 1.3f);
  // A binary32 subnormal operand is normalised: 2^-140 * 1.5 x 1.5 -> 2^-139.
  CHECK(approx_mul_mitchell(std::ldexp(1.5f, -140), 1.5f) == std::ldexp(1.0f, -139));
  // Every pair of 8-bit significands against the closed form (all exact in binary32).
  for (int i = 0; i < 256; ++i)
    for (int j = 0; j < 256; ++j) {
      const double a = 1.0 + i / 256.0, b = 1.0 + j / 256.0;
      REQUIRE(approx_mul_mitchell(static_cast<float>(a), static_cast<float>(b)) ==
              mitchell_closed_form(a, b));
    }
}

TEST_CASE("trunc<k> truncates both significands to k fraction bits, then multiplies exactly",
          "[approx_mul]") {
  // 1.875 = 1.111b -> 1.11b = 1.75 at k = 2: 1.75 * 1.75 = 3.0625.
  CHECK(approx_mul_trunc(2, 1.875f, 1.875f) == 3.0625f);
  // k = 0: every significand becomes 1: 1.99 * 2^3 x 1.5 * 2^-2 -> 2^1.
  CHECK(approx_mul_trunc(0, 1.99f * 8, -0.375f) == -2.0f);
  // k = 23 is the exact product rounded to binary32.
  CHECK(approx_mul_trunc(23, 1.1f, 1.3f) == 1.1f * 1.3f);
  // Through the registry by name, and a bad k.
  CHECK(find_approx_mul("trunc2")(1.875f, 1.875f) == 3.0625f);
  CHECK(contains(error_of([] { find_approx_mul("trunc24"); }), "unknown approximate multiplier 'trunc24'"));
}

TEST_CASE("the e5m7 table entries of Mitchell's multiplier", "[approx_mul]") {
  const ApproxMulTable t = build_approx_table("mitchell", parse_format("e5m7"));
  REQUIRE(t.entries.size() == 128u * 128u);
  // 1.5 x 1.5 (mantissas 0x40, 0x40) = 2.0: carry 1, fraction 0.
  CHECK(t.entries[(0x40 << 7) | 0x40] == (1u << 7));
  // 1.25 x 1.25 (0x20, 0x20) = 1.5: carry 0, fraction 0x40.
  CHECK(t.entries[(0x20 << 7) | 0x20] == 0x40);
  // 1.75 x 1.5 (0x60, 0x40) = 2.5 = 2 * 1.25: carry 1, fraction 0x20.
  CHECK(t.entries[(0x60 << 7) | 0x40] == ((1u << 7) | 0x20));
  CHECK(approx_mul_value(t, 1.5f, 1.5f) == 2.0);
  CHECK(approx_mul_value(t, -3.0f, 0.75f) == -2.0);
  CHECK(t.spec() == "lut:mitchell:e5m7");
  // Every entry against the closed form (7-bit significands: xa + xb has 7
  // fraction bits, so 1 + xa + xb fits and 2 (xa + xb) needs no rounding either).
  for (uint32_t ma = 0; ma < 128; ++ma)
    for (uint32_t mb = 0; mb < 128; ++mb) {
      const double want = mitchell_closed_form(1.0 + ma / 128.0, 1.0 + mb / 128.0);
      const uint32_t carry = want >= 2.0 ? 1 : 0;
      const uint32_t frac = static_cast<uint32_t>((want / (1 << carry) - 1.0) * 128.0);
      REQUIRE(t.entries[(ma << 7) | mb] == ((carry << 7) | frac));
      REQUIRE(approx_mul_value(t, static_cast<float>(std::ldexp(1.0 + ma / 128.0, 3)),
                               static_cast<float>(-std::ldexp(1.0 + mb / 128.0, -5))) ==
              -std::ldexp(want, -2));
    }
}

// Every pair of e5m7 codes (2^13 x 2^13): the table equals its model rounded
// into e5m7 wherever that result is finite and normal, and also where it
// overflows (both become Inf); zeros, Inf and NaN give IEEE's product rounded
// into e5m7; subnormal results equal the documented two roundings (the model's
// significand product rounded to 7 fraction bits, then the scaled value into
// e5m7), and under :rtz (truncations nest) simply R(model).
TEST_CASE("every e5m7 pair: the table equals its functional model", "[approx_mul][exhaustive]") {
  struct Case {
    const char* model;
    const char* format;
  };
  for (const Case c : {Case{"mitchell", "e5m7"}, Case{"trunc4", "e5m7"}, Case{"mitchell", "e5m7:rtz"}}) {
    INFO(c.model << " " << c.format);
    const Format f = parse_format(c.format);
    const ApproxMulTable t = build_approx_table(c.model, f);
    const ApproxMulFn model = find_approx_mul(c.model);
    Format sig_round = parse_format("e8m7");
    sig_round.rounding = f.rounding;
    std::vector<float> values(1u << 13);
    for (uint32_t code = 0; code < values.size(); ++code) values[code] = static_cast<float>(decode(f, code));
    int64_t normal = 0, overflow = 0, underflow = 0, special = 0;
    // A sanitizer build (tests/sanitized.h) pairs every a with every 7th b.
    const int64_t b_stride = test::sanitized_stride(7);
    const int64_t n = static_cast<int64_t>(values.size());
    for (const float a : values) {
      for (int64_t bi = 0; bi < n; bi += b_stride) {
        const float b = values[static_cast<size_t>(bi)];
        const double got = approx_mul_value(t, a, b);
        const bool finite_nonzero = a != 0 && b != 0 && std::isfinite(a) && std::isfinite(b);
        double want;
        if (!finite_nonzero) {
          want = round_value(f, static_cast<double>(a) * static_cast<double>(b));
          ++special;
        } else {
          const float m = model(a, b);
          want = round_value(f, m);
          const double mag = std::fabs(want);
          if (std::fabs(m) > f.max_finite) {
            ++overflow;  // Inf, or the largest finite value under :rtz
          } else if (mag < f.min_normal) {
            // Two roundings: the significands' product at exponent 0, then the scaled value.
            int ea, eb;
            const double sa = 2 * std::frexp(std::fabs(a), &ea), sb = 2 * std::frexp(std::fabs(b), &eb);
            const double sig = round_value(sig_round, model(static_cast<float>(sa), static_cast<float>(sb)));
            const double two_step = round_value(f, std::copysign(std::ldexp(sig, ea + eb - 2), a * b));
            if (f.rounding == Rounding::NearestEven) {
              want = two_step;
            } else if (bits(two_step) != bits(want)) {  // :rtz: both agree
              FAIL_CHECK("rtz two-step a " << a << " b " << b);
              return;
            }
            ++underflow;
          } else {
            ++normal;
          }
        }
        if (bits(got) != bits(want)) {
          FAIL_CHECK("a " << a << " b " << b << " table " << got << " want " << want);
          return;
        }
      }
    }
    INFO("normal " << normal << " overflow " << overflow << " underflow " << underflow << " special "
                   << special);
    CHECK(normal + overflow + underflow + special == n * ((n + b_stride - 1) / b_stride));
    CHECK(normal > 10000000 / b_stride);
    CHECK(overflow > 1000000 / b_stride);
    CHECK(underflow > 1000000 / b_stride);
    CHECK(special > 100000 / b_stride);
  }
}

TEST_CASE("trunc<k> with k >= Y is the correctly rounded product in the normal range", "[approx_mul]") {
  // An independent reference: R(a b) from the exact product, for every pair of
  // bf16 significands (e8m7) at two exponents.
  const Format f = parse_format("bf16");
  const ApproxMulTable t = build_approx_table("trunc7", f);
  for (int i = 0; i < 128; ++i)
    for (int j = 0; j < 128; ++j) {
      const float a = std::ldexp(1.0f + i / 128.0f, 5), b = -std::ldexp(1.0f + j / 128.0f, -9);
      REQUIRE(bits(approx_mul_value(t, a, b)) == bits(format_mul(f, a, b)));
    }
}

TEST_CASE("zeros, Inf, NaN, overflow, underflow and subnormals (hand-derived)", "[approx_mul]") {
  const ApproxMulTable t = build_approx_table("mitchell", parse_format("e5m7"));
  auto mul = [&](float a, float b) { return approx_mul_value(t, a, b); };
  // Zeros: 0 x 4 = +0 (the published simulator gives 2.35e-38), signs as IEEE.
  CHECK(bits(mul(0.0f, 4.0f)) == bits(0.0));
  CHECK(bits(mul(-0.0f, 4.0f)) == bits(-0.0));
  CHECK(bits(mul(0.0f, -4.0f)) == bits(-0.0));
  CHECK(bits(mul(-0.0f, -4.0f)) == bits(0.0));
  // Inf and NaN.
  CHECK(mul(INFINITY, 2.0f) == INFINITY);
  CHECK(mul(INFINITY, -2.0f) == -INFINITY);
  CHECK(std::isnan(mul(INFINITY, 0.0f)));
  CHECK(std::isnan(mul(NAN, 1.0f)));
  CHECK(std::isnan(mul(1.0f, NAN)));
  // Overflow: e5m7 max is (2 - 2^-7) 2^15 = 65280; 2^8 x 2^8 = 2^16 -> Inf (no wrap-around).
  CHECK(mul(256.0f, 256.0f) == INFINITY);
  CHECK(mul(-256.0f, 256.0f) == -INFINITY);
  // 1.5 * 2^7 x 1.5 * 2^7 -> Mitchell 2 * 2^14 = 2^15 = 32768, in range.
  CHECK(mul(192.0f, 192.0f) == 32768.0);
  // :sat gives the largest finite value instead.
  const ApproxMulTable sat = build_approx_table("mitchell", parse_format("e5m7:sat"));
  CHECK(approx_mul_value(sat, 256.0f, 256.0f) == 65280.0);
  CHECK(approx_mul_value(sat, -256.0f, 256.0f) == -65280.0);
  // fp8_e4m3 ("fn", max 448 = 1.75 * 2^8): 16 x 32 = 512 -> NaN; 15 x 30 ->
  // 1.875 * 2^3 x 1.875 * 2^4: xa + xb = 1.75 -> 2^8 * 1.75 = 448 exactly.
  const ApproxMulTable e4m3 = build_approx_table("mitchell", parse_format("fp8_e4m3"));
  CHECK(std::isnan(approx_mul_value(e4m3, 16.0f, 32.0f)));
  CHECK(approx_mul_value(e4m3, 15.0f, 30.0f) == 448.0);
  // Underflow (e5m7: min normal 2^-14, min subnormal 2^-21):
  // 2^-10 x 2^-10 = 2^-20, a subnormal, exact.
  CHECK(mul(std::ldexp(1.0f, -10), std::ldexp(1.0f, -10)) == std::ldexp(1.0, -20));
  // 2^-11 x 2^-11 = 2^-22: half the smallest subnormal, ties to even -> +0.
  CHECK(bits(mul(std::ldexp(1.0f, -11), std::ldexp(1.0f, -11))) == bits(0.0));
  // 1.5 * 2^-11 x 2^-11 -> 1.5 * 2^-22 = 0.75 * 2^-21 -> 2^-21 (and negative).
  CHECK(mul(std::ldexp(1.5f, -11), std::ldexp(1.0f, -11)) == std::ldexp(1.0, -21));
  CHECK(mul(-std::ldexp(1.5f, -11), std::ldexp(1.0f, -11)) == -std::ldexp(1.0, -21));
  // :nosub flushes the subnormal result to a signed zero.
  const ApproxMulTable nosub = build_approx_table("mitchell", parse_format("e5m7:nosub"));
  CHECK(bits(approx_mul_value(nosub, std::ldexp(1.0f, -10), std::ldexp(1.0f, -10))) == bits(0.0));
  CHECK(bits(approx_mul_value(nosub, -std::ldexp(1.0f, -10), std::ldexp(1.0f, -10))) == bits(-0.0));
  // Subnormal operands are normalised: 3 * 2^-21 = 1.5 * 2^-20 (a subnormal of
  // e5m7) x 1.5 -> 2^-20 * 2 = 2^-19 (the exact product would be 1.125 * 2^-18).
  CHECK(mul(3 * std::ldexp(1.0f, -21), 1.5f) == std::ldexp(1.0, -19));
  CHECK(mul(std::ldexp(1.0f, -20), 1024.0f) == std::ldexp(1.0, -10));
  // Operands are rounded into e5m7 first: 1 + 2^-8 -> 1 (tie to even), 1 + 3 * 2^-9 -> 1 + 2^-7.
  CHECK(mul(1.0f + std::ldexp(1.0f, -8), 1.5f) == 1.5);
  CHECK(mul(1.0f + 3 * std::ldexp(1.0f, -9), 1.5f) == 1.5 + std::ldexp(1.0, -7));
  // An operand beyond e5m7's range reads as Inf.
  CHECK(mul(1e6f, 1.0f) == INFINITY);
}

TEST_CASE("approximate multiplier specs and their errors", "[approx_mul]") {
  CHECK(is_approx_mul_spec("lut:mitchell:e5m7"));
  CHECK_FALSE(is_approx_mul_spec("e5m7"));
  const ApproxMulSpec s = parse_approx_mul_spec("lut:trunc4:bf16:rtz");
  CHECK(s.name == "trunc4");
  CHECK(format_name(s.format) == "bf16:rtz");
  std::string e = error_of([] { parse_approx_mul_spec("lut:nosuch:e5m7"); });
  CHECK(contains(e, "'nosuch'"));
  CHECK(contains(e, "mitchell, trunc<k>"));
  CHECK(contains(error_of([] { parse_approx_mul_spec("lut:mitchell"); }), "lut:<name>:<format>"));
  CHECK(
      contains(error_of([] { parse_approx_mul_spec("lut:mitchell:e5m12"); }), "more than 11 fraction bits"));
  CHECK(contains(error_of([] { parse_approx_mul_spec("lut:mitchell:fp32"); }), "more than 11 fraction bits"));
  CHECK(contains(error_of([] { parse_approx_mul_spec("lut:mitchell:posit8_0"); }), "not an eXmY"));
  CHECK(contains(error_of([] { parse_approx_mul_spec("lut:mitchell:e5m7:rup"); }), "rne, rtz or rna"));
  CHECK(contains(error_of([] { parse_approx_mul_spec("lut:mitchell:e5m7:sr"); }), "rne, rtz or rna"));
  CHECK(contains(error_of([] { parse_approx_mul_spec("lut:mitchell:e12m7"); }), "bad format 'e12m7'"));
  CHECK(contains(error_of([] { parse_approx_mul_spec("lut:mitchell:e9m7"); }), "not an eXmY storage format"));
  // Policies carry the table.
  MacPolicy p;
  set_approx_mul(p, "lut:mitchell:e5m7");
  CHECK(has_approx_mul(p.lut));
  CHECK_FALSE(p.mul_exact);
  CHECK(format_name(p.mul) == "e5m7");
  CHECK(approx_mul_spec_of(p) == "lut:mitchell:e5m7");
  // The cached table is built once.
  MacPolicy q;
  set_approx_mul(q, "lut:mitchell:e5m7");
  CHECK(q.lut.entries == p.lut.entries);
}

TEST_CASE("building a table validates the model and names the bad pair", "[approx_mul]") {
  // Halves every product: 1 x 1 -> 0.5 is outside [1, 4).
  register_approx_mul("test_half", [](float a, float b) { return a * b * 0.5f; });
  std::string e = error_of([] { build_approx_table("test_half", parse_format("e5m7")); });
  CHECK(contains(e, "outside [1, 4)"));
  CHECK(contains(e, "mantissas 0x0, 0x0"));
  // 3/4 of the product plus 1/4: in [1, 4) at the reference exponent, but not exponent-independent,
  // which the check with a scaled by -1/2 finds at the first pair.
  register_approx_mul("test_offset", [](float a, float b) { return a * b * 0.75f + 0.25f; });
  e = error_of([] { build_approx_table("test_offset", parse_format("e5m7")); });
  CHECK(contains(e, "mantissas 0x0, 0x0"));
  CHECK(contains(e, "must scale with the operands"));
  // Names: no built-in's, no other function under a taken name.
  CHECK(contains(error_of([] { register_approx_mul("mitchell", [](float a, float b) { return a * b; }); }),
                 "built-in"));
  CHECK(contains(error_of([] { register_approx_mul("test_half", [](float a, float b) { return a * b; }); }),
                 "already registered"));
  CHECK(contains(error_of([] { register_approx_mul("Bad-Name", [](float a, float b) { return a * b; }); }),
                 "a-z, 0-9"));
  CHECK(contains(known_approx_mul_names(), "test_offset"));
}
