// Tensor memory ops on the CPU (core/backend_ops_memory.h): the CPU side of
// every copy, fill and transfer the engine does.
#include <cmath>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/op_checks.h"
#include "core/tensor.h"
#include "numerics/fp32_ops.h"

namespace emu {
namespace {

// Calls fn(storage_index) for every element of t's view, in row-major order.
template <class Fn>
void for_each_index(const Tensor& t, Fn fn) {
  const Shape& shape = t.shape();
  const Shape& strides = t.strides();
  const int64_t n = shape_numel(shape);
  if (n == 0) return;
  const int nd = static_cast<int>(shape.size());
  std::vector<int64_t> idx(nd, 0);
  int64_t pos = 0;
  for (int64_t e = 0; e < n; ++e) {
    fn(pos);
    for (int d = nd - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) {
        pos += strides[d];
        break;
      }
      pos -= strides[d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
}

}  // namespace

// src -> dst (same shape, any strides). Contiguous views move as one block; the
// others go through a row-major buffer, so overlapping views copy as if read first.
void CpuBackend::copy(const Tensor& src, Tensor& dst) {
  check_same_shape("copy", src, dst);
  const int64_t n = dst.numel();
  if (n == 0) return;
  if (src.is_contiguous() && dst.is_contiguous()) {
    if (dst.data() != src.data())
      std::memmove(dst.data(), src.data(), static_cast<size_t>(n) * sizeof(float));
    return;
  }
  std::vector<float> values(static_cast<size_t>(n));
  download(src, values.data());
  upload(values.data(), dst);
}

void CpuBackend::fill(Tensor& y, float value) {
  float* base = y.data();
  for_each_index(y, [&](int64_t p) { base[p] = value; });
}

// host: numel(dst) row-major values -> dst (any strides).
void CpuBackend::upload(const float* host, Tensor& dst) {
  float* base = dst.data();
  size_t i = 0;
  for_each_index(dst, [&](int64_t p) { base[p] = host[i++]; });
}

// src (any strides) -> host: numel(src) row-major values.
void CpuBackend::download(const Tensor& src, float* host) {
  const float* base = src.data();
  if (src.is_contiguous()) {
    if (src.numel() > 0) std::memcpy(host, base, static_cast<size_t>(src.numel()) * sizeof(float));
    return;
  }
  size_t i = 0;
  for_each_index(src, [&](int64_t p) { host[i++] = base[p]; });
}

// acc += g, one binary32 addition per element (the build never contracts it).
void CpuBackend::accumulate(Tensor& acc, const Tensor& g) {
  check_same_shape("accumulate", acc, g);
  const int64_t n = g.numel();
  float* a = acc.data();
  const float* gp = g.data();
  // Contiguous tensors that do not overlap (or are the same): one threaded loop
  // that vectorises, without the copy of g that guards overlapping views.
  if (acc.is_contiguous() && g.is_contiguous() && (a == gp || a + n <= gp || gp + n <= a)) {
    parallel_for(n, threads_, kGrainElements, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) a[i] = fp32::add(a[i], gp[i]);
    });
    return;
  }
  std::vector<float> gv(static_cast<size_t>(g.numel()));
  download(g, gv.data());
  float* base = acc.data();
  size_t i = 0;
  for_each_index(acc, [&](int64_t p) {
    base[p] = fp32::add(base[p], gv[i]);  // the device's addition, canonical NaN included
    ++i;
  });
}

// *sum += x_i^2 in row-major order, in binary64 (each square exact).
void CpuBackend::sum_squares(const Tensor& x, double* sum) {
  const float* base = x.data();
  double s = *sum;
  for_each_index(x, [&](int64_t p) { s += static_cast<double>(base[p]) * base[p]; });
  *sum = s;
}

void CpuBackend::count_nonfinite(const Tensor& x, int64_t* count) {
  const float* base = x.data();
  int64_t c = 0;
  for_each_index(x, [&](int64_t p) { c += std::isfinite(base[p]) ? 0 : 1; });
  *count = c;
}

}  // namespace emu
