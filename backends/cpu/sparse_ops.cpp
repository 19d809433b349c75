// spmm and spmm_transposed on the CPU (core/backend_ops_sparse.h defines them;
// docs/layers_graph.md explains the choices).
//
// Rows are split over threads; each output is one reduction over its row's
// stored entries in ascending column order, so the split changes no bit. Three
// routes, all giving mac_reduce's bits:
//   * pass-through (mul fp32, acc fp32, out fp32, no chunks, RNE): native binary32
//     multiply and add, vectorised across the N columns of the row;
//   * other policies without :sr: per row, the B rows of its entries are gathered
//     into a (K_i, N) block and mac_gemm (backends/cpu/gemm.h) multiplies the
//     (1, K_i) row of values by it, so the fast GEMM paths (tested bit for bit
//     against mac_reduce) run the emulated arithmetic;
//   * :sr anywhere: mac_reduce per output with the documented draw indices.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/row_ops.h"
#include "core/csr.h"
#include "core/sparse_checks.h"
#include "core/tensor.h"
#include "numerics/philox.h"

namespace emu {
namespace {

// One product c = a b (+ bias) with everything resolved to host pointers.
struct Spmm {
  const MacPolicy* p;
  const CsrMatrix* a;
  const float* values;  // a's values, contiguous
  const float* b;       // (a.cols, n), row-major
  const float* bias;    // (n) or null
  float* c;             // (a.rows, n)
  int64_t n;
  DrawKey key;
  uint64_t sites;  // mac_site_count(Kmax, chunk)
};

bool passthrough(const MacPolicy& p) {
  return !p.mul_exact && is_plain_fp32(p.mul) && is_plain_fp32(p.acc) && is_plain_fp32(p.out) &&
         p.chunk == 0 && p.fused == 0;  // fused runs (docs/contract.md section 4.8): rows_gemm's generic path
}

// Plain fp32: acc_j = acc_j + a*b_j for the terms with b_j != 0 (a == 0 skips the
// whole term), as mac_term does; the select keeps the loop vectorisable and also
// gives mac_reduce's skip for 0 * Inf and 0 * NaN.
void rows_passthrough(const Spmm& s, int64_t r0, int64_t r1) {
  const int64_t n = s.n;
  const CsrMatrix& a = *s.a;
  for (int64_t i = r0; i < r1; ++i) {
    float* c = s.c + i * n;
    std::fill(c, c + n, 0.0f);
    for (int64_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e) {
      const float v = s.values[e];
      if (v == 0.0f) continue;
      const float* b = s.b + static_cast<int64_t>(a.col_idx[e]) * n;
      for (int64_t j = 0; j < n; ++j) {
        const float t = c[j] + v * b[j];
        c[j] = b[j] != 0.0f ? t : c[j];
      }
    }
    if (s.bias)
      for (int64_t j = 0; j < n; ++j) c[j] = c[j] + s.bias[j];
    for (int64_t j = 0; j < n; ++j)
      if (c[j] != c[j]) c[j] = bits_float(0x7fc00000u);  // round_value's canonical quiet NaN
  }
}

// Per row: gather the B rows of its entries, then one (1 x K_i) by (K_i x n) mac_gemm.
void rows_gemm(const Spmm& s, int64_t r0, int64_t r1) {
  const int64_t n = s.n;
  const CsrMatrix& a = *s.a;
  std::vector<float> block;
  for (int64_t i = r0; i < r1; ++i) {
    const int64_t begin = a.row_ptr[i], k = a.row_ptr[i + 1] - begin;
    block.resize(static_cast<size_t>(std::max<int64_t>(k, 1) * n));
    for (int64_t q = 0; q < k; ++q)
      std::copy_n(s.b + static_cast<int64_t>(a.col_idx[begin + q]) * n, n, block.data() + q * n);
    mac_gemm(*s.p, s.values + begin, std::max<int64_t>(k, 1), block.data(), n, s.c + i * n, n, 1, n, k,
             s.bias, GemmDraws{s.key.seed, s.key.stream}, 1);
  }
}

// mac_reduce per output, output o = i*n + j drawing at o * sites + site.
void rows_generic(const Spmm& s, int64_t r0, int64_t r1) {
  const int64_t n = s.n;
  const CsrMatrix& a = *s.a;
  std::vector<float> bt;  // the row's B terms, transposed: (n, K_i)
  for (int64_t i = r0; i < r1; ++i) {
    const int64_t begin = a.row_ptr[i], k = a.row_ptr[i + 1] - begin;
    bt.resize(static_cast<size_t>(std::max<int64_t>(k, 1) * n));
    for (int64_t q = 0; q < k; ++q) {
      const float* b = s.b + static_cast<int64_t>(a.col_idx[begin + q]) * n;
      for (int64_t j = 0; j < n; ++j) bt[j * k + q] = b[j];
    }
    for (int64_t j = 0; j < n; ++j) {
      const uint64_t base = static_cast<uint64_t>(i * n + j) * s.sites;
      auto draw = [&](uint64_t site) { return philox_draw(s.key.seed, s.key.stream, base + site); };
      s.c[i * n + j] = static_cast<float>(
          mac_reduce(*s.p, s.values + begin, bt.data() + j * k, k, s.bias ? s.bias + j : nullptr, draw));
    }
  }
}

int64_t max_row_entries(const CsrMatrix& a) {
  int64_t m = 0;
  for (int64_t i = 0; i < a.rows; ++i) m = std::max(m, a.row_ptr[i + 1] - a.row_ptr[i]);
  return m;
}

// c = a b (+ bias) for a validated CPU matrix; b (a.cols, n) any view, c (a.rows, n) contiguous.
void run_spmm(const MacPolicy& p, const CsrMatrix& a, const Tensor& b, const Tensor* bias, Tensor& c,
              DrawKey key, int threads) {
  const int64_t n = b.dim(1);
  if (a.rows == 0 || n == 0) return;
  const Tensor values = a.values.contiguous(), bc = b.contiguous();
  const Tensor bias_c = bias ? bias->contiguous() : Tensor();
  const Spmm s{&p,
               &a,
               values.data(),
               bc.data(),
               bias ? bias_c.data() : nullptr,
               c.data(),
               n,
               key,
               mac_site_count(max_row_entries(a), p.chunk)};
  void (*rows)(const Spmm&, int64_t, int64_t) = draws_random(p)  ? rows_generic
                                                : passthrough(p) ? rows_passthrough
                                                                 : rows_gemm;
  // About 2^14 multiply-adds per thread at least (pass-through cost), by the average row.
  const int64_t per_row = (a.nnz() / a.rows + 1) * n;
  const int64_t grain = std::max<int64_t>(1, kGrainElements / per_row);
  parallel_for(a.rows, threads, grain, [&](int64_t r0, int64_t r1) { rows(s, r0, r1); });
}

void check_cpu(const char* op, const CsrMatrix& a, const Tensor& b, const Tensor& c) {
  if (a.values.device() != Device::Cpu || b.device() != Device::Cpu || c.device() != Device::Cpu)
    throw std::invalid_argument(fmt::format("{}: operands must be on the CPU", op));
}

}  // namespace

// a (R x K CSR), b (K, N), bias (N) or null -> c (R, N)
void CpuBackend::spmm(const MacPolicy& p, const CsrMatrix& a, const Tensor& b, const Tensor* bias, Tensor& c,
                      DrawKey key) {
  check_spmm(a, b, bias, c);
  check_cpu("spmm", a, b, c);
  run_spmm(p, a, b, bias, c, key, threads_);
}

// a (R x K CSR), b (R, N) -> c (K, N) = a^T b
void CpuBackend::spmm_transposed(const MacPolicy& p, const CsrMatrix& a, const Tensor& b, Tensor& c,
                                 DrawKey key) {
  check_spmm_transposed(a, b, c);
  check_cpu("spmm_transposed", a, b, c);
  const CsrMatrix t = csr_transpose_unchecked(a);
  run_spmm(p, t, b, nullptr, c, key, threads_);
}

}  // namespace emu
