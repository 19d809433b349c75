// `emutrain bench gemm --device cuda|cuda-host`: the CUDA backend's gemm op
// (backends/cuda/ops/gemm.cu) on device tensors under the policies of the CPU
// bench, next to cuBLAS SGEMM with TF32 off timed in the same run (cuda; cuBLAS
// is loaded from the machine at run time and the file is named), with the
// targets of docs/cuda_kernels.md printed beside each ratio.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cuda/register.h"
#include "core/backend.h"
#include "core/device_select.h"
#include "core/tensor.h"
#include "tools/bench_gemm.h"
#include "tools/bench_machine.h"
#ifdef EMUTRAIN_HAVE_CUDA
#include "backends/cuda/cublas_reference.h"
#endif

namespace emu::cli {
namespace {

struct DeviceCase {
  const char* label;
  const char* mul;
  const char* acc;
  bool int8;
  double target;  // slowest allowed time / cuBLAS time (0: none)
  const char* target_text;
};

}  // namespace

int run_bench_gemm_device(const BenchGemmOptions& opts, std::ostream& out) {
  const std::string& device = opts.device;
  if (device != "cuda" && device != "cuda-host")
    throw std::invalid_argument("bench gemm: --device: '" + device + "' (give cpu, cuda or cuda-host)");
  BenchGemmOptions o = opts;
  for (int64_t* d : {&o.m, &o.n, &o.k}) *d = *d ? *d : (device == "cuda" ? 4096 : 128);
  if (o.m <= 0 || o.n <= 0 || o.k <= 0)
    throw std::invalid_argument("bench gemm: --m, --n and --k must be positive");
  const int64_t M = o.m, N = o.n, K = o.k;
  const double macs = static_cast<double>(M) * N * K;
  register_cuda_devices();
  activate_device(device);  // a one-line reason when there is no GPU
  Backend& backend = backend_for(Device::Cuda);

  std::mt19937_64 rng(o.seed);
  std::normal_distribution<float> normal;
  std::vector<float> A(static_cast<size_t>(M * K)), B(static_cast<size_t>(K * N));
  for (float& x : A) x = normal(rng);
  for (float& x : B) x = normal(rng);
  std::vector<float> A8(A.size()), B8(B.size());
  auto q8 = [](float x) { return std::min(127.0f, std::max(-128.0f, std::nearbyint(32.0f * x))); };
  std::transform(A.begin(), A.end(), A8.begin(), q8);
  std::transform(B.begin(), B.end(), B8.begin(), q8);
  const Tensor dA = Tensor::from_vector({M, K}, A).to(Device::Cuda),
               dB = Tensor::from_vector({K, N}, B).to(Device::Cuda);
  const Tensor dA8 = Tensor::from_vector({M, K}, A8).to(Device::Cuda),
               dB8 = Tensor::from_vector({K, N}, B8).to(Device::Cuda);
  Tensor dC = Tensor::zeros({M, N}).to(Device::Cuda);

  out << fmt::format(
      "emutrain bench gemm --device {}: C = A B, M={} N={} K={} ({:.3g} MAC), operands N(0,1), seed {}\n",
      device, M, N, K, macs, o.seed);
  out << fmt::format("{}; host: {}, load average {}\n", device_description(device), cpu_model(),
                     load_average());

  const double min_time = o.min_time;
  auto measure = [&](auto&& run) {
    using clock = std::chrono::steady_clock;
    run();
    synchronize_device(device);
    double best = 1e300, total = 0;
    int runs = 0;
    while (runs < 3 || total < min_time) {
      const auto t0 = clock::now();
      run();
      synchronize_device(device);
      const double s = std::chrono::duration<double>(clock::now() - t0).count();
      best = std::min(best, s);
      total += s;
      if (++runs >= 10000) break;
    }
    return best;
  };

  double blas = 0;
#ifdef EMUTRAIN_HAVE_CUDA
  if (device == "cuda") {
    const cuda::CublasTiming t = cuda::time_cublas_sgemm(M, N, K, A.data(), B.data(), min_time);
    if (t.found) {
      blas = t.best;
      out << "cuBLAS: " << t.library << "\n";
    } else {
      out << t.library << "; the ratios are left out\n";
    }
  }
#endif
  // Targets: docs/cuda_kernels.md (the slowest time allowed, as a multiple of cuBLAS's).
  const std::vector<DeviceCase> cases = {
      {"fp32 / acc fp32 (pass-through)", "fp32", "fp32", false, 2.5, "<= 2.5x (>= 0.4x cuBLAS throughput)"},
      {"mul e6m6 / acc fp32", "e6m6", "fp32", false, 0, ""},
      {"bf16 / acc fp32", "bf16", "fp32", false, 6.0, "<= 6x"},
      {"bf16 / acc bf16", "bf16", "bf16", false, 0, ""},
      {"e6m6 / acc e6m6", "e6m6", "e6m6", false, 20.0, "<= 20x"},
      {"posit16_1 / acc fp32", "posit16_1", "fp32", false, 60.0, "<= 60x"},
      {"posit16_1 / acc posit16_1", "posit16_1", "posit16_1", false, 0, ""},
      {"int8 / acc int32 (*)", "exact", "int32", true, 0, ""},
  };
  out << fmt::format("\n{:<34} {:>10} {:>9} {:>10}  {}\n", "policy (mul / acc, out fp32)", "best ms",
                     "GMAC/s", "vs cuBLAS", "target");
  if (blas > 0)
    out << fmt::format("{:<34} {:>10.3f} {:>9.1f} {:>10}\n", "cuBLAS SGEMM (fp32, TF32 off)", blas * 1e3,
                       macs / blas * 1e-9, "1x");
  else if (device == "cuda-host")
    out << "(no native baseline on cuda-host: the host executor runs the kernels on the CPU)\n";
  for (const DeviceCase& c : cases) {
    const MacPolicy p = bench_gemm_policy(c.mul, c.acc);
    const Tensor& a = c.int8 ? dA8 : dA;
    const Tensor& b = c.int8 ? dB8 : dB;
    const double t = measure([&] { backend.gemm(p, a, b, nullptr, dC, DrawKey{}); });
    std::string ratio = "-", verdict;
    if (blas > 0) {
      ratio = fmt::format("{:.2f}x", t / blas);
      if (c.target > 0)
        verdict = fmt::format("{} {}", c.target_text, t / blas <= c.target ? "met" : "NOT met");
    }
    out << fmt::format("{:<34} {:>10.3f} {:>9.2f} {:>10}  {}\n", c.label, t * 1e3, macs / t * 1e-9, ratio,
                       verdict);
  }
  out << "(*) operands quantized to int8 (round(32 x), clamped), exact products, int32 accumulator\n"
         "times: best of >= 3 runs after a warm-up, the device synchronised around each run\n";
  return 0;
}

}  // namespace emu::cli
