// backends/cpu/stage_rows.h: the rows of StageRound operations (binary32 lanes
// for RNE formats of up to 22 significant bits, binary64 lanes for the other
// IEEE-like ones) give, element for element, the bits of the StageRound itself
// (numerics/stage_round.h, the definition the CUDA kernels share), for every
// rounding mode, with and without subnormals, saturating, :sr and plain fp32, on
// data that sends lanes down every fallback: zeros of both signs, Inf, NaN,
// subnormals, overflowing products, sums whose operands are too far apart to be
// exact in binary64, and sums a hair off a tie of the target format (where a
// binary32 sum rounded to nearest, not to odd, would round twice).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/reduce_arith.h"
#include "backends/cpu/stage_rows.h"
#include "numerics/format_spec.h"
#include "numerics/mac.h"

using namespace emu;

namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// n values: mostly N(0, 1) scaled over many binades, with specials sprinkled in.
std::vector<float> hostile(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> pick(0, 19), binade(-140, 120);
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::denorm_min(),
                            -1e-40f,
                            3.0e38f,
                            -3.0e38f,
                            1.0f};
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    const int k = pick(rng);
    if (k < 3)
      v[i] = specials[std::uniform_int_distribution<int>(0, 9)(rng)];
    else if (k < 8)
      v[i] = std::ldexp(normal(rng), binade(rng));
    else
      v[i] = normal(rng);
  }
  return v;
}

// Pairs (a, b) whose exact sum lies a hair above or below a tie of a format of p significant bits
// near 1 (a = 1 + 2^-p or 1 + 3 2^-p, b = +-2^-e for e from 25 to 60), and their differences'
// counterparts (b negated by sub), so that the binary32 sum rounded to nearest lands on the tie.
void near_ties(int p, std::vector<float>* a, std::vector<float>* b) {
  for (int odd : {1, 3})
    for (int e = 25; e <= 60; ++e)
      for (float sign : {1.0f, -1.0f})
        for (float scale : {1.0f, -0.125f, 1024.0f}) {
          a->push_back(scale * (1.0f + std::ldexp(static_cast<float>(odd), -p)));
          b->push_back(scale * sign * std::ldexp(1.0f, -e));
        }
}

}  // namespace

TEST_CASE("StageRows: rows of add, sub and mul equal the StageRound element by element", "[stage_rows]") {
  const char* formats[] = {"e6m6",     "bf16",     "fp16",     "fp16:nosub",   "e5m2:rtz",
                           "e4m3:rna", "e6m6:rup", "e6m6:rdn", "fp8_e4m3:sat", "e8m10",
                           "e5m2",     "e10m20",   "e8m21",    "fp32",         "e6m6:sr"};
  std::vector<float> a = hostile(1003, 1), b = hostile(1003, 2);
  for (int p : {7, 8, 11, 3, 4})  // e6m6, bf16, fp16 / e8m10, e5m2, e4m3 significands
    near_ties(p, &a, &b);
  const int64_t n = static_cast<int64_t>(a.size());  // not a multiple of 16 or 8: a tail too
  // The binary32 form is taken where the header says, up to man_bits 21 (e8m21: p + 2 = 24).
  for (const char* spec : {"e6m6", "bf16", "fp16", "e5m2", "e8m10", "e8m21", "fp8_e4m3:sat"})
    CHECK(cpu_rows::StageRows::binary32_lanes(parse_format(spec)));
  for (const char* spec : {"fp16:nosub", "e6m6:rup", "e5m2:rtz", "e10m20", "e6m6:sr", "fp32"})
    CHECK_FALSE(cpu_rows::StageRows::binary32_lanes(parse_format(spec)));
  const float scalars[] = {0.75f, -0.0f, 1e-30f, 6.5e4f, std::numeric_limits<float>::infinity()};
  for (const char* spec : formats) {
    const Format f = parse_format(spec);
    const StageRound sr(f, 7, 11);
    const cpu_rows::StageRows rows(sr);
    INFO(
        spec << (cpu_rows::StageRows::binary32_lanes(f) ? ": binary32 lanes" : ": binary64 lanes or scalar"));
    const uint64_t i0 = 1000;
    for (int op = 0; op < 3; ++op)
      for (int with_row = 0; with_row < 2; ++with_row)
        for (float bs : scalars) {
          if (with_row && bs != scalars[0]) continue;
          std::vector<float> got(n);
          const float* brow = with_row ? b.data() : nullptr;
          if (op == 0) rows.add(a.data(), brow, bs, got.data(), n, i0);
          if (op == 1) rows.sub(a.data(), brow, bs, got.data(), n, i0);
          if (op == 2) rows.mul(a.data(), brow, bs, got.data(), n, i0);
          int64_t bad = 0, first = -1;
          for (int64_t j = 0; j < n; ++j) {
            const float bj = with_row ? b[j] : bs;
            const uint64_t i = i0 + static_cast<uint64_t>(j);
            const float want = op == 0   ? sr.add(a[j], bj, i)
                               : op == 1 ? sr.sub(a[j], bj, i)
                                         : sr.mul(a[j], bj, i);
            if (bits_of(got[j]) != bits_of(want)) {
              ++bad;
              if (first < 0) first = j;
            }
          }
          INFO(spec << " op " << op << (with_row ? " row b" : " scalar b ") << bs << ": first mismatch at "
                    << first);
          CHECK(bad == 0);
        }
    // In place (out == a), as the batch-norm loops use it.
    std::vector<float> in_place = a, want(n);
    rows.sub(in_place.data(), b.data(), 0.0f, in_place.data(), n, i0);
    for (int64_t j = 0; j < n; ++j) want[j] = sr.sub(a[j], b[j], i0 + static_cast<uint64_t>(j));
    CHECK(std::memcmp(in_place.data(), want.data(), sizeof(float) * static_cast<size_t>(n)) == 0);
  }
}

TEST_CASE("Reducer: the rounded-product fast mode equals mac_reduce", "[stage_rows][reduce]") {
  // Policies whose products are rounded into a format of binary32 values and summed in plain fp32
  // (Reducer's RoundedMul mode), next to ones that stay on the other modes (fp32: Mul; e10m20: Ieee),
  // checked the same way, NaN bits included.
  const char* muls[] = {"e6m6",     "bf16",       "fp16",  "fp16:rtz", "e5m2:rup", "fp8_e4m3:sat",
                        "e4m3:rna", "e6m6:nosub", "e8m10", "e8m21",    "e10m20",   "fp32"};
  std::vector<float> a = hostile(777, 3), b = hostile(777, 4);
  for (int finite = 0; finite < 2; ++finite)
    for (const char* mul : muls) {
      if (finite)  // the second pass without Inf and NaN, so that the long sums are finite too
        for (std::vector<float>* v : {&a, &b})
          for (float& x : *v)
            if (!std::isfinite(x) || std::fabs(x) > 1e30f) x = 0.5f;
      MacPolicy p;
      p.mul_exact = false;
      p.mul = parse_format(mul);
      p.acc = parse_format("fp32");
      p.out = parse_format("fp32");
      const cpu_reduce::Reducer products(p, false, 777);
      MacPolicy ref = unfused(p);
      ref.out = p.acc;  // the Reducer leaves the sum in the accumulator's format
      for (int64_t K : {0, 1, 7, 8, 9, 256, 257, 777}) {
        // Shifted windows, so NaN and Inf operands land in some sums and not in others.
        for (int64_t off = 0; off + K <= 777; off += 97) {
          const double got = products.run(a.data() + off, b.data() + off, K, DrawKey{1, 2}, 0, 1);
          const double want =
              mac_reduce(ref, a.data() + off, b.data() + off, K, nullptr, [](uint64_t) { return 0u; });
          uint64_t gb, wb;
          std::memcpy(&gb, &got, sizeof gb);
          std::memcpy(&wb, &want, sizeof wb);
          INFO(mul << " K " << K << " offset " << off << ": " << got << " vs " << want);
          CHECK(gb == wb);
        }
      }
    }
}

TEST_CASE("Reducer::run_pair gives each reduction's mac_reduce bits", "[stage_rows][reduce]") {
  // Batch norm's backward pair: a plain sum next to a sum of products, in the modes that run the two
  // chains side by side (fp32 Sum with fp32 Mul or with e6m6 / bf16 RoundedMul) and in ones that run
  // them one after the other (e10m20 products: Ieee; :sr sums or products: Generic, each with the
  // draws of its own output index). Half the gradient terms
  // are zeros (ReLU's), so skipped terms meet Inf and NaN operands.
  std::vector<float> a = hostile(777, 5), b = hostile(777, 6), c = hostile(777, 7);
  for (size_t i = 0; i < a.size(); i += 2) a[i] = 0.0f;
  struct Pair {
    const char *acc_sum, *mul;
  };
  const Pair pairs[] = {{"fp32", "fp32"},   {"fp32", "e6m6"},    {"fp32", "bf16"},
                        {"fp32", "e10m20"}, {"bf16:sr", "fp32"}, {"fp32", "e6m6:sr"}};
  for (int finite = 0; finite < 2; ++finite) {
    if (finite)
      for (std::vector<float>* v : {&a, &b, &c})
        for (float& x : *v)
          if (!std::isfinite(x) || std::fabs(x) > 1e30f) x = 0.25f;
    for (const Pair& pr : pairs) {
      MacPolicy ps, pp;
      ps.acc = ps.out = parse_format(pr.acc_sum);
      pp.mul_exact = false;
      pp.mul = parse_format(pr.mul);
      pp.acc = pp.out = parse_format("fp32");
      const cpu_reduce::Reducer sum(ps, true, 777), products(pp, false, 777);
      MacPolicy ref_s = unfused(ps), ref_p = unfused(pp);
      ref_s.mul_exact = true;
      const std::vector<float> ones(777, 1.0f);
      const DrawKey ks{3, 4}, kp{5, 6};
      for (int64_t K : {0, 1, 7, 255, 256, 257, 777}) {
        for (int64_t off = 0; off + K <= 777; off += 131) {
          double s1 = 0, s2 = 0;
          // Outputs 9 and 10: each reduction draws by its own output index.
          cpu_reduce::Reducer::run_pair(sum, c.data() + off, nullptr, ks, 9, products, a.data() + off,
                                        b.data() + off, kp, 10, K, mac_site_count(K, 0), &s1, &s2);
          const uint64_t base = 9 * mac_site_count(K, 0), base2 = 10 * mac_site_count(K, 0);
          const double w1 = mac_reduce(ref_s, c.data() + off, ones.data(), K, nullptr, [&](uint64_t site) {
            return philox_draw(ks.seed, ks.stream, base + site);
          });
          const double w2 = mac_reduce(ref_p, a.data() + off, b.data() + off, K, nullptr, [&](uint64_t site) {
            return philox_draw(kp.seed, kp.stream, base2 + site);
          });
          INFO(pr.acc_sum << " sum, " << pr.mul << " products, K " << K << " offset " << off << ": " << s1
                          << " vs " << w1 << ", " << s2 << " vs " << w2);
          CHECK(double_bits(s1) == double_bits(w1));
          CHECK(double_bits(s2) == double_bits(w2));
        }
      }
    }
  }
}

TEST_CASE("Reducer::run_pair_rows gives mac_reduce's bits over the gathered rows, or declines",
          "[stage_rows][reduce]") {
  // A channel of an (N, C, S) array: N runs of S floats, C S apart (batch norm's gy and xhat).
  // Runs shorter and longer than a chain block (256), hostile values with half the gradient zeros.
  const int64_t C = 3;
  for (int64_t S : {1, 5, 256, 300}) {
    for (int64_t N : {1, 4}) {
      const size_t total = static_cast<size_t>(N * C * S);
      std::vector<float> g = hostile(total, 11), h = hostile(total, 12);
      for (size_t i = 0; i < g.size(); i += 2) g[i] = 0.0f;
      for (const char* mul : {"fp32", "e6m6", "e10m20", "e6m6:sr"}) {
        MacPolicy ps, pp;
        ps.acc = ps.out = parse_format("fp32");
        pp.mul_exact = false;
        pp.mul = parse_format(mul);
        pp.acc = pp.out = parse_format("fp32");
        const int64_t M = N * S;
        const cpu_reduce::Reducer sum(ps, true, M), products(pp, false, M);
        MacPolicy ref_s = unfused(ps), ref_p = unfused(pp);
        ref_s.mul_exact = true;
        const std::vector<float> ones(static_cast<size_t>(M), 1.0f);
        for (int64_t c = 0; c < C; ++c) {
          std::vector<float> gc, hc;  // the channel gathered, (n, s) order
          for (int64_t n = 0; n < N; ++n)
            for (int64_t s = 0; s < S; ++s) {
              gc.push_back(g[static_cast<size_t>((n * C + c) * S + s)]);
              hc.push_back(h[static_cast<size_t>((n * C + c) * S + s)]);
            }
          double s1 = -1, s2 = -1;
          const bool ran =
              cpu_reduce::Reducer::run_pair_rows(sum, g.data() + c * S, nullptr, products, g.data() + c * S,
                                                 h.data() + c * S, N, S, C * S, &s1, &s2);
          INFO(mul << " products, N " << N << " S " << S << " channel " << c);
          // Chained: fp32 and e6m6 products; e10m20 (Ieee) and :sr (Generic) must decline.
          const bool chained = std::string(mul) == "fp32" || std::string(mul) == "e6m6";
          REQUIRE(ran == chained);
          if (!ran) continue;
          auto no_draw = [](uint64_t) { return 0u; };
          const double w1 = mac_reduce(ref_s, gc.data(), ones.data(), M, nullptr, no_draw);
          const double w2 = mac_reduce(ref_p, gc.data(), hc.data(), M, nullptr, no_draw);
          CHECK(double_bits(s1) == double_bits(w1));
          CHECK(double_bits(s2) == double_bits(w2));
        }
      }
    }
  }
}
