// Every pair of 8-bit codes through add, sub, mul and div (and every code
// through sqrt) against the independent reference (tests/reference/), for
// fp8_e4m3, fp8_e5m2, e4m3 with :rtz, posit8_0, posit8_2 and fixed8_4, plus
// the directed and ties-away modes of fp8_e4m3 and e5m2 for add and mul, and
// sqrt in every mode (:sr with a few fixed draws).
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "numerics/format_spec.h"
#include "numerics/round.h"
#include "tests/reference/compare.h"
#include "tests/reference/reference.h"
#include "tests/sanitized.h"

using emu::Format;
using emu::parse_format;
using emu::ref::Mismatches;
using emu::ref::show_code;

namespace {

enum class Op { Add, Sub, Mul, Div };

double run(Op op, const Format& f, double a, double b) {
  switch (op) {
    case Op::Add:
      return emu::format_add(f, a, b);
    case Op::Sub:
      return emu::format_sub(f, a, b);
    case Op::Mul:
      return emu::format_mul(f, a, b);
    case Op::Div:
      return emu::format_div(f, a, b);
  }
  return 0;
}

double reference(Op op, const Format& f, double a, double b) {
  switch (op) {
    case Op::Add:
      return emu::ref::ref_add(f, a, b);
    case Op::Sub:
      return emu::ref::ref_sub(f, a, b);
    case Op::Mul:
      return emu::ref::ref_mul(f, a, b);
    case Op::Div:
      return emu::ref::ref_div(f, a, b);
  }
  return 0;
}

const char* op_name(Op op) {
  static const char* const kNames[] = {"add", "sub", "mul", "div"};
  return kNames[static_cast<int>(op)];
}

// All 2^16 pairs of codes of an 8-bit format through one operation. A
// sanitizer build (tests/sanitized.h) pairs each a with every 5th b, starting
// at a different b for each a, so every code still appears on both sides.
void all_pairs(const std::string& spec, Op op, Mismatches& m) {
  const Format f = parse_format(spec);
  REQUIRE(f.nbits == 8);
  const uint64_t stride = static_cast<uint64_t>(emu::test::sanitized_stride(5));
  for (uint64_t i = 0; i < 256; ++i) {
    const double a = emu::ref::ref_decode(f, i);
    for (uint64_t j = i % stride; j < 256; j += stride) {
      const double b = emu::ref::ref_decode(f, j);
      m.check(f, run(op, f, a, b), reference(op, f, a, b), [&] {
        return std::string(op_name(op)) + "(" + show_code(i) + ", " + show_code(j) +
               ") = " + emu::ref::describe(op_name(op), {a, b});
      });
    }
  }
}

const char* const kFormats[] = {"fp8_e4m3", "fp8_e5m2", "e4m3:rtz", "posit8_0", "posit8_2", "fixed8_4"};

}  // namespace

TEST_CASE("every pair of 8-bit codes: add and mul", "[reference]") {
  Mismatches m;
  for (const char* spec : kFormats)
    for (Op op : {Op::Add, Op::Mul}) all_pairs(spec, op, m);
  std::printf("add, mul: %llu pairs\n", static_cast<unsigned long long>(m.cases()));
  INFO(m.report());
  CHECK(m.count() == 0);
}

TEST_CASE("every pair of 8-bit codes: sub and div", "[reference]") {
  Mismatches m;
  for (const char* spec : kFormats)
    for (Op op : {Op::Sub, Op::Div}) all_pairs(spec, op, m);
  std::printf("sub, div: %llu pairs\n", static_cast<unsigned long long>(m.cases()));
  INFO(m.report());
  CHECK(m.count() == 0);
}

TEST_CASE("every pair of 8-bit codes: add and mul in the other rounding modes", "[reference]") {
  Mismatches m;
  for (const char* base : {"fp8_e4m3", "fp8_e5m2"})
    for (const char* mode : {":rup", ":rdn", ":rna"})
      for (Op op : {Op::Add, Op::Mul}) all_pairs(std::string(base) + mode, op, m);
  std::printf("add, mul, other modes: %llu pairs\n", static_cast<unsigned long long>(m.cases()));
  INFO(m.report());
  CHECK(m.count() == 0);
}

TEST_CASE("every 8-bit code: sqrt", "[reference]") {
  Mismatches m;
  for (const char* spec : {"fp8_e4m3", "fp8_e5m2", "e4m3", "posit8_0", "posit8_2", "fixed8_4"}) {
    for (const char* mode : {"", ":rtz", ":rup", ":rdn", ":rna", ":sr"}) {
      const Format f = parse_format(std::string(spec) + mode);
      for (uint32_t rand : {0u, 0x40000000u, 0x80000000u, 0xc0000000u, 0xffffffffu}) {
        if (rand != 0 && !emu::is_stochastic(f)) break;
        for (uint64_t i = 0; i < 256; ++i) {
          const double a = emu::ref::ref_decode(f, i);
          m.check(f, emu::format_sqrt(f, a, rand), emu::ref::ref_sqrt(f, a, rand), [&] {
            return "sqrt(" + show_code(i) + ") = " + emu::ref::describe("sqrt", {a}) + " rand " +
                   show_code(rand);
          });
        }
      }
    }
  }
  INFO(m.report());
  CHECK(m.count() == 0);
}
