#include "core/csr.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "numerics/fp32_ops.h"
#include "numerics/functions.h"

namespace emu {
namespace {

// Values of a validated matrix as a contiguous host array (downloaded from any device: the
// helpers below are host code that builds constants once, as for user score functions).
std::vector<float> host_values(const CsrMatrix& a) { return a.values.to_vector(); }

CsrMatrix make(int64_t rows, int64_t cols, std::vector<int64_t> row_ptr, std::vector<int32_t> col_idx,
               const std::vector<float>& values, Device device) {
  CsrMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.row_ptr = std::move(row_ptr);
  m.col_idx = std::move(col_idx);
  m.values = Tensor::from_vector({static_cast<int64_t>(values.size())}, values, device);
  return m;
}

}  // namespace

void csr_validate(const CsrMatrix& a, const std::string& what) {
  auto fail = [&](const std::string& why) { throw std::invalid_argument(what + ": " + why); };
  if (a.rows < 0 || a.cols < 0) fail(fmt::format("negative size {} x {}", a.rows, a.cols));
  if (a.cols > std::numeric_limits<int32_t>::max())
    fail(fmt::format("{} columns do not fit the int32 column indices", a.cols));
  if (static_cast<int64_t>(a.row_ptr.size()) != a.rows + 1)
    fail(fmt::format("row_ptr has {} entries, expected rows + 1 = {}", a.row_ptr.size(), a.rows + 1));
  if (a.row_ptr[0] != 0) fail(fmt::format("row_ptr[0] is {}, expected 0", a.row_ptr[0]));
  const int64_t nnz = a.nnz();
  if (a.row_ptr[a.rows] != nnz)
    fail(fmt::format("row_ptr[{}] is {}, expected nnz = {} (the length of col_idx)", a.rows,
                     a.row_ptr[a.rows], nnz));
  if (!a.values.defined()) fail("values is undefined");
  if (a.values.ndim() != 1 || a.values.numel() != nnz)
    fail(
        fmt::format("values has shape {}, expected {}", shape_string(a.values.shape()), shape_string({nnz})));
  for (int64_t i = 0; i < a.rows; ++i) {
    const int64_t b = a.row_ptr[i], e = a.row_ptr[i + 1];
    if (e < b) fail(fmt::format("row_ptr decreases at row {} ({} then {})", i, b, e));
    if (e > nnz) fail(fmt::format("row_ptr[{}] is {}, beyond nnz = {}", i + 1, e, nnz));
    for (int64_t k = b; k < e; ++k) {
      const int32_t c = a.col_idx[k];
      if (c < 0 || c >= a.cols) fail(fmt::format("row {}: column index {} outside [0, {})", i, c, a.cols));
      if (k > b && c <= a.col_idx[k - 1])
        fail(fmt::format("row {}: column indices not strictly ascending ({} after {}){}", i, c,
                         a.col_idx[k - 1], c == a.col_idx[k - 1] ? ": duplicate entry" : ""));
    }
  }
}

CsrMatrix csr_from_coo(int64_t rows, int64_t cols, const std::vector<int64_t>& row,
                       const std::vector<int64_t>& col, const std::vector<float>& values,
                       CooDuplicates duplicates) {
  if (rows < 0 || cols < 0 || cols > std::numeric_limits<int32_t>::max())
    throw std::invalid_argument(fmt::format("csr_from_coo: bad size {} x {}", rows, cols));
  const size_t n = row.size();
  if (col.size() != n || (!values.empty() && values.size() != n))
    throw std::invalid_argument(fmt::format("csr_from_coo: {} row indices, {} column indices, {} values", n,
                                            col.size(), values.size()));
  for (size_t e = 0; e < n; ++e)
    if (row[e] < 0 || row[e] >= rows || col[e] < 0 || col[e] >= cols)
      throw std::invalid_argument(fmt::format("csr_from_coo: triple {} at ({}, {}) is outside {} x {}", e,
                                              row[e], col[e], rows, cols));
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return row[x] != row[y] ? row[x] < row[y] : col[x] < col[y]; });
  std::vector<int64_t> row_ptr(static_cast<size_t>(rows) + 1, 0);
  std::vector<int32_t> col_idx;
  std::vector<float> vals;
  col_idx.reserve(n);
  vals.reserve(n);
  int64_t last_row = -1, last_col = -1;
  for (size_t q = 0; q < n; ++q) {
    const size_t e = order[q];
    const float v = values.empty() ? 1.0f : values[e];
    if (row[e] == last_row && col[e] == last_col) {
      float& kept = vals.back();
      switch (duplicates) {
        case CooDuplicates::Sum:
          kept = fp32::add(kept, v);
          break;
        case CooDuplicates::Max:
          kept = (kept != kept || v != v) ? fn_detail::nan_result() : std::max(kept, v);
          break;
        case CooDuplicates::Error:
          throw std::invalid_argument(fmt::format(
              "csr_from_coo: duplicate entry ({}, {}) (triples {} and earlier)", row[e], col[e], e));
      }
      continue;
    }
    last_row = row[e];
    last_col = col[e];
    col_idx.push_back(static_cast<int32_t>(col[e]));
    vals.push_back(v);
    row_ptr[static_cast<size_t>(row[e]) + 1] += 1;
  }
  for (int64_t i = 0; i < rows; ++i) row_ptr[i + 1] += row_ptr[i];
  return make(rows, cols, std::move(row_ptr), std::move(col_idx), vals, Device::Cpu);
}

CsrMatrix csr_transpose(const CsrMatrix& a, std::vector<int64_t>* source) {
  csr_validate(a, "csr_transpose");
  return csr_transpose_unchecked(a, source);
}

CsrMatrix csr_transpose_unchecked(const CsrMatrix& a, std::vector<int64_t>* source) {
  // Counting sort by column; scanning a's rows in ascending order fills each
  // result row in ascending r. Index arrays only: the values are gathered.
  const int64_t nnz = a.nnz();
  std::vector<int64_t> row_ptr(static_cast<size_t>(a.cols) + 1, 0);
  for (int32_t c : a.col_idx) row_ptr[static_cast<size_t>(c) + 1] += 1;
  for (int64_t k = 0; k < a.cols; ++k) row_ptr[k + 1] += row_ptr[k];
  std::vector<int64_t> next(row_ptr.begin(), row_ptr.end() - 1);
  std::vector<int32_t> col_idx(static_cast<size_t>(nnz));
  std::vector<int64_t> src(static_cast<size_t>(nnz));
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t e = a.row_ptr[r]; e < a.row_ptr[r + 1]; ++e) {
      const int64_t at = next[a.col_idx[e]]++;
      col_idx[at] = static_cast<int32_t>(r);
      src[at] = e;
    }
  }
  CsrMatrix t;
  t.rows = a.cols;
  t.cols = a.rows;
  t.row_ptr = std::move(row_ptr);
  t.col_idx = std::move(col_idx);
  // Values on the CPU: gathered here; on another device the caller carries them with `source`.
  if (a.values.device() == Device::Cpu) {
    const Tensor v = a.values.contiguous();
    const float* in = v.data();
    std::vector<float> out(static_cast<size_t>(nnz));
    for (int64_t q = 0; q < nnz; ++q) out[q] = in[src[q]];
    t.values = Tensor::from_vector({nnz}, out);
  }
  if (source) *source = std::move(src);
  return t;
}

CsrMatrix csr_with_values(const CsrMatrix& a, const Tensor& values) {
  if (!values.defined() || values.ndim() != 1 || values.numel() != a.nnz())
    throw std::invalid_argument(fmt::format("csr_with_values: values of shape {} for {} stored entries",
                                            values.defined() ? shape_string(values.shape()) : "undefined",
                                            a.nnz()));
  CsrMatrix m;
  m.rows = a.rows;
  m.cols = a.cols;
  m.row_ptr = a.row_ptr;
  m.col_idx = a.col_idx;
  m.values = values;
  return m;
}

CsrMatrix csr_add_self_loops(const CsrMatrix& a, float fill) {
  csr_validate(a, "csr_add_self_loops");
  if (a.rows != a.cols)
    throw std::invalid_argument(
        fmt::format("csr_add_self_loops: the matrix is {} x {}, not square", a.rows, a.cols));
  const std::vector<float> v = host_values(a);
  std::vector<int64_t> row_ptr(static_cast<size_t>(a.rows) + 1, 0);
  std::vector<int32_t> col_idx;
  std::vector<float> vals;
  col_idx.reserve(static_cast<size_t>(a.nnz() + a.rows));
  vals.reserve(static_cast<size_t>(a.nnz() + a.rows));
  for (int64_t i = 0; i < a.rows; ++i) {
    bool placed = false;
    for (int64_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e) {
      const int32_t c = a.col_idx[e];
      if (!placed && c > i) {
        col_idx.push_back(static_cast<int32_t>(i));
        vals.push_back(fill);
        placed = true;
      }
      col_idx.push_back(c);
      if (c == i) {
        vals.push_back(fp32::add(v[e], fill));
        placed = true;
      } else {
        vals.push_back(v[e]);
      }
    }
    if (!placed) {
      col_idx.push_back(static_cast<int32_t>(i));
      vals.push_back(fill);
    }
    row_ptr[i + 1] = static_cast<int64_t>(col_idx.size());
  }
  return make(a.rows, a.cols, std::move(row_ptr), std::move(col_idx), vals, a.values.device());
}

CsrMatrix gcn_normalize(const CsrMatrix& a) {
  CsrMatrix s = csr_add_self_loops(a, 1.0f);
  std::vector<float> v = host_values(s);
  std::vector<float> dinv(static_cast<size_t>(s.rows));
  for (int64_t i = 0; i < s.rows; ++i) {
    float deg = 0.0f;
    for (int64_t e = s.row_ptr[i]; e < s.row_ptr[i + 1]; ++e) deg = fp32::add(deg, v[e]);
    dinv[i] = deg == 0.0f ? 0.0f : fn_rsqrt(deg);
  }
  for (int64_t i = 0; i < s.rows; ++i)
    for (int64_t e = s.row_ptr[i]; e < s.row_ptr[i + 1]; ++e)
      v[e] = fp32::mul(fp32::mul(dinv[s.col_idx[e]], v[e]), dinv[i]);
  s.values = Tensor::from_vector({s.nnz()}, v, s.values.device());
  return s;
}

Tensor csr_to_dense(const CsrMatrix& a) {
  csr_validate(a, "csr_to_dense");
  const std::vector<float> v = host_values(a);
  std::vector<float> out(static_cast<size_t>(a.rows * a.cols), 0.0f);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e) out[i * a.cols + a.col_idx[e]] = v[e];
  return Tensor::from_vector({a.rows, a.cols}, out, a.values.device());
}

CsrMatrix csr_from_dense(const Tensor& x) {
  if (!x.defined() || x.ndim() != 2) throw std::invalid_argument("csr_from_dense: expected a 2-D tensor");
  if (x.dim(1) > std::numeric_limits<int32_t>::max())
    throw std::invalid_argument(fmt::format("csr_from_dense: {} columns do not fit int32 indices", x.dim(1)));
  const std::vector<float> d = x.to_vector();
  const int64_t rows = x.dim(0), cols = x.dim(1);
  std::vector<int64_t> row_ptr(static_cast<size_t>(rows) + 1, 0);
  std::vector<int32_t> col_idx;
  std::vector<float> vals;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      const float v = d[i * cols + j];
      if (v != 0.0f) {
        col_idx.push_back(static_cast<int32_t>(j));
        vals.push_back(v);
      }
    }
    row_ptr[i + 1] = static_cast<int64_t>(col_idx.size());
  }
  return make(rows, cols, std::move(row_ptr), std::move(col_idx), vals, x.device());
}

}  // namespace emu
