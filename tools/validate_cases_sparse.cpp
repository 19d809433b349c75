// Cases of the sparse family (core/backend_ops_sparse.h): a CSR matrix times a
// dense one and its transpose, with empty rows, stored zeros, a row longer than
// any chunk and a matrix without entries. The CSR values are an input (moved to
// the device like any tensor); the index arrays are the case's.
#include <memory>

#include "core/csr.h"
#include "core/draw_key.h"
#include "tools/validate_case.h"

namespace emu::validate {
namespace {

// A rows x cols pattern with about one entry in `every` positions, ascending
// columns per row; the rows listed in `empty` have none.
CsrMatrix pattern(int64_t rows, int64_t cols, uint64_t seed, int every, const std::vector<int64_t>& empty) {
  CsrMatrix a;
  a.rows = rows;
  a.cols = cols;
  a.row_ptr.push_back(0);
  for (int64_t r = 0; r < rows; ++r) {
    bool skip = false;
    for (int64_t e : empty) skip = skip || e == r;
    for (int64_t c = 0; c < cols && !skip; ++c)
      if (mix64(seed ^ mix64(static_cast<uint64_t>(r * cols + c) + 1)) % static_cast<uint64_t>(every) == 0)
        a.col_idx.push_back(static_cast<int32_t>(c));
    a.row_ptr.push_back(static_cast<int64_t>(a.col_idx.size()));
  }
  return a;
}

struct S {
  const char* name;
  const char* note;
  int64_t R, K, N;
  int every;
  std::vector<int64_t> empty;
  bool bias, transposed_b;
  Specials sp;
};

void sparse_cases(CaseList& list) {
  const S shapes[] = {
      {"7x9x5_bias",
       "R 7, K 9, N 5, rows 2 and 5 empty, a bias",
       7,
       9,
       5,
       3,
       {2, 5},
       true,
       false,
       Specials::Zeros},
      {"dense_row_300",
       "3 x 300 with about half the entries (chunks), N 2",
       3,
       300,
       2,
       2,
       {},
       false,
       false,
       Specials::Zeros},
      {"transposed_b", "b a transposed view, R 6, K 8, N 7", 6, 8, 7, 2, {0}, true, true, Specials::Zeros},
      {"no_entries",
       "a 4 x 6 matrix without entries: R(+0) or R(bias)",
       4,
       6,
       3,
       1,
       {0, 1, 2, 3},
       true,
       false,
       Specials::None},
      {"specials", "Inf, NaN, huge values", 5, 6, 4, 2, {}, true, false, Specials::All},
  };
  for (const S& s : shapes) {
    auto a = std::make_shared<const CsrMatrix>(pattern(s.R, s.K, path_hash(s.name), s.every, s.empty));
    const int64_t nnz = a->nnz();
    {
      Case& c = add_case(list, Op::spmm, s.name, s.note);
      c.in("values", {nnz}, s.sp).weight();
      if (s.transposed_b)
        c.in("b", {s.N, s.K}, s.sp).t(0, 1);
      else
        c.in("b", {s.K, s.N}, s.sp);
      if (s.bias) c.in("bias", {s.N}, s.sp).weight();
      c.out("c", {s.R, s.N});
      c.call = [a](CallArgs& x) {
        CsrMatrix m = *a;
        m.values = x.in("values");
        x.backend.spmm(x.num.mac, m, x.in("b"), x.opt("bias"), x.out("c"), x.key);
      };
    }
    {
      Case& c = add_case(list, Op::spmm_transposed, s.name, s.note);
      c.in("values", {nnz}, s.sp).weight();
      if (s.transposed_b)
        c.in("b", {s.N, s.R}, s.sp).t(0, 1).grad();
      else
        c.in("b", {s.R, s.N}, s.sp).grad();
      c.out("c", {s.K, s.N});
      c.call = [a](CallArgs& x) {
        CsrMatrix m = *a;
        m.values = x.in("values");
        x.backend.spmm_transposed(x.num.mac, m, x.in("b"), x.out("c"), x.key);
      };
    }
  }
}

}  // namespace

void add_sparse_cases(CaseList& list) { sparse_cases(list); }

}  // namespace emu::validate
