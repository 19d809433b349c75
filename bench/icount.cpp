// One call of a CPU kernel, for instruction counts under valgrind (bench/icount.sh):
// load-independent measures on a shared machine, where wall-clock times are not.
//
//   icount gemm MUL ACC M N K                   mac_gemm_run, operands N(0,1) (int8 for acc int32)
//   icount conv fwd|gin|gw POLICY N C H W CO KH STRIDE PAD
//   icount maxpool_bwd POLICY N C H W K STRIDE PAD
//   icount xent_bwd POLICY N C                  cross_entropy_backward over N rows of C logits
//
// POLICY is MUL/ACC (e.g. fp32/fp32, e6m6/fp32). One thread; the counted function is named
// by bench/icount.sh (callgrind --toggle-collect).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "core/tensor.h"
#include "numerics/format_spec.h"

using namespace emu;

namespace {

MacPolicy policy(const std::string& spec) {
  const size_t slash = spec.find('/');
  const std::string mul = spec.substr(0, slash),
                    acc = slash == std::string::npos ? mul : spec.substr(slash + 1);
  MacPolicy p;
  p.mul_exact = mul == "exact";
  p.mul = parse_format(p.mul_exact ? "fp32" : mul);
  p.acc = parse_format(acc);
  p.out = parse_format("fp32");
  p.acc_outer = parse_format("fp32");
  return p;
}

Tensor normal(const Shape& s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd;
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = nd(rng);
  return Tensor::from_vector(s, v);
}

long arg(char** argv, int i) { return std::strtol(argv[i], nullptr, 10); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string what = argv[1];
  CpuBackend cpu;
  cpu.set_threads(1);
  if (what == "gemm" && argc == 7) {
    const MacPolicy p = policy(std::string(argv[2]) + "/" + argv[3]);
    const int64_t M = arg(argv, 4), N = arg(argv, 5), K = arg(argv, 6);
    std::mt19937_64 rng(1);
    std::normal_distribution<float> nd;
    const bool int8 = std::string(argv[3]) == "int32";
    auto val = [&] {
      return int8 ? std::min(127.0f, std::max(-128.0f, std::nearbyint(32.0f * nd(rng)))) : nd(rng);
    };
    std::vector<float> A(static_cast<size_t>(M * K)), B(static_cast<size_t>(K * N)),
        C(static_cast<size_t>(M * N));
    for (float& x : A) x = val();
    for (float& x : B) x = val();
    const GemmPath path =
        mac_gemm_run(p, A.data(), K, B.data(), N, C.data(), N, M, N, K, nullptr, GemmDraws{}, 1);
    std::printf("gemm %s path %s C[0]=%a\n", argv[2], gemm_path_name(path), C[0]);
    return 0;
  }
  if (what == "conv" && argc == 12) {
    const std::string op = argv[2];
    const MacPolicy p = policy(argv[3]);
    const int64_t N = arg(argv, 4), C = arg(argv, 5), H = arg(argv, 6), W = arg(argv, 7), CO = arg(argv, 8),
                  KH = arg(argv, 9), S = arg(argv, 10), P = arg(argv, 11);
    Conv2dParams cp;
    cp.stride_h = cp.stride_w = S;
    cp.pad_h = cp.pad_w = P;
    const int64_t OH = (H + 2 * P - KH) / S + 1, OW = (W + 2 * P - KH) / S + 1;
    const Tensor x = normal({N, C, H, W}, 1), w = normal({CO, C, KH, KH}, 2), gy = normal({N, CO, OH, OW}, 3);
    Tensor y = Tensor::zeros({N, CO, OH, OW}), gx = Tensor::zeros(x.shape()), gw = Tensor::zeros(w.shape());
    const DrawKey key{1, 2};
    if (op == "fwd") cpu.conv2d_forward(p, cp, x, w, nullptr, y, key);
    if (op == "gin") cpu.conv2d_grad_input(p, cp, gy, w, gx, key);
    if (op == "gw") cpu.conv2d_grad_weight(p, cp, x, gy, gw, key);
    std::printf("conv %s %s y[0]=%a gx[0]=%a gw[0]=%a\n", argv[2], argv[3], y.data()[0], gx.data()[0],
                gw.data()[0]);
    return 0;
  }
  std::fprintf(stderr, "icount: bad arguments\n");
  return 2;
}
