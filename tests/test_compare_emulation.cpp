// compare-emulation (analysis/compare_emulation.h in-process; the binary
// built from tools/compare_emulation.cpp for the printed tables):
//  - a matmul whose exact result is representable: op-level (and layer-level) error 0;
//  - a sum built to double-round: layer-level (fp32 sum, then bf16) rounds a
//    tie the exact sum is above, error derived by hand; op-level with an fp64
//    accumulator rounds once and lands on the correctly rounded value;
//  - host _Float16 arithmetic equals op-level fp16 emulation bit for bit;
//  - the real binary's table equals statistics computed here from the
//    documented Philox inputs, a float64 reference, a float loop for
//    layer-level and per-step roundings for op-level (matmul and conv3x3).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/compare_emulation.h"
#include "numerics/format_spec.h"
#include "numerics/philox.h"
#include "numerics/round.h"

using namespace emu;
using namespace emu::analysis;
namespace fs = std::filesystem;

namespace {

// The documented inputs, written out again here (not calling uniform_inputs).
std::vector<float> inputs(uint64_t seed, uint64_t stream, int64_t n, double lo, double hi, const Format& f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double u =
        static_cast<double>(philox_draw(seed, stream, static_cast<uint64_t>(i)) >> 8) / 16777216.0;
    v[i] = static_cast<float>(round_value(f, static_cast<double>(static_cast<float>(lo + (hi - lo) * u))));
  }
  return v;
}

struct Stats {
  double max = 0, mean = 0, median = 0;
};

Stats stats(std::vector<double> e) {
  Stats s;
  double sum = 0;
  for (double x : e) sum += x, s.max = std::max(s.max, x);
  s.mean = sum / e.size();
  std::sort(e.begin(), e.end());
  s.median = e[(e.size() - 1) / 2];
  return s;
}

// One output from its terms: reference (float64), layer-level (binary32 loop, output
// rounded) and op-level (product rounded to f, binary32 sum, output rounded).
void reduce(const std::vector<std::pair<float, float>>& terms, const Format& f, double& ref, float& layer,
            float& op) {
  ref = 0;
  float acc_l = 0, acc_o = 0;
  for (const auto& [a, b] : terms) {
    ref += static_cast<double>(a) * b;
    acc_l = acc_l + a * b;
    const float p = static_cast<float>(round_value(f, static_cast<double>(a) * b));
    acc_o = acc_o + p;
  }
  layer = static_cast<float>(round_value(f, acc_l));
  op = static_cast<float>(round_value(f, acc_o));
}

std::string run(const std::string& args) {
  const char* bin = std::getenv("EMUTRAIN_BIN");
  REQUIRE(bin != nullptr);
  const fs::path out =
      fs::temp_directory_path() / ("emutrain_test_cmp_" + std::to_string(::getpid()) + ".txt");
  const int rc =
      std::system((std::string(bin) + " compare-emulation " + args + " > " + out.string() + " 2>&1").c_str());
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  INFO(ss.str());
  REQUIRE(rc == 0);
  return ss.str();
}

// The three numbers of the table row that starts with `format` and contains `method`.
Stats printed(const std::string& table, const std::string& format, const std::string& method) {
  std::istringstream in(table);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(format + " ", 0) != 0 || line.find(method) == std::string::npos) continue;
    std::istringstream words(line);
    std::vector<std::string> w;
    std::string x;
    while (words >> x) w.push_back(x);
    REQUIRE(w.size() >= 5);
    return {std::stod(w[w.size() - 4]), std::stod(w[w.size() - 3]), std::stod(w[w.size() - 2])};
  }
  FAIL("no row " << format << " / " << method << " in\n" << table);
  return {};
}

void check_close(const Stats& got, const Stats& want) {
  // Printed with 7 significant digits.
  CHECK(got.max == Approx(want.max).epsilon(1e-6).margin(1e-300));
  CHECK(got.mean == Approx(want.mean).epsilon(1e-6).margin(1e-300));
  CHECK(got.median == Approx(want.median).epsilon(1e-6).margin(1e-300));
}

}  // namespace

TEST_CASE("a representable matmul has zero op-level error", "[compare_emulation]") {
  const Format bf16 = parse_format("bf16"), fp32 = parse_format("fp32");
  // A (2x3), B (3x2): small integers, every product and sum exact, results below 256.
  const std::vector<float> A = {1, 2, 3, -4, 5, 6}, B = {7, -8, 9, 10, 11, 12};
  const CompareOutputs r = compare_matmul(bf16, fp32, A, B, 2, 2, 3);
  // By hand: [1 2 3; -4 5 6] [7 -8; 9 10; 11 12] = [58 48; 83 154].
  CHECK(r.reference == std::vector<double>{58, 48, 83, 154});
  CHECK(r.op == std::vector<float>{58, 48, 83, 154});
  CHECK(r.layer == std::vector<float>{58, 48, 83, 154});
  int64_t exact = 0;
  const ErrorStats s = error_stats(relative_errors(r.reference, r.op, &exact));
  CHECK(s.max == 0);
  CHECK(exact == 4);
}

TEST_CASE("layer-level emulation double-rounds a sum built for it", "[compare_emulation]") {
  // a = (1, 2^-8, 2^-30), b = (1, 1, 1), all bf16 values; exact sum 1 + 2^-8 + 2^-30.
  // Layer-level: the binary32 sum drops 2^-30 (below half an ulp, 2^-24) -> 1 + 2^-8,
  // exactly half-way between the bf16 neighbours 1 and 1 + 2^-7 -> even -> 1.
  // Rounded once, the exact sum lies above the tie -> 1 + 2^-7.
  const Format bf16 = parse_format("bf16"), fp32 = parse_format("fp32"), fp64 = parse_format("fp64");
  const std::vector<float> A = {1, 0x1p-8f, 0x1p-30f}, B = {1, 1, 1};
  const double exact = 1 + 0x1p-8 + 0x1p-30;
  const CompareOutputs r64 = compare_matmul(bf16, fp64, A, B, 1, 1, 3);
  CHECK(r64.reference[0] == exact);
  CHECK(r64.layer[0] == 1.0f);
  CHECK(r64.op[0] == 1 + 0x1p-7f);  // one rounding of the exact sum
  const double layer_err = relative_errors(r64.reference, r64.layer)[0];
  CHECK(layer_err > 0);
  CHECK(layer_err == (0x1p-8 + 0x1p-30) / exact);
  CHECK(relative_errors(r64.reference, r64.op)[0] == (0x1p-7 - 0x1p-8 - 0x1p-30) / exact);
  // With a binary32 accumulator the op-level sum double-rounds the same way.
  const CompareOutputs r32 = compare_matmul(bf16, fp32, A, B, 1, 1, 3);
  CHECK(r32.op[0] == 1.0f);
}

TEST_CASE("host _Float16 arithmetic equals op-level fp16 emulation bit for bit", "[compare_emulation]") {
  const Format fp16 = parse_format("fp16");
  for (const char* acc : {"fp16", "fp32"}) {
    std::vector<float> A = inputs(5, 0, 16 * 64, -3, 3, fp16), B = inputs(5, 1, 64 * 8, -3, 3, fp16);
    const CompareOutputs r = compare_matmul(fp16, parse_format(acc), A, B, 16, 8, 64);
    INFO(host_fp16_note());
    if (r.native.empty()) {
      WARN("no _Float16 on this compiler: " << host_fp16_note());
      continue;
    }
    REQUIRE(r.native.size() == r.op.size());
    CHECK(std::memcmp(r.native.data(), r.op.data(), r.op.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("the printed matmul table equals a float64 computation here", "[compare_emulation]") {
  const Format bf16 = parse_format("bf16");
  const int64_t M = 3, N = 4, K = 37;
  const std::string table = run("--op matmul --size 3,4,37 --range=-2,3 --format bf16 --seed 7 --trials 2");
  std::vector<double> el, eo;
  for (uint64_t t = 0; t < 2; ++t) {
    const std::vector<float> A = inputs(7, 2 * t, M * K, -2, 3, bf16),
                             B = inputs(7, 2 * t + 1, K * N, -2, 3, bf16);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        std::vector<std::pair<float, float>> terms;
        for (int64_t k = 0; k < K; ++k) terms.push_back({A[i * K + k], B[k * N + j]});
        double ref;
        float layer, op;
        reduce(terms, bf16, ref, layer, op);
        REQUIRE(ref != 0);
        el.push_back(std::fabs(layer - ref) / std::fabs(ref));
        eo.push_back(std::fabs(op - ref) / std::fabs(ref));
      }
  }
  check_close(printed(table, "bf16", "layer-level"), stats(el));
  check_close(printed(table, "bf16", "op-level"), stats(eo));
  CHECK(stats(el).max > 0);  // the case is not trivial
}

TEST_CASE("the printed conv3x3 table equals a float64 computation here", "[compare_emulation]") {
  const Format f = parse_format("fp8_e4m3");
  const int64_t N = 2, C = 3, H = 4, W = 5, O = 2;
  const std::string table =
      run("--op conv3x3 --size 2,3,4,5,2 --range=-1,1 --format fp8_e4m3 --seed 11 --out " +
          (fs::temp_directory_path() / ("emutrain_test_cmp_" + std::to_string(::getpid()))).string());
  const std::vector<float> x = inputs(11, 0, N * C * H * W, -1, 1, f), w = inputs(11, 1, O * C * 9, -1, 1, f);
  std::vector<double> el, eo;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t co = 0; co < O; ++co)
      for (int64_t oh = 0; oh < H; ++oh)
        for (int64_t ow = 0; ow < W; ++ow) {
          std::vector<std::pair<float, float>> terms;
          for (int64_t ci = 0; ci < C; ++ci)
            for (int64_t kh = 0; kh < 3; ++kh)
              for (int64_t kw = 0; kw < 3; ++kw) {
                const int64_t ih = oh + kh - 1, iw = ow + kw - 1;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;  // padding: zero terms
                terms.push_back({x[((n * C + ci) * H + ih) * W + iw], w[((co * C + ci) * 3 + kh) * 3 + kw]});
              }
          double ref;
          float layer, op;
          reduce(terms, f, ref, layer, op);
          if (ref == 0) continue;
          el.push_back(std::fabs(layer - ref) / std::fabs(ref));
          eo.push_back(std::fabs(op - ref) / std::fabs(ref));
        }
  check_close(printed(table, "fp8_e4m3", "layer-level"), stats(el));
  check_close(printed(table, "fp8_e4m3", "op-level"), stats(eo));
  CHECK(table.find("wrote ") != std::string::npos);
}
