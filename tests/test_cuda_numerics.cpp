// The GPU computes every element-wise numerics function with the same bits as
// the CPU: memcmp, no tolerance (docs/contract.md section 7.1).
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "backends/cuda/device_query.h"
#include "backends/cuda/numerics_ops.h"
#include "numerics/format_spec.h"
#include "numerics/philox.h"
#include "numerics/round.h"

namespace {

using emu::cuda::ArithOp;

// Random binary32 bit patterns, with every special value up front.
std::vector<float> test_inputs(size_t n, uint64_t seed) {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.0f,
                          1e-45f,
                          -1e-45f,
                          1.17549435e-38f,
                          3.4028235e38f,
                          emu::bits_float(0x7f800000),
                          emu::bits_float(0xff800000),
                          emu::bits_float(0x7fc00000),
                          0.1f,
                          65504.0f,
                          65520.0f,
                          448.0f,
                          464.0f};
  std::mt19937_64 rng(seed);
  while (v.size() < n) v.push_back(emu::bits_float(static_cast<uint32_t>(rng())));
  return v;
}

double cpu_op(ArithOp op, const emu::Format& f, float a, float b, uint32_t rand) {
  switch (op) {
    case ArithOp::Quantize:
      return emu::round_value(f, a, rand);
    case ArithOp::Add:
      return emu::format_add(f, a, b, rand);
    case ArithOp::Sub:
      return emu::format_sub(f, a, b, rand);
    case ArithOp::Mul:
      return emu::format_mul(f, a, b, rand);
    case ArithOp::Div:
      return emu::format_div(f, a, b, rand);
    case ArithOp::Sqrt:
      return emu::format_sqrt(f, a, rand);
  }
  return 0;
}

bool have_device() {
  if (emu::cuda_device_count() > 0) return true;
  std::printf("SKIP: no CUDA device\n");
  return false;
}

}  // namespace

TEST_CASE("GPU element-wise numerics equal the CPU bit for bit", "[cuda]") {
  if (!have_device()) return;
  const char* specs[] = {"fp16",      "bf16",           "fp8_e4m3",      "e5m2",
                         "e4m3:rtz",  "e6m9:rup:nosub", "e8m12:rdn:sat", "fp6_e3m2",
                         "fp4_e2m1",  "fp16:sr",        "e5m2:sr:nosub", "posit8_0",
                         "posit16_1", "posit8_2:sr",    "fixed8_4",      "fixed16_8:rna:wrap",
                         "int8:sr",   "tf32:rna"};
  const size_t n = 1 << 16;
  const emu::cuda::DrawKey key{1234, 7, 1000};
  for (const char* spec : specs) {
    emu::Format f = emu::parse_format(spec);
    std::vector<float> a = test_inputs(n, 1), b = test_inputs(n, 2);
    for (ArithOp op :
         {ArithOp::Quantize, ArithOp::Add, ArithOp::Sub, ArithOp::Mul, ArithOp::Div, ArithOp::Sqrt}) {
      std::vector<float> x = a, y = b;
      if (op != ArithOp::Quantize)  // arithmetic operands are values of the format
        for (size_t i = 0; i < n; ++i) {
          x[i] = emu::quantize(f, a[i]);
          y[i] = emu::quantize(f, b[i]);
        }
      std::vector<float> gpu(n), cpu(n);
      emu::cuda::elementwise_on_device(op, f, x.data(), y.data(), gpu.data(), n, key);
      for (size_t i = 0; i < n; ++i) {
        uint32_t rand =
            emu::is_stochastic(f) ? emu::philox_draw(key.seed, key.stream, key.first_index + i) : 0;
        cpu[i] = static_cast<float>(cpu_op(op, f, x[i], y[i], rand));
      }
      INFO(spec << " op " << static_cast<int>(op));
      CHECK(std::memcmp(gpu.data(), cpu.data(), n * sizeof(float)) == 0);
    }
    if (f.nbits <= 16) {
      std::vector<uint32_t> codes(size_t(1) << f.nbits);
      for (size_t c = 0; c < codes.size(); ++c) codes[c] = static_cast<uint32_t>(c);
      std::vector<float> gpu(codes.size()), cpu(codes.size());
      emu::cuda::decode_on_device(f, codes.data(), gpu.data(), codes.size());
      for (size_t c = 0; c < codes.size(); ++c) cpu[c] = static_cast<float>(emu::decode(f, codes[c]));
      INFO(spec << " decode");
      CHECK(std::memcmp(gpu.data(), cpu.data(), codes.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("GPU non-linear functions equal the CPU bit for bit", "[cuda]") {
  if (!have_device()) return;
  std::vector<float> x = test_inputs(1 << 20, 3);
  for (int k = 0; k <= static_cast<int>(emu::cuda::FunctionOp::Sqrt); ++k) {
    auto fn = static_cast<emu::cuda::FunctionOp>(k);
    std::vector<float> gpu(x.size()), cpu(x.size());
    emu::cuda::function_on_device(fn, x.data(), gpu.data(), x.size());
    for (size_t i = 0; i < x.size(); ++i) cpu[i] = emu::cuda::function_on_host(fn, x[i]);
    INFO("function " << k);
    CHECK(std::memcmp(gpu.data(), cpu.data(), x.size() * sizeof(float)) == 0);
  }
}
