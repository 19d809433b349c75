// Block formats against hand-checked vectors (OCP MX v1.0 section 6.3 and the
// choices of docs/block_formats.md): every expected value below was worked out
// by hand in the comment next to it, not by the code under test.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "numerics/block_format.h"
#include "numerics/format_info.h"
#include "numerics/format_spec.h"

using namespace emu;

namespace {

ReadLayout one_row(size_t n) { return rows_along_last_dim(static_cast<int64_t>(n), static_cast<int64_t>(n)); }

std::vector<float> q(const char* spec, const std::vector<float>& x, ReadLayout l = {}) {
  if (l.len == 0) l = one_row(x.size());
  std::vector<float> y(x.size());
  quantize_blocks(parse_format(spec), x.data(), y.data(), l);
  return y;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

#define CHECK_BITS(got, want)                       \
  do {                                              \
    std::vector<float> g_ = (got), w_ = (want);     \
    INFO("got " << ::Catch::Detail::stringify(g_)); \
    CHECK(same_bits(g_, w_));                       \
  } while (0)

}  // namespace

TEST_CASE("block format specs parse, print back and reject bad tokens", "[blocks]") {
  for (const char* spec : {"mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4", "mxint8", "nvfp4",
                           "bfp8_b16", "bfp1_b1", "bfp23_b65536", "afp4m3", "afp8m0", "mxfp8_e4m3:sr",
                           "mxfp4:rtz:nosub", "nvfp4:rna", "bfp4_b8:sr", "afp5m2:rdn"}) {
    INFO(spec);
    Format f = parse_format(spec);
    CHECK(is_block(f));
    CHECK_FALSE(is_plain_fp32(f));
    CHECK(format_name(f) == spec);
    CHECK(format_name(parse_format(format_name(f))) == spec);
  }
  CHECK(parse_format("mxfp8_e4m3").block.size == 32);
  CHECK(parse_format("nvfp4").block.size == 16);
  CHECK(parse_format("bfp6_b12").block.size == 12);
  CHECK(parse_format("bfp6_b12").block.elem_nbits == 7);
  auto throws_naming = [](const char* spec, const char* token) {
    INFO(spec);
    try {
      parse_format(spec);
      FAIL("no error");
    } catch (const FormatError& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(std::string("'") + token + "'") != std::string::npos);
    }
  };
  throws_naming("bfp0_b16", "bfp0_b16");
  throws_naming("bfp24_b16", "bfp24_b16");
  throws_naming("bfp8_b0", "bfp8_b0");
  throws_naming("bfp8", "bfp8");
  throws_naming("bfp8_16", "bfp8_16");
  throws_naming("afp9m2", "afp9m2");
  throws_naming("afp4m24", "afp4m24");
  throws_naming("afp4", "afp4");
  throws_naming("mxfp8_e4m3:sat", "sat");
  throws_naming("mxint8:nosub", "nosub");
  throws_naming("afp4m3:nosub", "nosub");
  throws_naming("nvfp4:wrap", "wrap");
  throws_naming("mxfp8_e4m3:rne:rtz", "rtz");
  throws_naming("mxfp8_e4m3:bogus", "bogus");
  throws_naming("mxfp7", "mxfp7");
  // Block formats are read formats only.
  CHECK_THROWS_AS(require_element_format(parse_format("mxfp4"), "acc"), FormatError);
  CHECK_NOTHROW(require_element_format(parse_format("fp8_e4m3"), "acc"));
  CHECK_NOTHROW(require_storage(parse_format("mxfp4"), "weights"));
}

TEST_CASE("describe_format describes block formats", "[blocks]") {
  FormatInfo i = describe_format(parse_format("mxfp8_e4m3"));
  CHECK(i.name == "mxfp8_e4m3");
  CHECK(i.width == 8);
  CHECK(i.family.find("MX") != std::string::npos);
  CHECK(i.layout.find("32") != std::string::npos);
  CHECK(i.max_finite ==
        448.0 * std::ldexp(1.0, 119));  // e4m3 max with the largest scale a binary32 block gets
  CHECK(i.min_subnormal == std::ldexp(1.0, -9 - 127));
  CHECK(i.nan_codes == 2);
  FormatInfo n = describe_format(parse_format("nvfp4"));
  CHECK(n.width == 4);
  CHECK(n.max_finite == 6.0 * 448.0);
  CHECK(n.min_positive == 0.5 * std::ldexp(1.0, -9));
  FormatInfo b = describe_format(parse_format("bfp8_b16"));
  CHECK(b.width == 9);
  CHECK(b.layout.find("16") != std::string::npos);
  FormatInfo a = describe_format(parse_format("afp4m3"));
  CHECK(a.min_subnormal == 0);
  CHECK(a.layout.find("whole tensor") != std::string::npos);
}

TEST_CASE("mxfp8_e4m3: hand-checked blocks", "[blocks][mx]") {
  // max 256 = 2^8 exactly: s = 8 - emax(8) = 0, X = 1. 1.0625 and 17 are ties (to 1 and 16, even
  // fractions); -3.3 -> -3.25 (1.65 * 2: 1.625 is nearer than 1.75).
  CHECK_BITS(q("mxfp8_e4m3", {256, 1.0625f, 17, -3.3f}), (std::vector<float>{256, 1, 16, -3.25f}));
  // max just below a power of two: 255.5 -> s = 7 - 8 = -1, X = 1/2; 511 rounds to 512 > 448 and saturates:
  // 448 * 1/2 = 224. 240 -> 480 = 1.875 * 2^8, whose code is e4m3's NaN: beyond 448, saturates too.
  CHECK_BITS(q("mxfp8_e4m3", {255.5f, 1, 240}), (std::vector<float>{224, 1, 224}));
  // Subnormal elements: max 448 -> s = 0; 2^-9 is the smallest subnormal, 2^-10 a tie to 0,
  // 3 * 2^-10 a tie to 2^-8 (even), 7 * 2^-9 a subnormal exactly.
  CHECK_BITS(q("mxfp8_e4m3", {448, 0x1p-9f, 0x1p-10f, 0x3p-10f, 0x7p-9f}),
             (std::vector<float>{448, 0x1p-9f, 0, 0x1p-8f, 0x7p-9f}));
  // Rounding modes apply to the elements: 1.0625 under rtz / rup / rna.
  CHECK_BITS(q("mxfp8_e4m3:rtz", {256, 1.0625f, -1.1f}), (std::vector<float>{256, 1, -1}));
  CHECK_BITS(q("mxfp8_e4m3:rup", {256, 1.0625f, -1.1f}), (std::vector<float>{256, 1.125f, -1}));
  CHECK_BITS(q("mxfp8_e4m3:rna", {256, 1.0625f, 17}), (std::vector<float>{256, 1.125f, 18}));
  // Tiny blocks: max 2^-128 -> s would be -136, clamped to -127: 2^-128 -> 0.5 exactly; 2^-140 / 2^-127
  // = 2^-13 is below half of e4m3's smallest subnormal 2^-9 and rounds to 0.
  CHECK_BITS(q("mxfp8_e4m3", {0x1p-140f, 0x1p-128f}), (std::vector<float>{0, 0x1p-128f}));
}

TEST_CASE("MX: all-zero, NaN and Inf blocks; a last partial block", "[blocks][mx]") {
  const Format f = parse_format("mxfp8_e4m3");
  // All zeros (signs kept): scale code 0x00 (s = -127).
  std::vector<float> z = {0.0f, -0.0f, 0.0f};
  BlockEncoded e = encode_blocks(f, z.data(), one_row(3));
  REQUIRE(e.meta.size() == 1);
  CHECK(e.meta[0] == 0x00);
  CHECK(e.elements == (std::vector<uint32_t>{0x00, 0x80, 0x00}));
  CHECK_BITS(q("mxfp8_e4m3", z), z);
  // NaN or Inf in a block: scale NaN (0xFF), the whole block reads NaN; the next block (of 32) is untouched.
  for (float special : {NAN, INFINITY, -INFINITY}) {
    std::vector<float> x(40, 1.0f);
    x[5] = special;
    x[35] = 3.0f;
    BlockEncoded s = encode_blocks(f, x.data(), one_row(40));
    REQUIRE(s.meta.size() == 2);
    CHECK(s.meta[0] == 0xFF);
    std::vector<float> y(40);
    decode_blocks(f, s, y.data());
    for (int i = 0; i < 32; ++i) CHECK(std::isnan(y[i]));
    // Last partial block (8 elements): its own scale, max 3 -> s = 1 - 8 = -7, code 120.
    CHECK(s.meta[1] == 120);
    for (int i = 32; i < 40; ++i) CHECK(y[i] == (i == 35 ? 3.0f : 1.0f));
  }
  // Partial block scale differs from the full block's: row of 34 = block of 32 (max 96) + block of 2 (max
  // 0.75).
  std::vector<float> x(34, 96.0f);
  x[32] = 0.75f;
  x[33] = 0.1f;  // 0.1 / 2^-9 = 51.2 -> 52 (ulp 4 in [32, 64)) -> 52 * 2^-9 = 0.1015625
  std::vector<float> y = q("mxfp8_e4m3", x);
  CHECK(y[31] == 96.0f);  // s = 6 - 8 = -2: 96 * 4 = 384 = 1.5 * 2^8 exact
  CHECK(y[32] == 0.75f);
  CHECK(y[33] == 0.1015625f);
  // Blocks along the rows of a layout: [2, 3] viewed as {outer 1, len 2, inner 3}: rows are columns.
  std::vector<float> m = {256, 1.0625f, 0.3f, 17, 17, 0.3f};  // columns (256,17) (1.0625,17) (0.3,0.3)
  std::vector<float> got(6);
  BlockEncoded c = encode_blocks(f, m.data(), ReadLayout{1, 2, 3});
  CHECK(c.meta.size() == 3);
  CHECK(c.meta[0] == 127);      // max 256 -> s = 0
  CHECK(c.meta[1] == 127 - 4);  // max 17 -> s = 4 - 8 = -4
  quantize_blocks(f, m.data(), got.data(), ReadLayout{1, 2, 3});
  // column 0 with X = 1: 17 -> 16; column 1 with X = 1/16: 1.0625 * 16 = 17 -> 16 -> 1, 17 -> 272 -> 272
  // exact (ulp 32 in [256, 512)? 272 = 8.5 * 32: a tie -> 256 (even)) -> 16; column 2: max 0.3 -> s = -2 - 8
  // = -10, 0.3 * 1024 = 307.2 -> 320 (ulp 32) -> 0.3125.
  CHECK_BITS(got, (std::vector<float>{256, 1, 0.3125f, 16, 16, 0.3125f}));
}

TEST_CASE("the other MX element types: hand-checked blocks", "[blocks][mx]") {
  // e5m2, emax 15: max 1 -> s = -15. 0.3 * 2^15 = 9830.4, ulp 2048 -> 10240 -> 0.3125.
  CHECK_BITS(q("mxfp8_e5m2", {1, 0.3f, -0.5f}), (std::vector<float>{1, 0.3125f, -0.5f}));
  // e3m2, emax 4 (max 28): max 10 -> s = 3 - 4 = -1: 10 -> 20 exact; 0.7 -> 1.4 -> 1.5 -> 0.75; 13.9 -> 27.8
  // -> 28.
  CHECK_BITS(q("mxfp6_e3m2", {10, 0.7f, 13.9f}), (std::vector<float>{10, 0.75f, 14}));
  // e3m2 saturation: max 15.5 -> s = -1: 31 > 28 -> 28 -> 14.
  CHECK_BITS(q("mxfp6_e3m2", {15.5f, 1}), (std::vector<float>{14, 1}));
  // e2m3, emax 2 (max 7.5): max 3 -> s = -1: 3 -> 6; 0.1 -> 0.2, subnormal grid 0.125 -> 0.25 -> 0.125.
  // -1.3 -> -2.6, ulp 0.25 in [2, 4) -> -2.5 -> -1.25.
  CHECK_BITS(q("mxfp6_e2m3", {3, 0.1f, -1.3f}), (std::vector<float>{3, 0.125f, -1.25f}));
  // e2m1 (fp4: 0 0.5 1 1.5 2 3 4 6), emax 2: max 5 -> s = 0: 5 tie -> 4; 1.25 tie -> 1; -2.5 tie -> -2; 0.2
  // -> 0.
  CHECK_BITS(q("mxfp4", {5, 1.25f, -2.5f, 0.2f}), (std::vector<float>{4, 1, -2, 0}));
  // e2m1: max 7 -> s = 0, 7 saturates at 6; 0.25 is a tie between 0 and 0.5 -> 0; 0.3 -> 0.5.
  CHECK_BITS(q("mxfp4", {7, 0.25f, 0.3f}), (std::vector<float>{6, 0, 0.5f}));
  // int8 with scale 2^-6, emax 0: max 1.99 -> s = 0: 0.3 * 64 = 19.2 -> 19/64; 1.5 -> 96/64.
  CHECK_BITS(q("mxint8", {1.99f, 0.3f, 1.5f}), (std::vector<float>{127.0f / 64, 19.0f / 64, 1.5f}));
  // Symmetric clamp: -1.9999 * 64 = -127.99 -> -128 -> clamped to -127 (code 0x81), not -2.
  const Format i8 = parse_format("mxint8");
  std::vector<float> x = {-1.9999f, 1};
  BlockEncoded e = encode_blocks(i8, x.data(), one_row(2));
  CHECK(e.meta[0] == 127);
  CHECK(e.elements[0] == 0x81);
  CHECK(e.elements[1] == 0x40);
  CHECK_BITS(q("mxint8", x), (std::vector<float>{-127.0f / 64, 1}));
  // max 3 -> s = 1, X = 2: 3 -> 1.5 -> 96; 0.01 -> 0.005 * 64 = 0.32 -> 0.
  CHECK_BITS(q("mxint8", {3, 0.01f}), (std::vector<float>{3, 0}));
}

TEST_CASE("bfp<m>_b<B>: shared exponent, sign + m-bit magnitude", "[blocks][bfp]") {
  // bfp8: max 3 -> E = 1, X = 2, magnitudes in units of 2 * 2^-7: 3 -> 192; 1.1 -> 70.4 -> 70 (1.09375);
  // -0.01 -> 0.64 -> 1 (-0.015625); 2.9 -> 185.6 -> 186 (2.90625).
  const Format f = parse_format("bfp8_b4");
  std::vector<float> x = {3.0f, 1.1f, -0.01f, 2.9f};
  BlockEncoded e = encode_blocks(f, x.data(), one_row(4));
  CHECK(e.elem_bits == 9);
  CHECK(e.meta[0] == 128);
  CHECK(e.elements == (std::vector<uint32_t>{192, 70, 0x100 | 1, 186}));
  CHECK_BITS(q("bfp8_b4", x), (std::vector<float>{3, 1.09375f, -0.015625f, 2.90625f}));
  // bfp3: 3 magnitude bits (0 .. 7 quarters of 2^E): 1.75 -> 7; 0.3 -> 1.2 -> 1; 1.9 -> 7.6 -> 8 saturates
  // at 7.
  CHECK_BITS(q("bfp3_b2", {1.75f, 0.3f, 1.9f, 1}), (std::vector<float>{1.75f, 0.25f, 1.75f, 1}));
  // bfp1: a sign and one bit: every element is 0 or +-2^E; 0.5 with max 1 is a tie -> 0 (even).
  CHECK_BITS(q("bfp1_b3", {1, 0.5f, -0.75f}), (std::vector<float>{1, 0, -1}));
  // bfp2 (magnitudes 0, 0.5, 1, 1.5 of 2^E), blocks of 2 along a row of 5: (4, 1): E = 2, 1/4 = 0.25 is a
  // tie -> 0; (0.1, 0.2): E = -3, 0.8 -> 1 (0.125), 1.6 -> 1.5 (0.1875); (9): E = 3, 1.125 -> 1 -> 8.
  CHECK_BITS(q("bfp2_b2", {4, 1, 0.1f, 0.2f, 9}), (std::vector<float>{4, 0, 0.125f, 0.1875f, 8}));
}

TEST_CASE("nvfp4: e4m3 scale = R(max/6), e2m1 elements", "[blocks][nvfp4]") {
  const Format f = parse_format("nvfp4");
  // max 12 -> 12/6 = 2 (code 0x40): 12 -> 6 -> 12; 5 -> 2.5 tie -> 2 -> 4.
  std::vector<float> x = {12, 5};
  BlockEncoded e = encode_blocks(f, x.data(), one_row(2));
  CHECK(e.meta[0] == 0x40);
  CHECK_BITS(q("nvfp4", x), (std::vector<float>{12, 4}));
  // Scale rounds down: 7/6 = 1.1667 -> 1.125 (9/8, code 0x39); 7 / 1.125 = 6.22 saturates at 6 -> 6.75;
  // 1 / 1.125 = 0.889 -> 1 -> 1.125.
  x = {7, 1};
  e = encode_blocks(f, x.data(), one_row(2));
  CHECK(e.meta[0] == 0x39);
  CHECK_BITS(q("nvfp4", x), (std::vector<float>{6.75f, 1.125f}));
  // 6.25 / 6 = 1.0417 -> 1.0: 6.25 saturates at 6.
  CHECK_BITS(q("nvfp4", {6.25f, -3}), (std::vector<float>{6, -3}));
  // Tiny scales: 0.01 / 6 = 0.00167 -> 2^-9 (the smallest e4m3 subnormal); 0.01 / 2^-9 = 5.12 -> 6.
  CHECK_BITS(q("nvfp4", {0.01f}), (std::vector<float>{0.01171875f}));
  // 0.005 / 6 = 0.00083 < 2^-10 (half the smallest subnormal) -> scale 0: the block is all zeros.
  x = {0.005f, -0.001f};
  e = encode_blocks(f, x.data(), one_row(2));
  CHECK(e.meta[0] == 0x00);
  CHECK_BITS(q("nvfp4", x), (std::vector<float>{0, 0}));
  // Huge: 6000 / 6 = 1000 saturates at 448: 6000 / 448 = 13.4 -> 6 -> 2688.
  CHECK_BITS(q("nvfp4", {6000, 448}), (std::vector<float>{2688, 448}));
  // NaN in a block: scale code 0x7F (e4m3 NaN) and the block of 16 is NaN; the next block is not:
  // 2/6 = 0.333 -> 0.34375 (ulp 2^-5 in [0.25, 0.5)); 2 / 0.34375 = 5.82 -> 6 -> 2.0625.
  std::vector<float> n(20, 2.0f);
  n[3] = NAN;
  std::vector<float> y = q("nvfp4", n);
  for (int i = 0; i < 16; ++i) CHECK(std::isnan(y[i]));
  for (int i = 16; i < 20; ++i) CHECK(y[i] == 2.0625f);
}

TEST_CASE("afp<X>m<Y>: one exponent bias for the whole tensor, no subnormals", "[blocks][afp]") {
  // afp4m3: e4m3 with all 15 nonzero exponent codes normal, code 0 = zero; emax_elem = 15 - 7 = 8.
  // max 3 -> s = 1 - 8 = -7 (bias 7 + 7 = 14): elements x * 128. 0.01 -> 1.28 -> 1.25 -> 0.009765625.
  // Smallest normal 2^-6 * 2^-7 = 2^-13; 2^-14 flushes to 0; 1.96875 * 2^-14 rounds up to 2^-13 first.
  const Format f = parse_format("afp4m3");
  std::vector<float> x = {3, 1, 0.01f, 0x1p-14f, 0x1.f8p-14f, -2};
  // The layout does not matter: one block, whatever the rows.
  BlockEncoded e = encode_blocks(f, x.data(), ReadLayout{2, 3, 1});
  CHECK(e.meta.size() == 1);
  CHECK(e.meta[0] == 127 - 7);
  std::vector<float> want = {3, 1, 0.009765625f, 0, 0x1p-13f, -2};
  CHECK_BITS(q("afp4m3", x, ReadLayout{2, 3, 1}), want);
  CHECK_BITS(q("afp4m3", x), want);
  // The bias follows the tensor: times 2^20, everything scales exactly.
  std::vector<float> big(x.size()), want_big(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    big[i] = std::ldexp(x[i], 20);
    want_big[i] = std::ldexp(want[i], 20);
  }
  CHECK_BITS(q("afp4m3", big), want_big);
  // Saturation: max 1.97 -> s = -8: 1.97 * 256 = 504.3 rounds to 512 > 480 -> 480 -> 1.875.
  CHECK_BITS(q("afp4m3", {1.97f, 1}), (std::vector<float>{1.875f, 1}));
}

TEST_CASE("encode -> decode equals quantize_blocks, and :sr draws by element index", "[blocks]") {
  std::vector<float> x(3 * 70);
  uint32_t s = 12345;
  for (float& v : x) {
    s = s * 1664525u + 1013904223u;
    v = std::ldexp(static_cast<float>(static_cast<int32_t>(s)) / 2147483648.0f, static_cast<int>(s % 13) - 6);
  }
  x[17] = 0;
  for (const char* spec :
       {"mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4", "mxint8", "nvfp4", "bfp8_b16",
        "bfp3_b5", "afp4m3", "afp2m5", "mxfp8_e4m3:sr", "nvfp4:sr", "bfp5_b7:rtz"}) {
    INFO(spec);
    const Format f = parse_format(spec);
    for (ReadLayout l : {ReadLayout{3, 70, 1}, ReadLayout{2, 35, 3}, ReadLayout{1, 3, 70}}) {
      BlockEncoded e = encode_blocks(f, x.data(), l, 7, 9);
      std::vector<float> a(x.size()), b(x.size());
      decode_blocks(f, e, a.data());
      quantize_blocks(f, x.data(), b.data(), l, 7, 9);
      CHECK(same_bits(a, b));
      // Element codes fit their width; values really changed (these formats are coarse).
      for (uint32_t c : e.elements) CHECK(c < (1u << e.elem_bits));
      CHECK_FALSE(same_bits(a, x));
    }
  }
  // :sr: another stream gives other bits; the same stream the same bits; rne is not what :sr gives.
  const Format sr = parse_format("mxfp4:sr");
  std::vector<float> a(x.size()), b(x.size()), c(x.size()), r(x.size());
  quantize_blocks(sr, x.data(), a.data(), ReadLayout{3, 70, 1}, 1, 2);
  quantize_blocks(sr, x.data(), b.data(), ReadLayout{3, 70, 1}, 1, 2);
  quantize_blocks(sr, x.data(), c.data(), ReadLayout{3, 70, 1}, 1, 3);
  quantize_blocks(parse_format("mxfp4"), x.data(), r.data(), ReadLayout{3, 70, 1});
  CHECK(same_bits(a, b));
  CHECK_FALSE(same_bits(a, c));
  CHECK_FALSE(same_bits(a, r));
}

TEST_CASE("decode_blocks refuses an encoding whose blocks do not match its format and layout", "[blocks]") {
  // Found by tests/fuzz/fuzz_block_decode.cpp: another block size left outputs unwritten.
  const Format f = parse_format("mxfp8_e4m3");
  std::vector<float> x(40, 1.0f), y(40);
  const BlockEncoded e = encode_blocks(f, x.data(), one_row(40));
  BlockEncoded g = e;
  g.block_size = 64;
  g.blocks_per_row = 1;
  g.meta.resize(1);
  CHECK_THROWS_WITH(decode_blocks(f, g, y.data()),
                    Catch::Contains("blocks of 64 elements, 1 per row, do not match "
                                    "mxfp8_e4m3 (blocks of 32, 2 per row of 40)"));
  g = e;
  g.layout.outer = -1;
  CHECK_THROWS_WITH(decode_blocks(f, g, y.data()), Catch::Contains("negative size"));
  CHECK_NOTHROW(decode_blocks(f, e, y.data()));
}

TEST_CASE("flipping metadata or element bits changes the decoded block as predicted", "[blocks]") {
  const Format f = parse_format("mxfp8_e4m3");
  std::vector<float> x(40, 1.0f);
  x[1] = 256;  // block 0: s = 0, code 127
  x[33] = 3;   // block 1: s = -7, code 120
  BlockEncoded e = encode_blocks(f, x.data(), one_row(40));
  std::vector<float> clean(40), y(40);
  decode_blocks(f, e, clean.data());
  REQUIRE(e.meta[0] == 127);
  // Bit 0 of the scale: 127 -> 126, s = -1: every element of block 0 halves, block 1 unchanged.
  BlockEncoded g = e;
  g.meta[0] ^= 1u;
  decode_blocks(f, g, y.data());
  for (int i = 0; i < 32; ++i) CHECK(y[i] == clean[i] / 2);
  for (int i = 32; i < 40; ++i) CHECK(y[i] == clean[i]);
  // Bit 7: 0x7F -> 0xFF is the NaN scale: block 0 reads NaN.
  g = e;
  g.meta[0] ^= 0x80u;
  decode_blocks(f, g, y.data());
  for (int i = 0; i < 32; ++i) CHECK(std::isnan(y[i]));
  g = e;
  // 1.0 in block 1 (X = 2^-7) is the element 128 = 2^7: e4m3 code (7 + 7) << 3 = 0x70; bit 3 makes it
  // 0x78 = 2^8: the value doubles, nothing else moves.
  REQUIRE(g.elements[34] == 0x70);
  g.elements[34] ^= 1u << 3;
  decode_blocks(f, g, y.data());
  for (int i = 0; i < 40; ++i) CHECK(y[i] == (i == 34 ? clean[i] * 2 : clean[i]));
  // nvfp4: scale 2.0 (0x40); bit 3 raises the e4m3 exponent by one: the whole block doubles.
  const Format nv = parse_format("nvfp4");
  std::vector<float> v = {12, 5, -1};
  BlockEncoded n = encode_blocks(nv, v.data(), one_row(3));
  REQUIRE(n.meta[0] == 0x40);
  std::vector<float> nc(3), ny(3);
  decode_blocks(nv, n, nc.data());
  n.meta[0] ^= 1u << 3;
  decode_blocks(nv, n, ny.data());
  for (int i = 0; i < 3; ++i) CHECK(ny[i] == 2 * nc[i]);
}

TEST_CASE("the bit-pattern fast path rounds elements exactly like the exact path", "[blocks]") {
  // Random values over many binades, with zeros, ties and values at the scale's edges.
  std::vector<float> x(64 * 33);
  uint32_t s = 99;
  for (size_t i = 0; i < x.size(); ++i) {
    s = s * 1664525u + 1013904223u;
    const float m = static_cast<float>(static_cast<int32_t>(s) >> 8) / 8388608.0f;  // 24-bit significands
    x[i] = std::ldexp(m, static_cast<int>((s >> 3) % 40) - 20);
    if (i % 17 == 0) x[i] = 0;
    if (i % 23 == 0) x[i] = std::ldexp(1.0625f, static_cast<int>(i % 9));  // e4m3 ties
  }
  const ReadLayout l{64, 33, 1};
  int fast_formats = 0;
  for (const char* base :
       {"mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4", "afp4m3", "afp3m6"}) {
    for (const char* mode : {"", ":rtz", ":rup", ":rdn", ":rna", ":nosub"}) {
      std::string spec = std::string(base) + mode;
      if (spec.rfind("afp", 0) == 0 && std::string(mode) == ":nosub") continue;
      INFO(spec);
      const Format f = parse_format(spec);
      BlockParams fast = block_params(f), exact = fast;
      fast_formats += fast.use_fast;
      exact.use_fast = false;
      const ReadLayout bl = block_layout(fast, l);
      const int64_t B = fast.block_size > 0 ? fast.block_size : bl.len;
      std::vector<float> a(x.size()), b(x.size());
      for (int64_t r = 0; r < bl.rows(); ++r)
        for (int64_t k0 = 0; k0 < bl.len; k0 += B) {
          quantize_one_block(fast, x.data(), bl, r, k0, std::min(bl.len, k0 + B), a.data(), 0, 0);
          quantize_one_block(exact, x.data(), bl, r, k0, std::min(bl.len, k0 + B), b.data(), 0, 0);
        }
      CHECK(same_bits(a, b));
    }
  }
  CHECK(fast_formats == 7 * 6 - 2);  // every one of these takes the fast path
}

TEST_CASE("block_index maps every element to the block whose metadata it uses", "[blocks]") {
  // [2, 5, 3] with blocks of 2 along the middle dimension: rows (o, i), 3 blocks per row.
  const Format f = parse_format("bfp4_b2");
  std::vector<float> x(30);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i + 1);
  BlockEncoded e = encode_blocks(f, x.data(), ReadLayout{2, 5, 3});
  REQUIRE(e.meta.size() == 2 * 3 * 3);
  std::vector<float> clean(30), y(30);
  decode_blocks(f, e, clean.data());
  for (int64_t b = 0; b < static_cast<int64_t>(e.meta.size()); ++b) {
    BlockEncoded g = e;
    g.meta[b] -= 1;  // halves exactly the elements of block b
    decode_blocks(f, g, y.data());
    for (int64_t i = 0; i < 30; ++i) {
      INFO("block " << b << " element " << i);
      CHECK(y[i] == (block_index(e, i) == b ? clean[i] / 2 : clean[i]));
    }
  }
  // Element 16 = (o 1, k 0, i 1): row 1 * 3 + 1 = 4, block 0 -> 12.
  CHECK(block_index(e, 16) == 12);
  // afp: one block; a metadata bit halves the whole tensor.
  const Format a = parse_format("afp4m3");
  BlockEncoded t = encode_blocks(a, x.data(), ReadLayout{2, 5, 3});
  REQUIRE(t.meta.size() == 1);
  decode_blocks(a, t, clean.data());
  REQUIRE(t.meta[0] == 123);
  t.meta[0] ^= 1u;
  decode_blocks(a, t, y.data());
  // max 30 -> s = 4 - 8 = -4 -> code 123 (odd): bit 0 lowers s by one, halving every value.
  for (int i = 0; i < 30; ++i) CHECK(y[i] == clean[i] / 2);
}
