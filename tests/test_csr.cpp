// CSR matrices (core/csr.h) against naive dense computations, and the spmm /
// spmm_transposed ops against float64 (pass-through) and, bit for bit, against
// mac_reduce of each row's (value, b) pairs in ascending column order.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm.h"
#include "core/csr.h"
#include "numerics/philox.h"
#include "tests/grad_check.h"
#include "tests/test_util.h"

using namespace emu;

namespace {

struct Coo {
  std::vector<int64_t> r, c;
  std::vector<float> v;
};

// `n` random triples in rows x cols, with repeats and values in [-2, 2] (some exact zeros).
Coo random_coo(int64_t rows, int64_t cols, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-2, 2);
  Coo t;
  for (size_t e = 0; e < n; ++e) {
    t.r.push_back(static_cast<int64_t>(rng() % rows));
    t.c.push_back(static_cast<int64_t>(rng() % cols));
    t.v.push_back(rng() % 13 == 0 ? 0.0f : u(rng));
  }
  return t;
}

// A random matrix with density d, values in [-2, 2]; about one stored value in 11 is an exact zero
// and some rows are empty.
CsrMatrix random_csr(int64_t rows, int64_t cols, double d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-2, 2), p(0, 1);
  Coo t;
  for (int64_t i = 0; i < rows; ++i) {
    if (i % 7 == 3) continue;  // empty rows
    for (int64_t j = 0; j < cols; ++j)
      if (p(rng) < d) {
        t.r.push_back(i);
        t.c.push_back(j);
        t.v.push_back(rng() % 11 == 0 ? 0.0f : u(rng));
      }
  }
  return csr_from_coo(rows, cols, t.r, t.c, t.v, CooDuplicates::Error);
}

std::vector<float> dense_of(const CsrMatrix& a) { return csr_to_dense(a).to_vector(); }

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

MacPolicy mac_of(std::initializer_list<std::pair<const char*, const char*>> settings) {
  return test::policy(settings).resolve("layer").mac;
}

// The definition of spmm, written from core/backend_ops_sparse.h without the op's code: output (i, j)
// is mac_reduce over the stored entries of row i, ascending column, drawing at o * sites(Kmax) + site.
std::vector<float> spmm_reference(const MacPolicy& p, const CsrMatrix& a, const std::vector<float>& b,
                                  int64_t n, const std::vector<float>* bias, DrawKey key) {
  const std::vector<float> vals = a.values.to_vector();
  int64_t kmax = 0;
  for (int64_t i = 0; i < a.rows; ++i) kmax = std::max(kmax, a.row_ptr[i + 1] - a.row_ptr[i]);
  const uint64_t sites = mac_site_count(kmax, p.chunk);
  std::vector<float> c(static_cast<size_t>(a.rows * n));
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      std::vector<float> x, y;
      for (int64_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e) {
        x.push_back(vals[e]);
        y.push_back(b[a.col_idx[e] * n + j]);
      }
      const uint64_t o = static_cast<uint64_t>(i * n + j);
      auto draw = [&](uint64_t site) { return philox_draw(key.seed, key.stream, o * sites + site); };
      c[i * n + j] = static_cast<float>(mac_reduce(p, x.data(), y.data(), static_cast<int64_t>(x.size()),
                                                   bias ? bias->data() + j : nullptr, draw));
    }
  }
  return c;
}

// a^T b from a's dense image: output (k, j) reduces over the rows r storing (r, k), ascending r.
std::vector<float> spmm_t_reference(const MacPolicy& p, const CsrMatrix& a, const std::vector<float>& b,
                                    int64_t n, DrawKey key) {
  const std::vector<float> vals = a.values.to_vector();
  std::vector<std::vector<std::pair<int64_t, float>>> columns(static_cast<size_t>(a.cols));
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t e = a.row_ptr[r]; e < a.row_ptr[r + 1]; ++e) columns[a.col_idx[e]].push_back({r, vals[e]});
  int64_t kmax = 0;
  for (auto& col : columns) kmax = std::max<int64_t>(kmax, static_cast<int64_t>(col.size()));
  const uint64_t sites = mac_site_count(kmax, p.chunk);
  std::vector<float> c(static_cast<size_t>(a.cols * n));
  for (int64_t k = 0; k < a.cols; ++k)
    for (int64_t j = 0; j < n; ++j) {
      std::vector<float> x, y;
      for (auto [r, v] : columns[k]) {
        x.push_back(v);
        y.push_back(b[r * n + j]);
      }
      const uint64_t o = static_cast<uint64_t>(k * n + j);
      auto draw = [&](uint64_t site) { return philox_draw(key.seed, key.stream, o * sites + site); };
      c[k * n + j] = static_cast<float>(
          mac_reduce(p, x.data(), y.data(), static_cast<int64_t>(x.size()), nullptr, draw));
    }
  return c;
}

std::vector<float> run_spmm(const MacPolicy& p, const CsrMatrix& a, const Tensor& b, const Tensor* bias,
                            DrawKey key = {}) {
  Tensor c = Tensor::zeros({a.rows, b.dim(1)});
  cpu_backend().spmm(p, a, b, bias, c, key);
  return c.to_vector();
}

std::vector<float> run_spmm_t(const MacPolicy& p, const CsrMatrix& a, const Tensor& b, DrawKey key = {}) {
  Tensor c = Tensor::zeros({a.cols, b.dim(1)});
  cpu_backend().spmm_transposed(p, a, b, c, key);
  return c.to_vector();
}

struct ThreadsGuard {
  int saved = cpu_backend().threads();
  ~ThreadsGuard() { cpu_backend().set_threads(saved); }
};

}  // namespace

TEST_CASE("csr_from_coo sums, maxes or rejects duplicates like a naive dense build", "[csr]") {
  const int64_t rows = 13, cols = 9;
  Coo t = random_coo(rows, cols, 120, 1);  // 120 triples in 117 cells: many repeats
  // Naive: dense cells accumulated in input order with binary32 adds / max.
  std::vector<float> sum(rows * cols, 0.0f), mx(rows * cols, -INFINITY);
  std::vector<int> count(rows * cols, 0);
  for (size_t e = 0; e < t.r.size(); ++e) {
    const int64_t x = t.r[e] * cols + t.c[e];
    sum[x] = count[x] ? sum[x] + t.v[e] : t.v[e];
    mx[x] = std::max(mx[x], t.v[e]);
    count[x] += 1;
  }
  CsrMatrix s = csr_from_coo(rows, cols, t.r, t.c, t.v, CooDuplicates::Sum);
  CsrMatrix m = csr_from_coo(rows, cols, t.r, t.c, t.v, CooDuplicates::Max);
  REQUIRE_NOTHROW(csr_validate(s));
  REQUIRE_NOTHROW(csr_validate(m));
  int64_t cells = 0;
  for (int c : count) cells += c > 0;
  CHECK(s.nnz() == cells);  // one stored entry per occupied cell, zeros included
  std::vector<float> ds = dense_of(s), dm = dense_of(m);
  for (int64_t x = 0; x < rows * cols; ++x) {
    INFO("cell " << x);
    CHECK(test::bits(ds[x]) == test::bits(count[x] ? sum[x] : 0.0f));
    CHECK(test::bits(dm[x]) == test::bits(count[x] ? mx[x] : 0.0f));
  }
  CHECK_THROWS_WITH(csr_from_coo(rows, cols, t.r, t.c, t.v, CooDuplicates::Error),
                    Catch::Contains("duplicate entry"));
  // No values: every entry is 1 (then summed).
  CsrMatrix ones = csr_from_coo(3, 3, {0, 2, 0, 1}, {1, 0, 1, 1});
  CHECK(dense_of(ones) == std::vector<float>({0, 2, 0, 0, 1, 0, 1, 0, 0}));
  CHECK(ones.row_ptr == std::vector<int64_t>({0, 1, 2, 3}));
  // Errors name what is wrong.
  CHECK_THROWS_WITH(csr_from_coo(3, 3, {0, 3}, {0, 0}), Catch::Contains("outside 3 x 3"));
  CHECK_THROWS_WITH(csr_from_coo(3, 3, {0, 1}, {0}), Catch::Contains("2 row indices, 1 column indices"));
  CHECK_THROWS_WITH(csr_from_coo(3, 3, {0}, {0}, {1, 2}), Catch::Contains("2 values"));
  // An empty matrix.
  CsrMatrix empty = csr_from_coo(4, 0, {}, {});
  CHECK_NOTHROW(csr_validate(empty));
  CHECK(empty.row_ptr == std::vector<int64_t>(5, 0));
}

TEST_CASE("csr_validate names every broken invariant", "[csr]") {
  CsrMatrix good = csr_from_coo(3, 4, {0, 0, 2}, {1, 3, 0}, {1, 2, 3});
  REQUIRE_NOTHROW(csr_validate(good));
  auto broken = [&](auto&& edit) {
    CsrMatrix b = good;
    edit(b);
    return b;
  };
  CHECK_THROWS_WITH(csr_validate(broken([](CsrMatrix& b) { b.row_ptr.pop_back(); }), "adj"),
                    Catch::StartsWith("adj: row_ptr has 3 entries, expected rows + 1 = 4"));
  CHECK_THROWS_WITH(csr_validate(broken([](CsrMatrix& b) { b.row_ptr[0] = 1; })),
                    Catch::Contains("row_ptr[0] is 1"));
  CHECK_THROWS_WITH(csr_validate(broken([](CsrMatrix& b) { b.row_ptr[3] = 2; })),
                    Catch::Contains("expected nnz = 3"));
  CHECK_THROWS_WITH(csr_validate(broken([](CsrMatrix& b) {
                      b.row_ptr = {0, 2, 1, 3};
                    })),
                    Catch::Contains("row_ptr decreases at row 1"));
  CHECK_THROWS_WITH(csr_validate(broken([](CsrMatrix& b) {
                      b.row_ptr = {0, 4, 4, 3};
                    })),
                    Catch::Contains("beyond nnz"));
  CHECK_THROWS_WITH(csr_validate(broken([](CsrMatrix& b) { b.col_idx[1] = 4; })),
                    Catch::Contains("row 0: column index 4 outside [0, 4)"));
  CHECK_THROWS_WITH(csr_validate(broken([](CsrMatrix& b) { b.col_idx[2] = -1; })),
                    Catch::Contains("column index -1"));
  CHECK_THROWS_WITH(csr_validate(broken([](CsrMatrix& b) { b.col_idx[1] = 1; })),
                    Catch::Contains("duplicate entry"));
  CHECK_THROWS_WITH(csr_validate(broken([](CsrMatrix& b) { std::swap(b.col_idx[0], b.col_idx[1]); })),
                    Catch::Contains("not strictly ascending (1 after 3)"));
  CHECK_THROWS_WITH(csr_validate(broken([](CsrMatrix& b) { b.values = Tensor::zeros({2}); })),
                    Catch::Contains("values has shape (2,), expected (3,)"));
  CHECK_THROWS_WITH(csr_validate(broken([](CsrMatrix& b) { b.values = Tensor(); })),
                    Catch::Contains("values is undefined"));
  CHECK_THROWS_WITH(csr_validate(broken([](CsrMatrix& b) { b.rows = -1; })),
                    Catch::Contains("negative size"));
  CHECK_THROWS_WITH(csr_validate(broken([](CsrMatrix& b) { b.cols = int64_t{1} << 31; })),
                    Catch::Contains("int32"));
}

TEST_CASE("csr_transpose, csr_from_dense and csr_to_dense agree with dense transposition", "[csr]") {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const int64_t rows = 1 + static_cast<int64_t>(seed * 7 % 23),
                  cols = 1 + static_cast<int64_t>(seed * 5 % 17);
    CsrMatrix a = random_csr(rows, cols, 0.3, seed);
    std::vector<int64_t> source;
    CsrMatrix t = csr_transpose(a, &source);
    REQUIRE_NOTHROW(csr_validate(t));
    CHECK(t.rows == cols);
    CHECK(t.cols == rows);
    const std::vector<float> d = dense_of(a), dt = dense_of(t);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) CHECK(test::bits(dt[j * rows + i]) == test::bits(d[i * cols + j]));
    // Stored zeros survive (structure, not just values), and source maps each entry back.
    CHECK(t.nnz() == a.nnz());
    const std::vector<float> av = a.values.to_vector(), tv = t.values.to_vector();
    for (int64_t q = 0; q < t.nnz(); ++q) CHECK(test::bits(tv[q]) == test::bits(av[source[q]]));
    CsrMatrix back = csr_transpose(t);
    CHECK(back.row_ptr == a.row_ptr);
    CHECK(back.col_idx == a.col_idx);
    CHECK(same_bits(back.values.to_vector(), av));
    // Dense round trip (csr_from_dense drops stored zeros).
    CsrMatrix fd = csr_from_dense(csr_to_dense(a));
    CHECK(same_bits(dense_of(fd), d));
    int64_t nonzero = 0;
    for (float v : d) nonzero += v != 0.0f;
    CHECK(fd.nnz() == nonzero);
  }
}

TEST_CASE("csr_add_self_loops is A + I on the dense image", "[csr]") {
  CsrMatrix a = random_csr(15, 15, 0.25, 9);
  // Make sure some diagonal entries exist and some do not.
  const std::vector<float> d = dense_of(a);
  int present = 0;
  for (int64_t i = 0; i < 15; ++i) present += d[i * 16] != 0.0f;
  REQUIRE(present > 0);
  REQUIRE(present < 15);
  CsrMatrix s = csr_add_self_loops(a, 1.0f);
  REQUIRE_NOTHROW(csr_validate(s));
  const std::vector<float> ds = dense_of(s);
  for (int64_t i = 0; i < 15; ++i)
    for (int64_t j = 0; j < 15; ++j)
      CHECK(test::bits(ds[i * 15 + j]) == test::bits(d[i * 15 + j] + (i == j ? 1.0f : 0.0f)));
  CHECK_THROWS_WITH(csr_add_self_loops(random_csr(3, 4, 0.5, 1)), Catch::Contains("not square"));
}

TEST_CASE("gcn_normalize is D^-1/2 (A+I) D^-1/2 within an ulp of float64", "[csr]") {
  // An undirected graph with repeated edges and an isolated node (only its self-loop).
  const int64_t v = 30;
  std::mt19937_64 rng(3);
  std::vector<int64_t> r, c;
  for (int e = 0; e < 70; ++e) {
    int64_t x = static_cast<int64_t>(rng() % (v - 1)), y = static_cast<int64_t>(rng() % (v - 1));
    if (x == y) continue;
    r.push_back(x), c.push_back(y), r.push_back(y), c.push_back(x);
  }
  CsrMatrix a = csr_from_coo(v, v, r, c, {}, CooDuplicates::Max);
  CsrMatrix n = gcn_normalize(a);
  REQUIRE_NOTHROW(csr_validate(n));
  const std::vector<float> dn = dense_of(n), da = dense_of(a);
  std::vector<double> deg(v, 1.0);
  for (int64_t i = 0; i < v; ++i)
    for (int64_t j = 0; j < v; ++j) deg[i] += da[i * v + j];
  for (int64_t i = 0; i < v; ++i)
    for (int64_t j = 0; j < v; ++j) {
      const double w = da[i * v + j] + (i == j ? 1.0 : 0.0);
      const double want = w / std::sqrt(deg[i] * deg[j]);
      INFO(i << "," << j);
      CHECK(std::fabs(dn[i * v + j] - want) <= 1.5 * std::ldexp(1.0, -23) * want);  // two roundings
      CHECK(test::bits(dn[i * v + j]) == test::bits(dn[j * v + i]));                // symmetric
    }
  CHECK(dn[(v - 1) * v + (v - 1)] == 1.0f);  // isolated node: its self-loop, 1/sqrt(1)^2
  // Weighted: a zero degree gives coefficients 0 (PyG's masked 1/sqrt(0)), not Inf or NaN.
  CsrMatrix w = csr_from_coo(2, 2, {0, 1}, {0, 1}, {-1.0f, 3.0f});
  CsrMatrix wn = gcn_normalize(w);
  CHECK(dense_of(wn) == std::vector<float>({0.0f, 0.0f, 0.0f, 1.0f}));  // 4 / sqrt(4)^2 = 1
}

TEST_CASE("spmm in pass-through is within float64 rounding of the dense product", "[spmm]") {
  CsrMatrix a = random_csr(37, 29, 0.2, 4);
  Tensor b = test::random_tensor({29, 13}, 5, -3, 3);
  Tensor bias = test::random_tensor({13}, 6);
  const MacPolicy p = LayerNumerics().mac;
  const std::vector<float> d = dense_of(a), bv = b.to_vector(), biasv = bias.to_vector();
  for (bool with_bias : {false, true}) {
    std::vector<float> c = run_spmm(p, a, b, with_bias ? &bias : nullptr);
    for (int64_t i = 0; i < 37; ++i)
      for (int64_t j = 0; j < 13; ++j) {
        double exact = with_bias ? biasv[j] : 0.0, mag = with_bias ? std::fabs(biasv[j]) : 0.0;
        for (int64_t k = 0; k < 29; ++k) {
          exact += static_cast<double>(d[i * 29 + k]) * bv[k * 13 + j];
          mag += std::fabs(static_cast<double>(d[i * 29 + k]) * bv[k * 13 + j]);
        }
        // Each of the <= K + 1 roundings errs by at most 2^-24 of a partial sum bounded by mag.
        CHECK(std::fabs(c[i * 13 + j] - exact) <= 31 * std::ldexp(mag, -24) + 1e-30);
      }
  }
}

TEST_CASE("spmm equals mac_reduce over each row's entries in ascending column order, bit for bit", "[spmm]") {
  struct Case {
    const char* name;
    MacPolicy p;
  };
  const std::vector<Case> cases = {
      {"fp32 (pass-through)", LayerNumerics().mac},
      {"mul e5m10 / acc e5m10 / out fp16", mac_of({{"mul", "e5m10"}, {"acc", "e5m10"}, {"out", "fp16"}})},
      {"mul e6m6 / acc fp32", mac_of({{"mul", "e6m6"}, {"acc", "fp32"}})},
      {"bf16", mac_of({{"format", "bf16"}})},
      {"mul exact / acc fp32", mac_of({{"mul", "exact"}})},
      {"e5m10 chunk 3", mac_of({{"mul", "e5m10"}, {"acc", "e5m10"}, {"chunk", "3"}, {"acc_outer", "fp32"}})},
      {"acc bf16:rtz / out e4m3", mac_of({{"mul", "fp32"}, {"acc", "bf16:rtz"}, {"out", "fp8_e4m3"}})},
      {"posit16_1", mac_of({{"mul", "posit16_1"}, {"acc", "posit16_1"}})},
      {"mul bf16:sr / acc fp32", mac_of({{"mul", "bf16:sr"}})},
      {"acc e5m10:sr / out bf16:sr chunk 2",
       mac_of({{"mul", "e5m10"}, {"acc", "e5m10:sr"}, {"out", "bf16:sr"}, {"chunk", "2"}})},
  };
  const DrawKey key{77, 12345};
  for (const Case& cs : cases) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      const int64_t rows = 5 + static_cast<int64_t>(seed * 11), cols = 3 + static_cast<int64_t>(seed * 9),
                    n = static_cast<int64_t>(1 + seed * 6);
      CsrMatrix a = random_csr(rows, cols, 0.35, 10 + seed);
      Tensor b = test::random_tensor({cols, n}, 20 + seed, -4, 4);
      std::vector<float> bv = b.to_vector();
      for (size_t x = 0; x < bv.size(); x += 5) bv[x] = 0.0f;  // zero operands are skipped
      b = Tensor::from_vector({cols, n}, bv);
      Tensor bias = test::random_tensor({n}, 30 + seed);
      std::vector<float> biasv = bias.to_vector();
      for (bool with_bias : {false, true}) {
        INFO(cs.name << " seed " << seed << " bias " << with_bias);
        std::vector<float> got = run_spmm(cs.p, a, b, with_bias ? &bias : nullptr, key);
        std::vector<float> want = spmm_reference(cs.p, a, bv, n, with_bias ? &biasv : nullptr, key);
        CHECK(test::mismatch(got, want) == "");
      }
      // The transposed product: reduction over a's rows, ascending.
      Tensor g = test::random_tensor({rows, n}, 40 + seed, -4, 4);
      INFO(cs.name << " seed " << seed << " transposed");
      CHECK(test::mismatch(run_spmm_t(cs.p, a, g, key), spmm_t_reference(cs.p, a, g.to_vector(), n, key)) ==
            "");
      CHECK(same_bits(run_spmm_t(cs.p, a, g, key), run_spmm(cs.p, csr_transpose(a), g, nullptr, key)));
    }
  }
}

TEST_CASE("spmm skips zero operands like mac_reduce with Inf and NaN about", "[spmm]") {
  // Row 0: 0 * Inf (skipped), row 1: Inf * 0 (skipped), row 2: Inf * 2 and NaN, row 3 stored zero only.
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  CsrMatrix a = csr_from_coo(4, 3, {0, 0, 1, 2, 2, 3}, {0, 1, 2, 0, 1, 2}, {0.0f, 1.5f, inf, inf, nan, 0.0f});
  Tensor b = Tensor::from_vector({3, 2}, {inf, -inf, 2.0f, nan, 0.0f, 1.0f});
  for (const MacPolicy& p : {LayerNumerics().mac, mac_of({{"format", "bf16"}}), mac_of({{"mul", "e6m6"}})}) {
    std::vector<float> got = run_spmm(p, a, b, nullptr);
    CHECK(test::mismatch(got, spmm_reference(p, a, b.to_vector(), 2, nullptr, {})) == "");
  }
  std::vector<float> c = run_spmm(LayerNumerics().mac, a, b, nullptr);
  CHECK(c[0] == 3.0f);                     // 0 * Inf skipped, 1.5 * 2
  CHECK(std::isnan(c[1]));                 // 1.5 * NaN
  CHECK(c[2] == 0.0f);                     // Inf * 0 skipped
  CHECK(c[3] == inf);                      // Inf * 1
  CHECK(std::isnan(c[4]));                 // Inf * Inf + NaN * 2
  CHECK(test::bits(c[6]) == 0u);           // a stored zero: +0
  CHECK(test::bits(c[4]) == 0x7fc00000u);  // the canonical quiet NaN
}

TEST_CASE("spmm and spmm_transposed give the same bits on 1, 2, 3 and 5 threads", "[spmm]") {
  ThreadsGuard guard;
  CsrMatrix a = random_csr(3000, 700, 0.01, 50);
  Tensor b = test::random_tensor({700, 16}, 51);
  Tensor g = test::random_tensor({3000, 16}, 52);
  Tensor bias = test::random_tensor({16}, 53);
  for (const MacPolicy& p : {LayerNumerics().mac, mac_of({{"format", "bf16"}}),
                             mac_of({{"mul", "bf16:sr"}, {"acc", "fp32"}, {"out", "e5m10:sr"}})}) {
    cpu_backend().set_threads(1);
    const std::vector<float> c1 = run_spmm(p, a, b, &bias, {3, 4}), t1 = run_spmm_t(p, a, g, {3, 4});
    for (int threads : {2, 3, 5}) {
      cpu_backend().set_threads(threads);
      CHECK(same_bits(run_spmm(p, a, b, &bias, {3, 4}), c1));
      CHECK(same_bits(run_spmm_t(p, a, g, {3, 4}), t1));
    }
  }
}

TEST_CASE("spmm rejects mismatched shapes and invalid matrices", "[spmm]") {
  CsrMatrix a = random_csr(4, 5, 0.5, 1);
  Tensor c = Tensor::zeros({4, 3});
  const MacPolicy p = LayerNumerics().mac;
  CHECK_THROWS_WITH(cpu_backend().spmm(p, a, Tensor::zeros({4, 3}), nullptr, c, {}),
                    Catch::Contains("spmm: a 4 x 5"));
  Tensor bias = Tensor::zeros({2});
  CHECK_THROWS_WITH(cpu_backend().spmm(p, a, Tensor::zeros({5, 3}), &bias, c, {}),
                    Catch::Contains("with bias (2,)"));
  CsrMatrix bad = a;
  bad.row_ptr.back() += 1;
  CHECK_THROWS_WITH(cpu_backend().spmm(p, bad, Tensor::zeros({5, 3}), nullptr, c, {}),
                    Catch::StartsWith("spmm: a:"));
  Tensor ct = Tensor::zeros({4, 3});
  CHECK_THROWS_WITH(cpu_backend().spmm_transposed(p, a, Tensor::zeros({4, 3}), ct, {}),
                    Catch::Contains("spmm_transposed"));
}
