// CUDA intrinsics of the host executor against hand-computed answers at the
// edges CUDA documents (zero inputs, high halves of signed products, ties,
// directed rounding at powers of two, overflow and signed zeros).
#include <catch2/catch.hpp>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>

#include "backends/cuda/host/executor.h"

namespace {

bool same_bits(float a, float b) { return __float_as_uint(a) == __float_as_uint(b); }
bool same_bits(double a, double b) { return __double_as_longlong(a) == __double_as_longlong(b); }

TEST_CASE("host executor intrinsics: bit counting and reversal", "[executor]") {
  CHECK(__clz(0) == 32);
  CHECK(__clz(1) == 31);
  CHECK(__clz(-1) == 0);
  CHECK(__clz(0x00010000) == 15);
  CHECK(__clzll(0) == 64);
  CHECK(__clzll(1) == 63);
  CHECK(__clzll(1ll << 40) == 23);
  CHECK(__clzll(-1) == 0);
  CHECK(__popc(0u) == 0);
  CHECK(__popc(0xffffffffu) == 32);
  CHECK(__popc(0x80000001u) == 2);
  CHECK(__popcll(~0ull) == 64);
  CHECK(__popcll(0x8000000000000001ull) == 2);
  CHECK(__ffs(0) == 0);
  CHECK(__ffs(1) == 1);
  CHECK(__ffs(12) == 3);
  CHECK(__ffs(INT_MIN) == 32);
  CHECK(__ffsll(0) == 0);
  CHECK(__ffsll(1ll << 40) == 41);
  CHECK(__ffsll(LLONG_MIN) == 64);
  CHECK(__brev(1u) == 0x80000000u);
  CHECK(__brev(0x12345678u) == 0x1e6a2c48u);
  CHECK(__brev(0u) == 0u);
  CHECK(__brevll(1ull) == 0x8000000000000000ull);
  CHECK(__brevll(0x0000000100000000ull) == 0x0000000080000000ull);
  CHECK(__brevll(0x0123456789abcdefull) == 0xf7b3d591e6a2c480ull);
}

TEST_CASE("host executor intrinsics: high halves of products", "[executor]") {
  CHECK(__umulhi(0xffffffffu, 0xffffffffu) == 0xfffffffeu);
  CHECK(__umulhi(0x80000000u, 2u) == 1u);
  CHECK(__umulhi(0xffffu, 0xffffu) == 0u);
  CHECK(__mulhi(-1, 1) == -1);
  CHECK(__mulhi(0x40000000, 4) == 1);
  CHECK(__mulhi(INT_MIN, INT_MIN) == 0x40000000);
  CHECK(__mulhi(INT_MIN, 1) == -1);
  CHECK(__umul64hi(~0ull, ~0ull) == 0xfffffffffffffffeull);
  CHECK(__umul64hi(1ull << 63, 4ull) == 2ull);
  CHECK(__mul64hi(-1, 1) == -1);
  CHECK(__mul64hi(LLONG_MIN, LLONG_MIN) == (1ll << 62));
  CHECK(__mul64hi(-2, 1ll << 62) == -1);
}

TEST_CASE("host executor intrinsics: reinterpretations", "[executor]") {
  CHECK(__float_as_uint(1.0f) == 0x3f800000u);
  CHECK(std::isinf(__uint_as_float(0x7f800000u)));
  CHECK(__float_as_int(-2.0f) == static_cast<int>(0xc0000000u));
  CHECK(__int_as_float(1) == 0x1p-149f);
  CHECK(__double_as_longlong(1.0) == 0x3ff0000000000000ll);
  double neg_zero = __longlong_as_double(static_cast<long long>(0x8000000000000000ull));
  CHECK(neg_zero == 0.0);
  CHECK(std::signbit(neg_zero));
  int x = 17;
  CHECK(__ldg(&x) == 17);
}

TEST_CASE("host executor intrinsics: round-to-nearest operations and exact FMA", "[executor]") {
  const float one_ulp = 0x1p-23f;
  CHECK(__fadd_rn(1.0f, 0x1p-24f) == 1.0f);  // a tie goes to the even neighbour
  CHECK(__fadd_rn(1.0f, 0x1.8p-24f) == 1.0f + one_ulp);
  CHECK(__fsub_rn(1.0f, 0x1p-25f) == 1.0f);
  CHECK(__fmul_rn(1.0f + one_ulp, 1.0f + one_ulp) == 1.0f + 0x1p-22f);  // 2^-46 rounded away
  // Fused: (1+u)^2 - (1+2u) == u^2 exactly, where an unfused product would give 0.
  CHECK(__fmaf_rn(1.0f + one_ulp, 1.0f + one_ulp, -(1.0f + 0x1p-22f)) == 0x1p-46f);
  CHECK(__fma_rn(1.0 + 0x1p-52, 1.0 + 0x1p-52, -(1.0 + 0x1p-51)) == 0x1p-104);
  CHECK(__fdiv_rn(1.0f, 3.0f) == 0x1.555556p-2f);
  CHECK(__frcp_rn(3.0f) == 0x1.555556p-2f);
  CHECK(__fsqrt_rn(2.0f) == 0x1.6a09e6p+0f);
  CHECK(__dadd_rn(1.0, 0x1p-53) == 1.0);
  CHECK(__dsub_rn(1.0, 0x1p-54) == 1.0);
  CHECK(__dmul_rn(1.0 + 0x1p-52, 1.0 + 0x1p-52) == 1.0 + 0x1p-51);
  CHECK(__ddiv_rn(1.0, 3.0) == 0x1.5555555555555p-2);
  CHECK(__dsqrt_rn(2.0) == 0x1.6a09e667f3bcdp+0);
}

TEST_CASE("host executor intrinsics: directed additions", "[executor]") {
  const float up1 = std::nextafter(1.0f, 2.0f);    // 1 + 2^-23
  const float down1 = std::nextafter(1.0f, 0.0f);  // 1 - 2^-24
  CHECK(same_bits(__fadd_rd(1.0f, 0x1p-30f), 1.0f));
  CHECK(same_bits(__fadd_ru(1.0f, 0x1p-30f), up1));
  CHECK(same_bits(__fadd_rz(1.0f, 0x1p-30f), 1.0f));
  CHECK(same_bits(__fadd_rd(-1.0f, -0x1p-30f), -up1));
  CHECK(same_bits(__fadd_ru(-1.0f, -0x1p-30f), -1.0f));
  CHECK(same_bits(__fadd_rz(-1.0f, -0x1p-30f), -1.0f));
  // Just below a power of two the grid is twice as fine.
  CHECK(same_bits(__fadd_rd(1.0f, -0x1p-30f), down1));
  CHECK(same_bits(__fadd_ru(1.0f, -0x1p-30f), 1.0f));
  CHECK(same_bits(__fadd_rz(1.0f, -0x1p-30f), down1));
  // Round-to-nearest would go up here (1 + 0.75 ulp); down and toward zero must not.
  CHECK(same_bits(__fadd_rd(1.0f, 0x1.8p-24f), 1.0f));
  CHECK(same_bits(__fadd_rz(1.0f, 0x1.8p-24f), 1.0f));
  CHECK(same_bits(__fadd_ru(1.0f, 0x1.8p-24f), up1));
  // Exact sums are unchanged.
  CHECK(same_bits(__fadd_rd(1.5f, 0.25f), 1.75f));
  CHECK(same_bits(__fadd_ru(0x1p-149f, 0x1p-149f), 0x1p-148f));
  CHECK(same_bits(__fadd_rd(1.0f, -0x1p-149f), down1));
  CHECK(same_bits(__fadd_ru(1.0f, 0x1p-149f), up1));
  // Signed zeros: x + (-x) is -0 only when rounding down.
  CHECK(same_bits(__fadd_rd(1.0f, -1.0f), -0.0f));
  CHECK(same_bits(__fadd_ru(1.0f, -1.0f), 0.0f));
  CHECK(same_bits(__fadd_rz(1.0f, -1.0f), 0.0f));
  CHECK(same_bits(__fadd_rd(0.0f, -0.0f), -0.0f));
  CHECK(same_bits(__fadd_rd(0.0f, 0.0f), 0.0f));
  CHECK(same_bits(__fadd_ru(-0.0f, -0.0f), -0.0f));
  CHECK(same_bits(__fadd_ru(0.0f, -0.0f), 0.0f));
  // Overflow: the largest finite value on the side toward zero.
  CHECK(same_bits(__fadd_rd(FLT_MAX, FLT_MAX), FLT_MAX));
  CHECK(same_bits(__fadd_rz(FLT_MAX, FLT_MAX), FLT_MAX));
  CHECK(std::isinf(__fadd_ru(FLT_MAX, FLT_MAX)));
  CHECK(same_bits(__fadd_ru(-FLT_MAX, -FLT_MAX), -FLT_MAX));
  CHECK(same_bits(__fadd_rd(-FLT_MAX, -FLT_MAX), -INFINITY));
  CHECK(same_bits(__fadd_rd(FLT_MAX, 0x1p103f), FLT_MAX));  // round-to-nearest overflows (a tie)
  CHECK(std::isinf(__fadd_ru(FLT_MAX, 0x1p102f)));          // round-to-nearest stays finite
  CHECK(std::isnan(__fadd_rd(NAN, 1.0f)));
  CHECK(same_bits(__fadd_rz(INFINITY, -1.0f), INFINITY));
  // binary64 versions.
  CHECK(same_bits(__dadd_rd(1.0, 0x1p-60), 1.0));
  CHECK(same_bits(__dadd_ru(1.0, 0x1p-60), std::nextafter(1.0, 2.0)));
  CHECK(same_bits(__dadd_rz(-1.0, 0x1p-60), -std::nextafter(1.0, 0.0)));
  CHECK(same_bits(__dadd_rd(2.0, -2.0), -0.0));
}

TEST_CASE("host executor intrinsics: saturation and float-to-integer conversions", "[executor]") {
  CHECK(__saturatef(-0.5f) == 0.0f);
  CHECK(__saturatef(1.5f) == 1.0f);
  CHECK(__saturatef(0.25f) == 0.25f);
  CHECK(__saturatef(NAN) == 0.0f);
  CHECK(__float2int_rn(2.5f) == 2);
  CHECK(__float2int_rn(3.5f) == 4);
  CHECK(__float2int_rn(-2.5f) == -2);
  CHECK(__float2int_rn(-0.5f) == 0);
  CHECK(__float2int_rn(0.5000001f) == 1);
  CHECK(__float2int_rz(-2.7f) == -2);
  CHECK(__float2int_rd(-2.1f) == -3);
  CHECK(__float2int_ru(2.1f) == 3);
  CHECK(__float2int_rn(NAN) == 0);
  CHECK(__float2int_rn(3e9f) == INT_MAX);
  CHECK(__float2int_rn(-3e9f) == INT_MIN);
  CHECK(__float2int_rz(2147483520.0f) == 2147483520);
  CHECK(__float2int_rz(2147483648.0f) == INT_MAX);
  CHECK(__float2uint_rn(-1.0f) == 0u);
  CHECK(__float2uint_rn(5e9f) == UINT_MAX);
  CHECK(__float2uint_rz(4294967040.0f) == 4294967040u);
  CHECK(__float2uint_ru(0.1f) == 1u);
  CHECK(__float2uint_rd(-0.1f) == 0u);
  CHECK(__float2ll_rn(0x1p62f) == (1ll << 62));
  CHECK(__float2ll_rn(0x1p63f) == LLONG_MAX);
  CHECK(__float2ll_rz(-0x1p63f) == LLONG_MIN);
  CHECK(__double2int_rn(-2147483648.4) == INT_MIN);
  CHECK(__double2int_rn(-2147483648.6) == INT_MIN);
  CHECK(__double2int_rn(2147483647.4) == INT_MAX);
  CHECK(__double2int_rn(1.5) == 2);
  CHECK(__double2int_rz(-1.9) == -1);
  CHECK(__double2ll_rn(-2.5) == -2);
  CHECK(__int2float_rn(16777217) == 16777216.0f);  // a tie to even
  CHECK(__uint2float_rn(0xffffffffu) == 4294967296.0f);
}

TEST_CASE("host executor intrinsics: CUDA's min and max overloads", "[executor]") {
  CHECK(min(3, -2) == -2);
  CHECK(max(3, -2) == 3);
  CHECK(min(-1, 1u) == 1u);  // mixed signedness compares as unsigned, as in CUDA
  CHECK(max(2.0f, NAN) == 2.0f);
  CHECK(min(NAN, 2.0) == 2.0);
  CHECK(min(static_cast<size_t>(3), static_cast<size_t>(5)) == 3u);
  CHECK(max(-5ll, 4ll) == 4ll);
  CHECK(min(1ull << 40, 7ull) == 7ull);
}

TEST_CASE("host executor intrinsics: atomics return the old value and wrap as CUDA's", "[executor]") {
  unsigned u = 9;
  CHECK(atomicInc(&u, 9u) == 9u);
  CHECK(u == 0u);
  CHECK(atomicInc(&u, 9u) == 0u);
  CHECK(u == 1u);
  CHECK(atomicDec(&u, 5u) == 1u);
  CHECK(u == 0u);
  CHECK(atomicDec(&u, 5u) == 0u);
  CHECK(u == 5u);
  int i = INT_MAX;
  CHECK(atomicAdd(&i, 1) == INT_MAX);
  CHECK(i == INT_MIN);  // two's-complement wrap
  unsigned long long ull = 5;
  CHECK(atomicCAS(&ull, 4ull, 9ull) == 5ull);
  CHECK(ull == 5ull);
  CHECK(atomicCAS(&ull, 5ull, 9ull) == 5ull);
  CHECK(ull == 9ull);
  float f = 1.5f;
  CHECK(atomicExch(&f, -2.0f) == 1.5f);
  CHECK(f == -2.0f);
  unsigned bits = 0xf0u;
  CHECK(atomicAnd(&bits, 0x3cu) == 0xf0u);
  CHECK(atomicOr(&bits, 0x1u) == 0x30u);
  CHECK(atomicXor(&bits, 0x31u) == 0x31u);
  CHECK(bits == 0u);
}

}  // namespace
