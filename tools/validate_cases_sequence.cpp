// Cases of the sequence family (core/backend_ops_sequence.h): index gathers and
// scatter-sums (Embedding, index_select) with repeated indices and a skipped
// padding row, and the temporal pools over either time dimension, with and
// without step masks.
#include "core/draw_key.h"
#include "tools/validate_case.h"

namespace emu::validate {
namespace {

void index_cases(CaseList& list) {
  struct I {
    const char* name;
    const char* note;
    int64_t A, S, B, P;
    int64_t skip;
    Specials sp;
    bool views;  // x / src transposed, index narrowed
  };
  const I shapes[] = {
      {"embedding_11x7", "A 1, S 11 rows of 7, 13 indices with repeats", 1, 11, 7, 13, 2, Specials::All,
       false},
      {"select_3x5x4", "A 3, S 5, B 4, 8 indices", 3, 5, 4, 8, -1, Specials::Zeros, false},
      {"repeats_300", "300 indices into 3 rows (long sums, chunks count occurrences)", 2, 3, 2, 300, -1,
       Specials::Zeros, false},
      {"views_2x6x5", "transposed data, a narrowed index", 2, 6, 5, 9, 0, Specials::Zeros, true},
      {"no_index", "P = 0: nothing gathered, every row R(+0)", 2, 4, 3, 0, -1, Specials::None, false},
  };
  for (const I& s : shapes) {
    std::vector<float> index = seeded_indices(path_hash(s.name), s.views ? s.P + 4 : s.P, s.S);
    auto add_index = [&](Case& c) {
      InputSpec& in = c.in("index", {static_cast<int64_t>(index.size())}).exact(index);
      if (s.views) in.narrow(0, 2, s.P);
    };
    {
      Case& c = add_case(list, Op::index_gather, s.name, s.note);
      add_index(c);
      if (s.views)
        c.in("x", {s.A, s.B, s.S}, s.sp).t(1, 2).weight();
      else
        c.in("x", {s.A, s.S, s.B}, s.sp).weight();
      c.out("y", {s.A, s.P, s.B});
      c.call = [](CallArgs& a) {
        a.backend.index_gather(a.num.f, a.in("index"), a.in("x"), a.out("y"), a.key);
      };
    }
    {
      Case& c =
          add_case(list, Op::index_sum, s.name, s.note + std::string(s.skip >= 0 ? ", a skipped row" : ""));
      add_index(c);
      if (s.views)
        c.in("src", {s.A, s.B, s.P}, s.sp).t(1, 2).grad();
      else
        c.in("src", {s.A, s.P, s.B}, s.sp).grad();
      c.out("dst", {s.A, s.S, s.B});
      const int64_t skip = s.skip;
      c.call = [skip](CallArgs& a) {
        a.backend.index_sum(a.num.sum, a.in("index"), skip, a.in("src"), a.out("dst"), a.key);
      };
    }
  }
}

void temporal_cases(CaseList& list) {
  struct T {
    const char* name;
    const char* note;
    int time_dim;
    int64_t N, C, L;
    std::vector<int64_t> lengths;  // empty: no mask
    Specials sp;
    bool transposed;  // x the other layout's tensor, transposed
  };
  const T shapes[] = {
      {"td2_3x5x7", "x (N,C,L) = (3,5,7), no mask", 2, 3, 5, 7, {}, Specials::Zeros, false},
      {"td1_mask", "x (N,L,C) = (3,6,4), lengths 6, 3, 1", 1, 3, 4, 6, {6, 3, 1}, Specials::Zeros, false},
      {"td2_mask_transposed",
       "x (N,C,L) as a transposed (N,L,C), lengths 2, 9",
       2,
       2,
       3,
       9,
       {2, 9},
       Specials::Zeros,
       true},
      {"long_td1", "L = 200 (chunks), lengths 200, 57", 1, 2, 3, 200, {200, 57}, Specials::Zeros, false},
      {"specials", "Inf and NaN (the first NaN wins)", 2, 2, 4, 8, {}, Specials::All, false},
  };
  for (const T& s : shapes) {
    const int td = s.time_dim;
    const Shape x = td == 2 ? Shape{s.N, s.C, s.L} : Shape{s.N, s.L, s.C};
    auto add_x = [&](Case& c, const char* name) -> InputSpec& {
      return s.transposed ? c.in(name, {x[0], x[2], x[1]}, s.sp).t(1, 2) : c.in(name, x, s.sp);
    };
    auto add_gy = [&](Case& c) {  // transposed with x: a (C,N) tensor seen as (N,C)
      if (s.transposed)
        c.in("gy", {s.C, s.N}, s.sp).t(0, 1).grad();
      else
        c.in("gy", {s.N, s.C}, s.sp).grad();
    };
    auto add_mask = [&](Case& c) {
      if (!s.lengths.empty()) c.in("mask", {s.N, s.L}).exact(prefix_mask(s.N, s.L, s.lengths));
    };
    {
      Case& c = add_case(list, Op::temporal_avg_pool_forward, s.name, s.note);
      add_x(c, "x");
      add_mask(c);
      c.out("y", {s.N, s.C});
      c.call = [td](CallArgs& a) {
        a.backend.temporal_avg_pool_forward(a.num.mac, td, a.in("x"), a.opt("mask"), a.out("y"), a.key);
      };
    }
    {
      Case& c = add_case(list, Op::temporal_avg_pool_backward, s.name, s.note);
      add_gy(c);
      add_mask(c);
      c.out("gx", x);
      c.call = [td](CallArgs& a) {
        a.backend.temporal_avg_pool_backward(a.num.mac, td, a.in("gy"), a.opt("mask"), a.out("gx"), a.key);
      };
    }
    {
      Case& c = add_case(list, Op::temporal_max_pool_forward, s.name, s.note);
      add_x(c, "x");
      add_mask(c);
      c.out("y", {s.N, s.C});
      c.out("argmax", {s.N, s.C}, false);
      c.call = [td](CallArgs& a) {
        a.backend.temporal_max_pool_forward(a.num.f, td, a.in("x"), a.opt("mask"), a.out("y"),
                                            a.out("argmax"), a.key);
      };
    }
    {
      Case& c = add_case(list, Op::temporal_max_pool_backward, s.name, s.note);
      add_gy(c);
      c.in("argmax", {s.N, s.C}).exact(seeded_indices(path_hash(s.name), s.N * s.C, s.L));
      c.out("gx", x);
      c.call = [td](CallArgs& a) {
        a.backend.temporal_max_pool_backward(a.num.mac, td, a.in("gy"), a.in("argmax"), a.out("gx"), a.key);
      };
    }
  }
}

}  // namespace

void add_sequence_cases(CaseList& list) {
  index_cases(list);
  temporal_cases(list);
}

}  // namespace emu::validate
