// Format spec strings (numerics/format_spec.h) and format properties
// (numerics/format_info.h).
//
// Every alias and family parses to the fields docs/contract.md section 2.1 gives it;
// format_name(parse(s)) parses back to an equal Format and printing is
// idempotent; every error names the offending token; accumulator-only formats
// are accepted by the parser and refused by require_storage with a message
// that says "accumulator-only"; describe_format's numbers are the known ones.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "numerics/format_info.h"
#include "numerics/format_spec.h"

using emu::Family;
using emu::Format;
using emu::format_name;
using emu::FormatError;
using emu::parse_format;
using emu::Rounding;
using emu::Specials;

namespace {

// The message of the FormatError that parse_format(spec) throws ("" if none).
std::string parse_error(const std::string& spec) {
  try {
    parse_format(spec);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const char* const kBases[] = {"fp32",      "tf32",      "bf16",       "fp16",       "fp64",       "fp8_e5m2",
                              "fp8_e4m3",  "fp6_e3m2",  "fp6_e2m3",   "fp4_e2m1",   "e1m0",       "e8m23",
                              "e5m2",      "e4m3",      "e3m4",       "e2m1",       "e8m0",       "e11m52",
                              "e9m3",      "e6m30",     "posit2_0",   "posit3_2",   "posit8_0",   "posit8_2",
                              "posit16_1", "posit16_2", "posit24_0",  "posit32_2",  "posit32_3",  "fixed2_0",
                              "fixed8_4",  "fixed16_8", "fixed24_24", "fixed24_64", "fixed53_20", "int2",
                              "int8",      "int16",     "int24",      "int32",      "int53"};
const char* const kModifierSets[] = {"",         ":rne",      ":rtz",           ":rup",      ":rdn",
                                     ":rna",     ":sr",       ":nosub",         ":sat",      ":wrap",
                                     ":sat:rtz", ":nosub:sr", ":rdn:nosub:sat", ":wrap:rup", ":sr:sr"};

}  // namespace

TEST_CASE("aliases and families parse to their fields", "[format_spec]") {
  struct Case {
    const char* spec;
    Family family;
    int exp_bits, man_bits;  // Ieee
    Specials specials;
    double max_finite;
  };
  const Case ieee[] = {
      {"fp32", Family::Ieee, 8, 23, Specials::InfNan, 3.4028234663852886e38},
      {"tf32", Family::Ieee, 8, 10, Specials::InfNan, 3.4011621342146535e38},
      {"bf16", Family::Ieee, 8, 7, Specials::InfNan, 3.3895313892515355e38},
      {"fp16", Family::Ieee, 5, 10, Specials::InfNan, 65504},
      {"fp64", Family::Ieee, 11, 52, Specials::InfNan, 1.7976931348623157e308},
      {"fp8_e5m2", Family::Ieee, 5, 2, Specials::InfNan, 57344},
      {"e5m2", Family::Ieee, 5, 2, Specials::InfNan, 57344},
      {"fp8_e4m3", Family::Ieee, 4, 3, Specials::NanOnly, 448},
      {"e4m3", Family::Ieee, 4, 3, Specials::InfNan, 240},
      {"fp6_e3m2", Family::Ieee, 3, 2, Specials::FiniteOnly, 28},
      {"fp6_e2m3", Family::Ieee, 2, 3, Specials::FiniteOnly, 7.5},
      {"fp4_e2m1", Family::Ieee, 2, 1, Specials::FiniteOnly, 6},
  };
  for (const Case& c : ieee) {
    INFO(c.spec);
    Format f = parse_format(c.spec);
    CHECK(f.family == c.family);
    CHECK(f.exp_bits == c.exp_bits);
    CHECK(f.man_bits == c.man_bits);
    CHECK(f.nbits == 1 + c.exp_bits + c.man_bits);
    CHECK(f.specials == c.specials);
    CHECK(f.max_finite == c.max_finite);
    CHECK(f.rounding == Rounding::NearestEven);
    CHECK(f.subnormals);
    CHECK(f.saturate == (c.specials == Specials::FiniteOnly));
  }
  Format p = parse_format("posit16_1");
  CHECK(p.family == Family::Posit);
  CHECK(p.nbits == 16);
  CHECK(p.es == 1);
  CHECK(p.max_finite == 268435456.0);  // 2^(14 * 2)
  Format x = parse_format("fixed16_8");
  CHECK(x.family == Family::Fixed);
  CHECK(x.nbits == 16);
  CHECK(x.frac_bits == 8);
  CHECK(x.saturate);
  CHECK(x.max_finite == 127.99609375);
  CHECK(parse_format("int8") == parse_format("fixed8_0"));
  CHECK(parse_format("fp16") == parse_format("e5m10"));
  CHECK(parse_format("fp64") == parse_format("e11m52"));
  CHECK_FALSE(parse_format("e4m3") == parse_format("fp8_e4m3"));
}

TEST_CASE("format equality compares every field, block descriptors included", "[format_spec]") {
  CHECK(parse_format("mxfp8_e4m3") == parse_format("mxfp8_e4m3"));
  CHECK(parse_format("fp16") != parse_format("fp16:sr"));
  CHECK(parse_format("fp16") != parse_format("fp16:nosub"));
  CHECK(parse_format("fp16") != parse_format("fp16:sat"));
  CHECK(parse_format("posit16_1") != parse_format("posit16_2"));
  CHECK(parse_format("fixed16_8") != parse_format("fixed16_8:wrap"));
  // A block format has the fields of its binary32 carrier; only the block descriptor tells them apart.
  CHECK(parse_format("mxfp8_e4m3") != parse_format("fp32"));
  CHECK(parse_format("mxfp8_e4m3") != parse_format("mxfp8_e5m2"));
  CHECK(parse_format("mxfp8_e4m3") != parse_format("mxfp8_e4m3:sr"));
  CHECK(parse_format("bfp8_b16") != parse_format("bfp8_b32"));
  // The derived constants count too.
  Format f = parse_format("e5m10");
  f.max_finite = 1024.0;
  CHECK(f != parse_format("e5m10"));
}

TEST_CASE("modifiers set their fields", "[format_spec]") {
  CHECK(parse_format("fp16:rtz").rounding == Rounding::TowardZero);
  CHECK(parse_format("fp16:rup").rounding == Rounding::Up);
  CHECK(parse_format("fp16:rdn").rounding == Rounding::Down);
  CHECK(parse_format("fp16:rna").rounding == Rounding::NearestAway);
  CHECK(parse_format("fp16:sr").rounding == Rounding::Stochastic);
  CHECK(parse_format("fp16:rne").rounding == Rounding::NearestEven);
  Format f = parse_format("e4m3:nosub:sat:rtz");
  CHECK_FALSE(f.subnormals);
  CHECK(f.saturate);
  CHECK(f.rounding == Rounding::TowardZero);
  CHECK(f.min_positive == f.min_normal);
  CHECK_FALSE(parse_format("fixed16_8:wrap").saturate);
  CHECK(parse_format("fixed16_8:sat").saturate);
}

TEST_CASE("canonical names parse back to equal formats; printing is idempotent", "[format_spec]") {
  int checked = 0;
  for (const char* base : kBases) {
    for (const char* mods : kModifierSets) {
      const std::string spec = std::string(base) + mods;
      if (!parse_error(spec).empty()) continue;  // e.g. :wrap on a float; errors are tested below
      INFO(spec);
      Format f = parse_format(spec);
      const std::string name = format_name(f);
      Format g = parse_format(name);
      CHECK(f == g);
      CHECK(format_name(g) == name);
      ++checked;
    }
  }
  CHECK(checked > 300);
  // The canonical spelling: aliases, modifiers in the order rounding, nosub, sat, wrap; defaults omitted.
  struct Canon {
    const char* spec;
    const char* name;
  };
  const Canon canon[] = {
      {"fp8_e5m2", "e5m2"},
      {"e5m10", "fp16"},
      {"e8m23", "fp32"},
      {"e11m52", "fp64"},
      {"e8m7", "bf16"},
      {"e8m10", "tf32"},
      {"fp8_e4m3", "fp8_e4m3"},
      {"e4m3", "e4m3"},
      {"fixed8_0", "int8"},
      {"bf16:rne", "bf16"},
      {"fixed16_8:sat", "fixed16_8"},
      {"fp6_e3m2:sat", "fp6_e3m2"},
      {"e4m3:sat:nosub:rtz", "e4m3:rtz:nosub:sat"},
      {"fixed16_8:wrap:sr", "fixed16_8:sr:wrap"},
      {"posit16_1:rna", "posit16_1:rna"},
      {"fp16:sat:sr", "fp16:sr:sat"},
  };
  for (const Canon& c : canon) {
    INFO(c.spec);
    CHECK(format_name(parse_format(c.spec)) == c.name);
  }
}

TEST_CASE("every error names the bad token", "[format_spec]") {
  struct Bad {
    const char* spec;
    const char* token;  // must appear quoted in the message
    const char* why;    // and this phrase
  };
  const Bad bad[] = {
      // unknown names
      {"fp7", "fp7", "not a format name"},
      {"float", "float", "not a format name"},
      {"E5M2", "E5M2", "not a format name"},
      {"e5m", "e5m", "eXmY"},
      {"e5x2", "e5x2", "eXmY"},
      {"posit8", "posit8", "not a format name"},
      {"fixed16", "fixed16", "not a format name"},
      {"int", "int", "not a format name"},
      {"", "", "empty"},
      // unknown modifiers
      {"fp16:fast", "fast", "not a modifier"},
      {"fp16:RNE", "RNE", "not a modifier"},
      {"fp16:", "", "empty modifier"},
      {"fp16::rtz", "", "empty modifier"},
      // fields out of range
      {"e0m3", "e0m3", "exponent width"},
      {"e12m3", "e12m3", "exponent width"},
      {"e5m53", "e5m53", "fraction width"},
      {"posit1_0", "posit1_0", "width"},
      {"posit65_0", "posit65_0", "width"},
      {"posit8_7", "posit8_7", "es"},
      {"fixed1_0", "fixed1_0", "width"},
      {"fixed54_0", "fixed54_0", "width"},
      {"int99", "int99", "width"},
      {"fixed16_65", "fixed16_65", "fraction bits"},
      // contradictory pairs
      {"fp16:rtz:rup", "rup", "contradicts"},
      {"fp16:sr:rne", "rne", "contradicts"},
      {"fixed16_8:sat:wrap", "wrap", "contradicts"},
      {"fixed16_8:wrap:sat", "sat", "contradicts"},
      // modifiers that do not apply
      {"posit16_1:nosub", "nosub", "eXmY formats only"},
      {"fixed16_8:nosub", "nosub", "eXmY formats only"},
      {"posit16_1:sat", "sat", "posits always saturate"},
      {"fp16:wrap", "wrap", "fixed point only"},
      {"posit8_0:wrap", "wrap", "fixed point only"},
      // posits that binary64 cannot hold
      {"posit64_0", "posit64_0", "cannot be emulated"},
      {"posit64_6", "posit64_6", "cannot be emulated"},
      {"posit60_1", "posit60_1", "cannot be emulated"},
  };
  for (const Bad& b : bad) {
    INFO(b.spec);
    std::string message = parse_error(b.spec);
    CHECK_FALSE(message.empty());
    CHECK(contains(message, "'" + std::string(b.token) + "'"));
    CHECK(contains(message, b.why));
  }
  // The message for a posit that does not fit says why, in numbers.
  CHECK(contains(parse_error("posit64_0"), "fraction bits, more than the 52"));
  CHECK(contains(parse_error("posit64_6"), "smallest subnormal"));
}

TEST_CASE("an error echoing a spec is one line whatever the spec holds", "[format_spec]") {
  // Found by tests/fuzz/fuzz_format_spec.cpp: a newline in the spec split the message.
  const std::string spec = std::string("p\n\x01") + "\x7f:x";
  try {
    parse_format(spec);
    FAIL("accepted");
  } catch (const FormatError& e) {
    const std::string m = e.what();
    CHECK(m.find('\n') == std::string::npos);
    CHECK(m.find("'p\\x0a\\x01\\x7f'") != std::string::npos);
  }
  // Every OneLineError escapes control bytes and keeps UTF-8 as it is.
  CHECK(std::string(FormatError("a\tb\r\nc \xc3\xa9").what()) == "a\\x09b\\x0d\\x0ac \xc3\xa9");
}

TEST_CASE("accumulator-only formats parse but are refused as storage", "[format_spec]") {
  const char* const accumulators[] = {"fp64",      "e11m52",    "e9m3",      "e8m24",
                                      "e5m30",     "int32",     "int25",     "fixed32_16",
                                      "fixed53_0", "posit32_2", "posit40_0", "posit16_4"};
  for (const char* spec : accumulators) {
    INFO(spec);
    Format f = parse_format(spec);
    CHECK(f.accumulator_only);
    std::string message;
    try {
      emu::require_storage(f, "weights");
    } catch (const FormatError& e) {
      message = e.what();
    }
    CHECK(contains(message, "accumulator-only"));
    CHECK(contains(message, format_name(f)));
    CHECK(contains(message, "weights"));
  }
  const char* const storage[] = {"fp32",     "tf32",      "bf16",       "fp16",      "e8m0",
                                 "fp8_e4m3", "fp4_e2m1",  "posit8_2",   "posit16_2", "posit24_0",
                                 "int24",    "fixed24_8", "fixed24_64", "e2m1:nosub"};
  for (const char* spec : storage) {
    INFO(spec);
    Format f = parse_format(spec);
    CHECK_FALSE(f.accumulator_only);
    CHECK_NOTHROW(emu::require_storage(f, "weights"));
  }
}

TEST_CASE("describe_format gives the known properties", "[format_info]") {
  using emu::describe_format;
  using emu::FormatInfo;
  FormatInfo e5m2 = describe_format(parse_format("fp8_e5m2"));
  CHECK(e5m2.name == "e5m2");
  CHECK(e5m2.width == 8);
  CHECK(e5m2.max_finite == 57344);
  CHECK(e5m2.lowest == -57344);
  CHECK(e5m2.min_normal == 0x1p-14);
  CHECK(e5m2.min_subnormal == 0x1p-16);
  CHECK(e5m2.epsilon == 0.25);
  CHECK(e5m2.finite_codes == 248);
  CHECK(e5m2.nan_codes == 6);
  CHECK(e5m2.inf_codes == 2);
  CHECK(e5m2.zero_codes == 2);
  CHECK_FALSE(e5m2.accumulator_only);
  CHECK(e5m2.rounding.rfind("rne", 0) == 0);

  FormatInfo e4m3 = describe_format(parse_format("fp8_e4m3"));
  CHECK(e4m3.max_finite == 448);
  CHECK(e4m3.min_subnormal == 0x1p-9);
  CHECK(e4m3.finite_codes == 254);
  CHECK(e4m3.nan_codes == 2);
  CHECK(e4m3.inf_codes == 0);

  FormatInfo fp4 = describe_format(parse_format("fp4_e2m1"));
  CHECK(fp4.max_finite == 6);
  CHECK(fp4.min_normal == 1);
  CHECK(fp4.min_subnormal == 0.5);
  CHECK(fp4.finite_codes == 16);

  FormatInfo nosub = describe_format(parse_format("fp16:nosub:rtz"));
  CHECK(nosub.min_subnormal == 0);
  CHECK(nosub.min_positive == 0x1p-14);
  CHECK(nosub.rounding.rfind("rtz", 0) == 0);

  FormatInfo e5m0 = describe_format(parse_format("e5m0"));
  CHECK(e5m0.nan_codes == 0);  // no fraction bits: the top exponent is Inf only
  CHECK(e5m0.inf_codes == 2);
  CHECK(e5m0.min_subnormal == 0);

  FormatInfo fp64 = describe_format(parse_format("fp64"));
  CHECK(fp64.accumulator_only);
  CHECK(contains(fp64.accumulator_reason, "accumulator-only"));
  CHECK(fp64.nan_codes == (1ull << 53) - 2);
  CHECK(fp64.finite_codes == 0ull - (1ull << 53));  // 2^64 - 2^53
  CHECK(fp64.min_subnormal == 0x1p-1074);

  FormatInfo p8 = describe_format(parse_format("posit8_1"));
  CHECK(p8.family == "posit");
  CHECK(p8.max_finite == 4096);
  CHECK(p8.min_positive == 0x1p-12);
  CHECK(p8.epsilon == 0x1p-4);  // 0 10 0 0001 over 0 10 0 0000
  CHECK(p8.finite_codes == 255);
  CHECK(p8.nan_codes == 1);
  CHECK(p8.min_subnormal == 0);
  CHECK(describe_format(parse_format("posit3_2")).epsilon == 15);  // 1 -> 16 is the next posit
  CHECK(describe_format(parse_format("posit2_0")).epsilon == 0);   // 1 is maxpos

  FormatInfo fx = describe_format(parse_format("fixed16_8:wrap"));
  CHECK(fx.family == "fixed point");
  CHECK(fx.max_finite == 127.99609375);
  CHECK(fx.lowest == -128);
  CHECK(fx.epsilon == 0x1p-8);
  CHECK(fx.finite_codes == 65536);
  CHECK(fx.zero_codes == 1);
  bool mentions_wrap = false;
  for (const auto& s : fx.specials) mentions_wrap = mentions_wrap || contains(s, "wrap");
  CHECK(mentions_wrap);

  // Counts always make up 2^width.
  for (const char* base : kBases) {
    Format f = parse_format(base);
    FormatInfo i = describe_format(f);
    INFO(base);
    uint64_t sum = i.finite_codes + i.nan_codes + i.inf_codes;  // wraps to 0 for 2^64
    CHECK(sum == (i.width == 64 ? 0 : 1ull << i.width));
    CHECK(i.name == format_name(f));
    CHECK_FALSE(i.specials.empty());
  }
}
