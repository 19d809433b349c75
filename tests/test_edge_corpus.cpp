// A named corpus of edge cases, each expected value derived by hand from the
// format definitions (docs/contract.md) and explained beside it.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <string>

#include "numerics/format_spec.h"
#include "numerics/round.h"

namespace {

enum Op { Q, ADD, SUB, MUL, DIV, SQRT };

struct Case {
  const char* name;
  const char* spec;
  Op op;
  double a, b;
  double expected;  // compared bit for bit: signed zeros count, any NaN matches NaN
};

const double inf = INFINITY, nan_ = NAN;

// clang-format off
const Case kCases[] = {
  // --- ties: fp16 has 10 fraction bits, ulp(1) = 2^-10 ---
  {"fp16 tie to even stays", "fp16", Q, 0x1.002p0, 0, 0x1p0},          // 1 + 2^-11: kept 0 (even)
  {"fp16 tie to even goes up", "fp16", Q, 0x1.006p0, 0, 0x1.008p0},    // 1 + 3*2^-11: kept 1 (odd) -> 2
  {"fp16 tie away", "fp16:rna", Q, 0x1.002p0, 0, 0x1.004p0},
  {"fp16 tie toward zero", "fp16:rtz", Q, 0x1.006p0, 0, 0x1.004p0},
  {"fp16 just above tie", "fp16", Q, 0x1.002002p0, 0, 0x1.004p0},
  {"bf16 tie to even", "bf16", Q, 0x1.01p0, 0, 0x1p0},                  // 1 + 2^-8
  {"fp16 add tie 2048+1", "fp16", ADD, 2048, 1, 2048},                  // ulp 2 at 2048, 2049 ties to even
  {"fp16 add tie 2048+3", "fp16", ADD, 2048, 3, 2052},                  // 2051: 2050 odd, 2052 even
  // --- carry into the exponent ---
  {"fp16 carry into exponent", "fp16", Q, 0x1.fffp0, 0, 2.0},           // 2 - 2^-12 rounds up to 2
  {"fp16 no carry toward zero", "fp16:rtz", Q, 0x1.fffp0, 0, 0x1.ffcp0},
  {"e4m3 carry into exponent", "e4m3", Q, 0x1.fp0, 0, 2.0},             // 1.9375: tie, 1.875 odd -> 2
  // --- subnormal boundary: fp16 min subnormal 2^-24, min normal 2^-14 ---
  {"fp16 half min subnormal ties to 0", "fp16", Q, 0x1p-25, 0, 0.0},
  {"fp16 half min subnormal away", "fp16:rna", Q, 0x1p-25, 0, 0x1p-24},
  {"fp16 tiny up", "fp16:rup", Q, 0x1p-100, 0, 0x1p-24},
  {"fp16 tiny negative down", "fp16:rdn", Q, -0x1p-100, 0, -0x1p-24},
  {"fp16 tiny keeps sign", "fp16", Q, -0x1p-30, 0, -0.0},
  {"fp16 subnormal to min normal", "fp16", Q, 0x1p-14 - 0x1p-25, 0, 0x1p-14},   // tie, 1023 odd -> 1024
  {"fp16 nosub keeps rounded-up normal", "fp16:nosub", Q, 0x1p-14 - 0x1p-25, 0, 0x1p-14},
  {"fp16 nosub flushes subnormal", "fp16:nosub", Q, 0x1p-14 - 0x1p-23, 0, 0.0},
  {"fp16 nosub flush keeps sign", "fp16:nosub", Q, -0x1p-20, 0, -0.0},
  {"fp16 subnormal exact", "fp16", Q, 3 * 0x1p-24, 0, 3 * 0x1p-24},
  // --- overflow per rounding mode: fp16 max 65504, ulp 32 at the top ---
  {"fp16 below overflow threshold", "fp16", Q, 65519, 0, 65504},
  {"fp16 overflow rne", "fp16", Q, 65520, 0, inf},                      // max + half ulp: tie, 0x3ff odd
  {"fp16 overflow rna", "fp16:rna", Q, 65520, 0, inf},
  {"fp16 overflow rtz", "fp16:rtz", Q, 1e6, 0, 65504},
  {"fp16 overflow rup positive", "fp16:rup", Q, 65505, 0, inf},
  {"fp16 overflow rup negative", "fp16:rup", Q, -1e6, 0, -65504},
  {"fp16 overflow rdn positive", "fp16:rdn", Q, 1e6, 0, 65504},
  {"fp16 overflow rdn negative", "fp16:rdn", Q, -65505, 0, -inf},
  {"fp16 overflow sat", "fp16:sat", Q, 1e6, 0, 65504},
  {"fp16 inf sat", "fp16:sat", Q, -inf, 0, -65504},
  {"fp16 inf stays", "fp16", Q, inf, 0, inf},
  {"fp16 mul overflow", "fp16", MUL, 256, 256, inf},
  {"bf16 float max overflows", "bf16", Q, 0x1.fffffep127, 0, inf},
  // --- OCP fp8_e4m3 (fn): max 448, 464 = 448 + half ulp ties to even (448) ---
  {"e4m3fn 464 ties to 448", "fp8_e4m3", Q, 464, 0, 448},
  {"e4m3fn 465 is NaN", "fp8_e4m3", Q, 465, 0, nan_},
  {"e4m3fn -465 is NaN", "fp8_e4m3", Q, -465, 0, nan_},
  {"e4m3fn inf is NaN", "fp8_e4m3", Q, inf, 0, nan_},
  {"e4m3fn sat", "fp8_e4m3:sat", Q, 1000, 0, 448},
  {"e4m3fn inf sat", "fp8_e4m3:sat", Q, -inf, 0, -448},
  {"e4m3fn rtz", "fp8_e4m3:rtz", Q, 1000, 0, 448},
  {"e4m3fn 0.1", "fp8_e4m3", Q, 0x1.99999ap-4, 0, 0x1.ap-4},           // 0.1 -> 0.1015625
  {"e4m3 IEEE-like max is 240", "e4m3", Q, 1000, 0, inf},
  {"e4m3 IEEE-like 247 rounds to 240", "e4m3", Q, 247, 0, 240},
  // --- finite-only fp4_e2m1: 0 0.5 1 1.5 2 3 4 6 ---
  {"fp4 5 ties to 4", "fp4_e2m1", Q, 5, 0, 4},
  {"fp4 7 saturates", "fp4_e2m1", Q, 7, 0, 6},
  {"fp4 inf saturates", "fp4_e2m1", Q, -inf, 0, -6},
  {"fp4 0.25 ties to 0", "fp4_e2m1", Q, 0.25, 0, 0.0},
  {"fp4 0.75 ties to 1", "fp4_e2m1", Q, 0.75, 0, 1.0},
  {"fp4 NaN stays NaN", "fp4_e2m1", Q, nan_, 0, nan_},
  {"fp6_e3m2 max 28", "fp6_e3m2", Q, 1e9, 0, 28},
  {"fp6_e2m3 max 7.5", "fp6_e2m3", Q, 1e9, 0, 7.5},
  // --- NaN and signed zeros ---
  {"NaN in NaN out", "fp16", ADD, nan_, 1, nan_},
  {"inf - inf", "fp16", SUB, inf, inf, nan_},
  {"0 * inf", "bf16", MUL, 0, inf, nan_},
  {"x - x is +0", "fp16", SUB, 1.5, 1.5, 0.0},
  {"x - x is -0 under rdn", "fp16:rdn", SUB, 1.5, 1.5, -0.0},
  {"-0 + -0 is -0", "fp16", ADD, -0.0, -0.0, -0.0},
  {"+0 + -0 is +0", "fp16", ADD, 0.0, -0.0, 0.0},
  {"-1 * 0 is -0", "fp16", MUL, -1, 0, -0.0},
  {"sqrt -0 is -0", "fp16", SQRT, -0.0, 0, -0.0},
  {"sqrt -1 is NaN", "fp16", SQRT, -1, 0, nan_},
  {"1 / 0 is inf", "fp16", DIV, 1, 0, inf},
  {"1 / -0 is -inf", "fp16", DIV, 1, -0.0, -inf},
  {"0 / 0 is NaN", "fp16", DIV, 0, 0, nan_},
  // --- correct rounding of arithmetic, including the double-rounding trap ---
  {"fp16 1/3", "fp16", DIV, 1, 3, 0x1.554p-2},                          // 0x3555
  {"fp16 sqrt 2", "fp16", SQRT, 2, 0, 0x1.6ap0},                        // 0x3da8
  {"fp16 mul rne", "fp16", MUL, 0x1.004p0, 0x1.004p0, 0x1.008p0},       // 1 + 2^-9 + 2^-20
  {"fp16 mul rup", "fp16:rup", MUL, 0x1.004p0, 0x1.004p0, 0x1.00cp0},
  // e8m12: 1 + (2^-13 + 2^-25) is just above the tie at 1 + 2^-13; in binary32
  // it would first round to the tie itself and then (to even) down to 1.
  {"e8m12 no double rounding", "e8m12", ADD, 1, 0x1.001p-13, 0x1.001p0},
  // --- posits ---
  {"posit8_0 huge is maxpos", "posit8_0", Q, 1e30, 0, 64},
  {"posit8_0 tiny is minpos", "posit8_0", Q, 1e-30, 0, 0x1p-6},
  {"posit8_0 tiny negative is -minpos", "posit8_0", Q, -1e-30, 0, -0x1p-6},
  {"posit8_0 tiny rtz is still minpos", "posit8_0:rtz", Q, 1e-30, 0, 0x1p-6},
  {"posit8_0 inf is NaR", "posit8_0", Q, inf, 0, nan_},
  {"posit8_0 x/0 is NaR", "posit8_0", DIV, 1, 0, nan_},
  {"posit8_0 tie near 1", "posit8_0", Q, 1 + 0x1p-6, 0, 1},             // 5 fraction bits: even code
  {"posit zero has no sign", "posit16_1", SUB, 1, 1, 0.0},
  // posit8_2 near maxpos: codes 0x7e = 2^20 and 0x7f = 2^24 (exponent bits cut
  // off). The tie point is the 9-bit posit 0xfd = 2^22, not the midpoint 8.5*2^20.
  {"posit8_2 above bit-string tie", "posit8_2", Q, 0x1p23, 0, 0x1p24},
  {"posit8_2 bit-string tie to even", "posit8_2", Q, 0x1p22, 0, 0x1p20},
  {"posit8_2 below bit-string tie", "posit8_2", Q, 0x1.fp21, 0, 0x1p20},
  // --- fixed point: fixed8_4 is [-8, 7.9375] in steps of 1/16 ---
  {"fixed8_4 saturates high", "fixed8_4", Q, 100, 0, 7.9375},
  {"fixed8_4 saturates low", "fixed8_4", Q, -100, 0, -8},
  {"fixed8_4 wraps", "fixed8_4:wrap", Q, 8, 0, -8},                     // 128 -> -128
  {"fixed8_4 wraps 9.5", "fixed8_4:wrap", Q, 9.5, 0, -6.5},             // 152 -> -104
  {"fixed8_4 tie to even", "fixed8_4", Q, 0.03125, 0, 0.0},
  {"fixed8_4 tie away", "fixed8_4:rna", Q, 0.03125, 0, 0.0625},
  {"fixed8_4 rdn negative", "fixed8_4:rdn", Q, -0.03125, 0, -0.0625},
  {"fixed8_4 rup negative", "fixed8_4:rup", Q, -0.03125, 0, 0.0},       // no -0 in fixed point
  {"fixed8_4 NaN is 0", "fixed8_4", Q, nan_, 0, 0.0},
  {"fixed8_4 inf saturates under wrap", "fixed8_4:wrap", Q, inf, 0, 7.9375},
  {"int8 127.5 saturates", "int8", Q, 127.5, 0, 127},                   // ties to 128, saturates
  {"int8 127.5 wraps", "int8:wrap", Q, 127.5, 0, -128},
  {"fixed16_8 add saturates", "fixed16_8", ADD, 127, 127, 0x1.fffcp6},  // 128 - 2^-8
};
// clang-format on

double apply(const emu::Format& f, Op op, double a, double b) {
  switch (op) {
    case Q:
      return emu::round_value(f, a);
    case ADD:
      return emu::format_add(f, a, b);
    case SUB:
      return emu::format_sub(f, a, b);
    case MUL:
      return emu::format_mul(f, a, b);
    case DIV:
      return emu::format_div(f, a, b);
    case SQRT:
      return emu::format_sqrt(f, a);
  }
  return 0;
}

bool same(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  return std::memcmp(&x, &y, sizeof x) == 0;
}

}  // namespace

TEST_CASE("edge-case corpus", "[numerics]") {
  for (const Case& c : kCases) {
    emu::Format f = emu::parse_format(c.spec);
    double got = apply(f, c.op, c.a, c.b);
    INFO(c.name << " (" << c.spec << "): got " << got << " expected " << c.expected);
    CHECK(same(got, c.expected));
  }
}

TEST_CASE("special codes decode and encode as documented", "[numerics]") {
  emu::Format e4m3 = emu::parse_format("fp8_e4m3"), e5m2 = emu::parse_format("fp8_e5m2");
  emu::Format fp16 = emu::parse_format("fp16"), fp4 = emu::parse_format("fp4_e2m1");
  emu::Format p8 = emu::parse_format("posit8_0");
  CHECK(emu::decode(e4m3, 0x7e) == 448);
  CHECK(std::isnan(emu::decode(e4m3, 0x7f)));
  CHECK(std::isnan(emu::decode(e4m3, 0xff)));
  CHECK(emu::decode(e4m3, 0x78) == 256);  // exponent all ones is a normal binade in fn
  CHECK(emu::decode(e5m2, 0x7c) == inf);
  CHECK(emu::decode(e5m2, 0x7b) == 57344);
  CHECK(std::isnan(emu::decode(e5m2, 0x7d)));
  CHECK(emu::decode(fp4, 0x7) == 6);
  CHECK(emu::decode(fp4, 0xf) == -6);
  CHECK(std::isnan(emu::decode(p8, 0x80)));
  CHECK(emu::decode(p8, 0x40) == 1);
  CHECK(emu::decode(p8, 0x7f) == 64);
  CHECK(emu::decode(p8, 0x01) == 0x1p-6);
  CHECK(emu::decode(p8, 0xff) == -0x1p-6);
  uint64_t code = 0;
  CHECK((emu::encode(fp16, NAN, &code) && code == 0x7e00));
  CHECK((emu::encode(e4m3, NAN, &code) && code == 0x7f));
  CHECK((emu::encode(e5m2, -0.0, &code) && code == 0x80));
  CHECK((emu::encode(p8, NAN, &code) && code == 0x80));
  CHECK_FALSE(emu::encode(fp4, NAN, &code));     // no NaN code
  CHECK_FALSE(emu::encode(e4m3, 449, &code));    // not a value of the format
  CHECK_FALSE(emu::encode(e4m3, inf, &code));    // no Inf code
  CHECK_FALSE(emu::encode(fp16, 65536, &code));  // beyond max
}
