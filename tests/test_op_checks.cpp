// One home for each op family's argument checks (core/<family>_checks.h): a bad
// call fails before any work with the same message on the CPU reference and on
// the CUDA backend (run by the host executor, device cuda-host). Each case makes
// one bad call per family on both backends and compares both messages with the
// text the checker is written to give, so a backend that stops calling the
// shared checker, or a message that changes, fails here.
#include <catch2/catch.hpp>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cuda/register.h"
#include "core/backend.h"
#include "core/backend_ops_recurrent.h"
#include "core/backend_ops_sparsity.h"
#include "core/csr.h"
#include "core/device_select.h"
#include "core/optim_types.h"
#include "numerics/mac_policy.h"
#include "numerics/read_layout.h"
#include "numerics/recurrent_cells.h"

using namespace emu;

namespace {

struct BadCall {
  const char* family;
  std::string want;
  std::function<void(Backend&, Device)> call;
};

Tensor zeros(const Shape& s, Device d) { return Tensor::zeros(s, d); }
Tensor values(const Shape& s, const std::vector<float>& v, Device d) {
  return Tensor::from_vector(s, v).to(d);
}

std::vector<BadCall> bad_calls() {
  std::vector<BadCall> c;
  c.push_back({"dense", "gemm: a (2, 3) x b (4, 5) -> c (2, 5)", [](Backend& be, Device d) {
                 Tensor out = zeros({2, 5}, d);
                 be.gemm(MacPolicy{}, zeros({2, 3}, d), zeros({4, 5}, d), nullptr, out, DrawKey{});
               }});
  c.push_back({"dense", "quantize: (2, 3) into (3, 2)", [](Backend& be, Device d) {
                 Tensor y = zeros({3, 2}, d);
                 be.quantize(Format{}, zeros({2, 3}, d), y, DrawKey{});
               }});
  c.push_back({"memory", "copy: shapes (2,) and (3,) differ", [](Backend& be, Device d) {
                 Tensor dst = zeros({3}, d);
                 be.copy(zeros({2}, d), dst);
               }});
  c.push_back({"element-wise", "elementwise_add: shapes (2,) and (3,) differ", [](Backend& be, Device d) {
                 Tensor y = zeros({2}, d);
                 be.elementwise_add(Format{}, zeros({2}, d), zeros({3}, d), y, DrawKey{});
               }});
  c.push_back({"element-wise", "dropout: p = 2 is not in [0, 1]", [](Backend& be, Device d) {
                 Tensor y = zeros({4}, d);
                 be.dropout(2.0f, 1.0f, Format{}, zeros({4}, d), y, DrawKey{}, DrawKey{});
               }});
  c.push_back({"element-wise", "softmax_forward: expected two (rows, C) tensors, got (2, 3) and (3, 2)",
               [](Backend& be, Device d) {
                 Tensor y = zeros({3, 2}, d);
                 be.softmax_forward(MacPolicy{}, false, zeros({2, 3}, d), y, DrawKey{});
               }});
  c.push_back({"optim", "sgd_update: tensors of shape (2,) and (3,) (both contiguous) expected",
               [](Backend& be, Device d) {
                 Tensor p = zeros({2}, d), buf = zeros({2}, d);
                 be.sgd_update(SgdUpdate{}, p, zeros({3}, d), buf);
               }});
  c.push_back(
      {"conv", "conv2d_forward: y has shape (1, 1, 3, 3), want (1, 1, 2, 2)", [](Backend& be, Device d) {
         Tensor y = zeros({1, 1, 3, 3}, d);
         be.conv2d_forward(MacPolicy{}, Conv2dParams{}, zeros({1, 1, 3, 3}, d), zeros({1, 1, 2, 2}, d),
                           nullptr, y, DrawKey{});
       }});
  c.push_back({"pool", "adaptive_avg_pool2d_forward: x must be (N, C, H, W), got (1, 2, 3)",
               [](Backend& be, Device d) {
                 Tensor y = zeros({1, 2, 1, 1}, d);
                 be.adaptive_avg_pool2d_forward(MacPolicy{}, zeros({1, 2, 3}, d), y, DrawKey{});
               }});
  c.push_back({"batch norm", "batch_norm_stats: mean has shape (2,), want (3,)", [](Backend& be, Device d) {
                 Tensor mean = zeros({2}, d), var = zeros({3}, d), unbiased = zeros({3}, d);
                 be.batch_norm_stats(MacPolicy{}, zeros({2, 3, 4}, d), mean, var, unbiased, DrawKey{});
               }});
  c.push_back(
      {"layer norm", "layer_norm_forward: x must be (rows, D), got (2, 3, 4)", [](Backend& be, Device d) {
         Tensor y = zeros({2, 3, 4}, d), xhat = zeros({2, 3, 4}, d), invstd = zeros({2}, d);
         be.layer_norm_forward(MacPolicy{}, 1e-5f, zeros({2, 3, 4}, d), nullptr, nullptr, y, xhat, invstd,
                               DrawKey{});
       }});
  c.push_back({"attention products", "attention_scores: x of shape (1, 2, 3) is not (N, L, 2 heads x D)",
               [](Backend& be, Device d) {
                 Tensor s = zeros({1, 2, 2, 2}, d);
                 be.attention_scores(MacPolicy{}, 2, zeros({1, 2, 3}, d), zeros({1, 2, 4}, d), s, DrawKey{});
               }});
  c.push_back({"attention softmax", "attention_softmax_backward: gprobs (1, 1, 2, 3) for probs (1, 1, 2, 2)",
               [](Backend& be, Device d) {
                 Tensor gs = zeros({1, 1, 2, 2}, d);
                 be.attention_softmax_backward(MacPolicy{}, 1.0f, false, zeros({1, 1, 2, 2}, d),
                                               zeros({1, 1, 2, 3}, d), nullptr, gs, DrawKey{});
               }});
  c.push_back(
      {"sequence", "index_gather: index[0] = 2.5 is not an integer in [0, 4)", [](Backend& be, Device d) {
         Tensor y = zeros({1, 1, 2}, d);
         be.index_gather(Format{}, values({1}, {2.5f}, d), zeros({1, 4, 2}, d), y, DrawKey{});
       }});
  c.push_back(
      {"sequence", "temporal_avg_pool_forward: sequence 1 has no valid step", [](Backend& be, Device d) {
         Tensor y = zeros({2, 3}, d);
         const Tensor mask = values({2, 2}, {1, 0, 0, 0}, d);
         be.temporal_avg_pool_forward(MacPolicy{}, 2, zeros({2, 3, 2}, d), &mask, y, DrawKey{});
       }});
  c.push_back({"recurrent", "lstm_forward: x must be (N, T, I), got (2, 3)", [](Backend& be, Device d) {
                 Tensor y = zeros({2, 1, 1}, d), h_n = zeros({2, 1}, d), c_n = zeros({2, 1}, d),
                        xh = zeros({2, 1, 4}, d), saved = zeros({2, 1, 6}, d);
                 be.lstm_forward(MacPolicy{}, GateFunctions{}, Format{}, zeros({2, 3}, d), zeros({2, 1}, d),
                                 zeros({2, 1}, d), zeros({4, 3}, d), zeros({4, 1}, d), nullptr, nullptr,
                                 false, y, h_n, c_n, xh, saved, nullptr, nullptr, DrawKey{});
               }});
  c.push_back(
      {"recurrent", "gru_backward: saved has shape (1, 1, 4), expected (1, 1, 5)", [](Backend& be, Device d) {
         Tensor dh0 = zeros({1, 1}, d);
         be.gru_backward(MacPolicy{}, GateFunctions{}, zeros({3, 2}, d), zeros({3, 1}, d),
                         zeros({1, 1, 3}, d), zeros({1, 1, 4}, d), nullptr, nullptr, nullptr, nullptr, false,
                         nullptr, nullptr, nullptr, nullptr, dh0, DrawKey{});
       }});
  c.push_back({"sparse", "spmm: a 2 x 2 (CSR) x b (3, 1) -> c (2, 1)", [](Backend& be, Device d) {
                 CsrMatrix a;
                 a.rows = a.cols = 2;
                 a.row_ptr = {0, 1, 2};
                 a.col_idx = {0, 1};
                 a.values = values({2}, {1, 1}, d);
                 Tensor out = zeros({2, 1}, d);
                 be.spmm(MacPolicy{}, a, zeros({3, 1}, d), nullptr, out, DrawKey{});
               }});
  c.push_back(
      {"sparsity", "nm_mask: 0:4 is not a ratio n:m with 1 <= n, 1 <= m <= 256", [](Backend& be, Device d) {
         NmParams p;
         p.n = 0;
         p.layout = ReadLayout{1, 4, 1};
         Tensor mask = zeros({4}, d);
         be.nm_mask(p, zeros({4}, d), mask, DrawKey{});
       }});
  c.push_back({"blocks", "quantize_blocks: (4,) into (5,) with layout [1, 4, 1]", [](Backend& be, Device d) {
                 Tensor y = zeros({5}, d);
                 be.quantize_blocks(Format{}, zeros({4}, d), y, ReadLayout{1, 4, 1}, DrawKey{});
               }});
  return c;
}

// The std::invalid_argument message of the call, or a note that it did not throw one.
std::string message(const BadCall& c, Backend& be, Device d) {
  try {
    c.call(be, d);
  } catch (const std::invalid_argument& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("not an invalid_argument: ") + e.what();
  }
  return "no exception";
}

}  // namespace

TEST_CASE("every op family refuses a bad call with one message on the CPU and on cuda-host", "[cuda_host]") {
  register_cuda_devices();
  REQUIRE(activate_device("cuda-host") == Device::Cuda);
  for (const BadCall& c : bad_calls()) {
    INFO(c.family << ": " << c.want);
    CHECK(message(c, default_cpu_backend(), Device::Cpu) == c.want);
    CHECK(message(c, backend_for(Device::Cuda), Device::Cuda) == c.want);
  }
}
