// Every code of every format of <= 8 bits against the independent reference
// (tests/reference/): decode, encode, and R_f of every code value, of every
// midpoint between neighbours (and posit tie point), of the binary32 and
// binary64 neighbours of those, of points beyond max and below minpos, of
// Inf/NaN and of random doubles, in every rounding mode (:sr with fixed draws).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "numerics/format_spec.h"
#include "numerics/round.h"
#include "tests/reference/compare.h"
#include "tests/reference/reference.h"
#include "tests/sanitized.h"

using emu::Family;
using emu::Format;
using emu::parse_format;
using emu::Specials;
using emu::ref::describe;
using emu::ref::Mismatches;
using emu::ref::show_code;

namespace {

const char* const kModes[] = {"rne", "rtz", "rup", "rdn", "rna", "sr"};
const uint32_t kDraws[] = {0u,          1u,          0x7fffffffu, 0x80000000u,
                           0xfffffffeu, 0xffffffffu, 0x12345678u, 0x9abcdef0u};

// Every base spec of <= 8 bits (modifiers other than rounding included).
std::vector<std::string> small_specs() {
  std::vector<std::string> specs;
  for (int X = 1; X <= 7; ++X) {
    for (int Y = 0; 1 + X + Y <= 8; ++Y) {
      std::string base = "e" + std::to_string(X) + "m" + std::to_string(Y);
      for (const char* v : {"", ":nosub", ":sat", ":nosub:sat"}) specs.push_back(base + v);
    }
  }
  for (const char* v : {"", ":nosub", ":sat", ":nosub:sat"}) specs.push_back(std::string("fp8_e4m3") + v);
  for (const char* base : {"fp6_e3m2", "fp6_e2m3", "fp4_e2m1"}) {
    specs.push_back(base);
    specs.push_back(std::string(base) + ":nosub");
  }
  for (int n = 2; n <= 8; ++n) {
    for (int es = 0; es <= 6; ++es) {
      std::string s = "posit" + std::to_string(n) + "_" + std::to_string(es);
      try {
        parse_format(s);
        specs.push_back(s);
      } catch (const emu::FormatError&) {
      }
    }
  }
  for (int w = 2; w <= 8; ++w) {
    std::vector<int> fracs = {0, 1, w / 2, w - 1, w, w + 3, w + 20, 64};
    std::sort(fracs.begin(), fracs.end());
    fracs.erase(std::unique(fracs.begin(), fracs.end()), fracs.end());
    for (int f : fracs) {
      std::string base =
          f == 0 ? "int" + std::to_string(w) : "fixed" + std::to_string(w) + "_" + std::to_string(f);
      specs.push_back(base);
      specs.push_back(base + ":wrap");
    }
  }
  return specs;
}

bool is_float(double x) { return std::isnan(x) || static_cast<double>(static_cast<float>(x)) == x; }

// Points to round for format f (its value grid read with subnormals on).
std::vector<double> round_points(const Format& f) {
  Format g = f;
  g.subnormals = true;
  std::vector<double> values;
  for (uint64_t c = 0; c < (1ull << f.nbits); ++c) {
    double v = emu::ref::ref_decode(g, c);
    if (std::isfinite(v)) values.push_back(std::fabs(v));
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());

  std::vector<double> pts;
  auto add_near = [&](double x) {
    pts.push_back(x);
    pts.push_back(std::nextafter(x, 0.0));
    pts.push_back(std::nextafter(x, INFINITY));
    if (std::fabs(x) <= FLT_MAX) {
      float xf = static_cast<float>(x);
      pts.push_back(std::nextafterf(xf, 0.0f));
      pts.push_back(std::nextafterf(xf, INFINITY));
    }
  };
  for (size_t i = 0; i < values.size(); ++i) {
    pts.push_back(values[i]);
    if (i + 1 < values.size()) {
      double u = values[i], w = values[i + 1], d = w - u;
      add_near(u + d / 2);
      pts.push_back(u + d / 4);
      pts.push_back(u + 3 * d / 4);
      pts.push_back(u + d / 3);
    }
  }
  if (f.family == Family::Posit) {
    // Tie points: the (n+1)-bit posits 2c+1.
    Format wide = f;
    wide.nbits = f.nbits + 1;
    for (uint64_t c = 1; c + 1 < (1ull << (f.nbits - 1)); ++c)
      add_near(emu::ref::ref_decode(wide, 2 * c + 1));
  }
  const double maxv = values.back();
  const double minpos = values.size() > 1 ? values[1] : 1.0;
  const double below_max = values.size() > 1 ? values[values.size() - 2] : 0.0;
  add_near(maxv + (maxv - below_max) / 2);  // the overflow tie on the top binade's grid
  for (double k : {1.25, 1.5, 2.0, 4.0, 1024.0}) add_near(maxv * k);
  for (double k : {0.75, 0.5, 0.25, 0x1p-20}) add_near(minpos * k);
  for (double x : {1e30, static_cast<double>(FLT_MAX), 0x1p200, static_cast<double>(FLT_TRUE_MIN), 1e-300,
                   static_cast<double>(INFINITY), static_cast<double>(NAN)})
    pts.push_back(x);
  if (f.family == Family::Fixed) {
    // Around the wrap-around points.
    double span = std::ldexp(1.0, f.nbits - f.frac_bits), unit = std::ldexp(1.0, -f.frac_bits);
    for (double k : {1.0, 1.5, 3.0, 7.0})
      for (double off : {0.0, 0.25, 0.5, 0.75}) pts.push_back(span * k + off * unit);
    pts.push_back(0x1p70 + 0x1p20);
  }
  std::mt19937_64 rng(0x5eed0001 + f.nbits);
  const double span = maxv > 0 ? 2.0 * maxv : 4.0;
  std::uniform_real_distribution<double> uni(-span, span);
  for (int i = 0; i < 64; ++i) pts.push_back(uni(rng));
  pts.push_back(0.0);
  const size_t n = pts.size();
  for (size_t i = 0; i < n; ++i) pts.push_back(-pts[i]);
  return pts;
}

// IEEE codes that encode(decode(c)) does not give back: NaN codes other than
// the canonical NaN, and subnormal codes under :nosub (they read as zeros).
bool canonical_code(const Format& f, uint64_t c) {
  if (f.family != Family::Ieee) return true;
  const uint64_t top = (1ull << f.exp_bits) - 1, man_all = (1ull << f.man_bits) - 1;
  uint64_t biased = (c >> f.man_bits) & top, man = c & man_all;
  if (biased == 0 && man != 0 && !f.subnormals) return false;
  if (biased == top && f.specials == Specials::InfNan && man != 0)
    return c == ((top << f.man_bits) | (1ull << (f.man_bits - 1)));
  if (biased == top && f.specials == Specials::NanOnly && man == man_all)
    return c == ((top << f.man_bits) | man_all);
  return true;
}

}  // namespace

TEST_CASE("decode matches the reference for every code of every <= 8-bit format", "[reference]") {
  Mismatches m;
  int formats = 0;
  for (const auto& spec : small_specs()) {
    Format f = parse_format(spec);
    ++formats;
    for (uint64_t c = 0; c < (1ull << f.nbits); ++c)
      m.check(f, emu::decode(f, c), emu::ref::ref_decode(f, c),
              [&] { return "decode(" + show_code(c) + ")"; });
  }
  std::printf("decode: %d formats, %llu codes\n", formats, static_cast<unsigned long long>(m.cases()));
  INFO(m.report());
  CHECK(m.count() == 0);
}

TEST_CASE("encode matches the reference and inverts decode on canonical codes", "[reference]") {
  Mismatches m;
  for (const auto& spec : small_specs()) {
    Format f = parse_format(spec);
    auto compare = [&](double v, const std::string& what) {
      uint64_t got = 0, want = 0;
      bool got_ok = emu::encode(f, v, &got), want_ok = emu::ref::ref_encode(f, v, &want);
      if (got_ok != want_ok || (got_ok && got != want))
        m.fail(f, "encode(" + what + "): got " + (got_ok ? show_code(got) : "false") + ", expected " +
                      (want_ok ? show_code(want) : "false"));
      else
        m.pass();
    };
    for (uint64_t c = 0; c < (1ull << f.nbits); ++c) {
      double v = emu::ref::ref_decode(f, c);
      compare(v, "decode(" + show_code(c) + ") = " + emu::ref::show(v));
      if (canonical_code(f, c)) {
        uint64_t got = 0, want = 0;
        bool ok = emu::encode(f, emu::decode(f, c), &got);
        bool ref_ok = emu::ref::ref_encode(f, v, &want);
        if (!ok || got != c)
          m.fail(f, "encode(decode(" + show_code(c) + ")) = " + (ok ? show_code(got) : "false"));
        else
          m.pass();
        // The reference must invert its own decode too, or it checks nothing.
        if (!ref_ok || want != c)
          m.fail(f, "REFERENCE encode(ref_decode(" + show_code(c) + ")) is not the code");
      }
    }
    for (double x : round_points(f)) compare(x, emu::ref::show(x));
  }
  std::printf("encode: %llu checks\n", static_cast<unsigned long long>(m.cases()));
  INFO(m.report());
  CHECK(m.count() == 0);
}

TEST_CASE("rounding of every code, midpoint and neighbour matches the reference in every mode",
          "[reference]") {
  Mismatches m;
  uint64_t quantized = 0;
  for (const auto& spec : small_specs()) {
    const Format base = parse_format(spec);
    std::vector<double> pts = round_points(base);
    // A sanitizer build (tests/sanitized.h) rounds the non-negative half of the
    // points (the rest are their negations: the same code with the sign set)
    // under the two extreme draws of :sr only.
    if (emu::test::kSanitized) pts.resize(pts.size() / 2);
    for (const char* mode : kModes) {
      const Format f = parse_format(spec + ":" + mode);
      const bool sr = emu::is_stochastic(f);
      for (uint32_t rand : kDraws) {
        if (!sr && rand != 0) break;
        if (emu::test::kSanitized && rand != 0 && rand != 0xffffffffu) continue;
        for (double x : pts) {
          const double want = emu::ref::ref_quantize(f, x, rand);
          auto what = [&] { return describe("round", {x}, sr ? (" rand " + show_code(rand)).c_str() : ""); };
          m.check(f, emu::round_value(f, x, rand), want, what);
          if (!f.accumulator_only && is_float(x)) {
            ++quantized;
            float got = emu::quantize(f, static_cast<float>(x), rand);
            m.check(f, static_cast<double>(got), static_cast<double>(static_cast<float>(want)),
                    [&] { return "quantize: " + what(); });
          }
        }
      }
    }
  }
  std::printf("round: %llu comparisons (%llu through quantize)\n", static_cast<unsigned long long>(m.cases()),
              static_cast<unsigned long long>(quantized));
  INFO(m.report());
  CHECK(m.count() == 0);
}

TEST_CASE("hand-derived anchors: the reference and the implementation agree with the docs", "[reference]") {
  // Each row: spec, op, a, b, rand, expected (worked out by hand from docs/contract.md).
  struct Anchor {
    const char* spec;
    const char* op;  // "round", "add", "mul", "sqrt"
    double a, b;
    uint32_t rand;
    double expected;
  };
  const double inf = INFINITY, nan = NAN;
  const Anchor anchors[] = {
      {"fp8_e4m3", "round", 464, 0, 0, 448},       // 448 + 16: a tie, to even (448)
      {"fp8_e4m3", "round", 464.0001, 0, 0, nan},  // past the tie: NaN (no Inf code)
      {"fp8_e4m3", "round", inf, 0, 0, nan},
      {"fp8_e4m3:sat", "round", -inf, 0, 0, -448},
      {"fp8_e4m3:rtz", "round", 1e9, 0, 0, 448},
      {"fp8_e4m3", "round", 0x1p-10, 0, 0, 0},  // half of the smallest subnormal 2^-9: to even (0)
      {"fp8_e4m3", "round", 0x1.000002p-10, 0, 0, 0x1p-9},
      {"e5m2", "round", 61440, 0, 0, inf},  // 57344 + 4096: tie, even is 2^16: overflow
      {"e5m2", "round", 61439, 0, 0, 57344},
      {"e5m2:rup", "round", -1e9, 0, 0, -57344},
      {"e5m2:rdn", "round", -1e9, 0, 0, -inf},
      {"e5m2:sat", "round", inf, 0, 0, 57344},
      {"e4m3", "round", 240, 0, 0, 240},  // IEEE-like e4m3: max 240, Inf exists
      {"e4m3", "round", 248, 0, 0, inf},
      {"fp16:nosub", "round", 0x1p-14 - 0x1p-25, 0, 0, 0x1p-14},  // rounds up to the smallest normal: kept
      {"fp16:nosub", "round", -0x1p-15, 0, 0, -0.0},              // subnormal result: flushed, sign kept
      {"fp16:nosub:rup", "round", 0x1p-30, 0, 0, 0.0},            // rounds up to 2^-24, subnormal: flushed
      {"fp6_e2m3", "round", inf, 0, 0, 7.5},
      {"fp4_e2m1", "round", 100, 0, 0, 6},
      {"fp4_e2m1", "round", 2.5, 0, 0, 2},         // 2 and 3: tie to even (2)
      {"fp4_e2m1", "round", 5, 0, 0, 4},           // 4 and 6: tie to even (4)
      {"posit8_0", "round", 1e-10, 0, 0, 0x1p-6},  // never to zero
      {"posit8_0", "round", -1e10, 0, 0, -64},     // never past maxpos
      {"posit8_0:rtz", "round", 1e-10, 0, 0, 0x1p-6},
      {"posit8_0", "round", 48, 0, 0, 32},  // 32 (0x7e) .. 64 (0x7f): tie 48, to the even code
      {"posit8_0", "round", 49, 0, 0, 64},
      {"posit8_2", "round", 0x1p22, 0, 0, 0x1p20},  // tie point 2^22 (9-bit code 0xfd), to even code 0x7e
      {"posit8_2", "round", 0x1p23, 0, 0, 0x1p24},  // above the tie, below the arithmetic midpoint
      {"posit8_2", "round", inf, 0, 0, nan},        // NaR
      {"posit8_2", "add", 1, -1, 0, 0.0},
      {"fixed8_4", "round", 7.96875, 0, 0, 7.9375},   // 127.5 / 16: tie to 128, saturated
      {"fixed8_4:wrap", "round", 7.96875, 0, 0, -8},  // 128 wraps to -128
      {"fixed8_4:wrap", "round", -inf, 0, 0, -8},     // Inf saturates even under :wrap
      {"fixed8_4", "round", nan, 0, 0, 0},
      {"fixed8_4", "round", -0.0, 0, 0, 0.0},  // one zero
      {"int8", "round", 2.5, 0, 0, 2},
      {"int8:rna", "round", 2.5, 0, 0, 3},
      {"int8:rdn", "round", -2.5, 0, 0, -3},
      {"int8:wrap", "round", 300, 0, 0, 44},
      {"fp16:sr", "round", 1 + 0x1p-12, 0, 0xc0000000u, 1 + 0x1p-10},  // below32 = 0x40000000
      {"fp16:sr", "round", 1 + 0x1p-12, 0, 0xbfffffffu, 1},
      {"fp16:sr", "round", 1 + 0x1p-43, 0, 0xffffffffu, 1},  // below a 2^-32 unit: never away
      {"fp32", "add", 1, -1, 0, 0.0},
      {"fp32:rdn", "add", 1, -1, 0, -0.0},
      {"fp32", "add", -0.0, -0.0, 0, -0.0},
      {"fp32", "mul", -0.0, 5, 0, -0.0},
      {"fp16", "sqrt", -0.0, 0, 0, -0.0},
      {"fp16", "sqrt", -1, 0, 0, nan},
      {"bf16", "round", 1 + 0x1p-8, 0, 0, 1},  // tie, to even
      {"bf16", "round", 1 + 0x1p-8 + 0x1p-7, 0, 0, 1 + 0x1p-6},
  };
  Mismatches impl, ref;
  for (const Anchor& x : anchors) {
    const Format f = parse_format(x.spec);
    double got = 0, want = 0;
    const std::string op = x.op;
    if (op == "round") {
      got = emu::round_value(f, x.a, x.rand);
      want = emu::ref::ref_quantize(f, x.a, x.rand);
    } else if (op == "add") {
      got = emu::format_add(f, x.a, x.b, x.rand);
      want = emu::ref::ref_add(f, x.a, x.b, x.rand);
    } else if (op == "mul") {
      got = emu::format_mul(f, x.a, x.b, x.rand);
      want = emu::ref::ref_mul(f, x.a, x.b, x.rand);
    } else {
      got = emu::format_sqrt(f, x.a, x.rand);
      want = emu::ref::ref_sqrt(f, x.a, x.rand);
    }
    auto what = [&] { return describe(x.op, {x.a, x.b}, (" rand " + show_code(x.rand)).c_str()); };
    impl.check(f, got, x.expected, what);
    ref.check(f, want, x.expected, [&] { return "REFERENCE " + what(); });
  }
  INFO(impl.report());
  CHECK(impl.count() == 0);
  INFO(ref.report());
  CHECK(ref.count() == 0);
}
