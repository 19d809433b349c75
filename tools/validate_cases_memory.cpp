// Cases of the memory ops (core/backend_ops_memory.h): copies, fills and
// transfers between any views, keeping NaN payloads and signed zeros; the
// in-place accumulate; the optimizer's host reductions. The ops take no format:
// their data inputs are rounded to the policy's element format first.
#include <cmath>

#include "tools/validate_case.h"

namespace emu::validate {
namespace {

void copy_cases(CaseList& list) {
  auto call = [](CallArgs& a) { a.backend.copy(a.in("src"), a.in("dst")); };
  {
    Case& c = add_case(list, Op::copy, "contiguous_1000", "1-D contiguous into contiguous");
    c.in("src", {1000});
    c.in("dst", {1000}).io();
    c.round_inputs = true;
    c.call = call;
  }
  {
    Case& c =
        add_case(list, Op::copy, "transposed_17x33", "a transposed (33,17) source into a contiguous (17,33)");
    c.in("src", {33, 17}).t(0, 1);
    c.in("dst", {17, 33}).io();
    c.round_inputs = true;
    c.call = call;
  }
  {
    Case& c = add_case(list, Op::copy, "narrowed_both",
                       "a narrowed source into a transposed, narrowed destination");
    c.in("src", {20, 31}).narrow(1, 3, 25);
    c.in("dst", {25, 24}).t(0, 1).narrow(0, 2, 20).io();  // the base's other elements must stay
    c.round_inputs = true;
    c.call = call;
  }
  {
    Case& c = add_case(list, Op::copy, "permuted_3d", "a (4,5,6) source with dimensions 0 and 2 swapped");
    c.in("src", {4, 5, 6}).t(0, 2);
    c.in("dst", {6, 5, 4}).io();
    c.round_inputs = true;
    c.call = call;
  }
  {
    Case& c = add_case(list, Op::copy, "empty_0x5", "no elements");
    c.in("src", {0, 5});
    c.in("dst", {0, 5}).io();
    c.call = call;
  }
  {
    Case& c = add_case(list, Op::copy, "scalar", "a 0-d tensor");
    c.in("src", {});
    c.in("dst", {}).io();
    c.round_inputs = true;
    c.call = call;
  }
}

void fill_cases(CaseList& list) {
  struct F {
    const char* name;
    const char* note;
    Shape base;
    bool transposed;
    float value;
  };
  const F fills[] = {
      {"contiguous_777", "0.1 into 777 elements", {777}, false, 0.1f},
      {"negative_zero_transposed", "-0 into a transposed (9,13)", {13, 9}, true, -0.0f},
      {"nan_payload_transposed",
       "NaN 0x7fc12345 into a transposed (6,11)",
       {11, 6},
       true,
       std::nanf("0x12345")},
      {"subnormal", "the smallest subnormal", {31}, false, 0x1p-149f},
      {"infinity_scalar", "-Inf into a 0-d tensor", {}, false, -INFINITY},
      {"empty", "no elements", {3, 0}, false, 1.0f},
  };
  for (const F& f : fills) {
    Case& c = add_case(list, Op::fill, f.name, f.note);
    InputSpec& y = c.in("y", f.base).io();
    if (f.transposed) y.t(0, 1);
    const float v = f.value;
    c.call = [v](CallArgs& a) { a.backend.fill(a.in("y"), v); };
  }
  {
    Case& c = add_case(list, Op::fill, "narrowed_rows", "2.5 into columns 3..9 of a (7,12): the rest stays");
    c.in("y", {7, 12}).narrow(1, 3, 7).io();
    c.call = [](CallArgs& a) { a.backend.fill(a.in("y"), 2.5f); };
  }
}

void transfer_cases(CaseList& list) {
  auto up = [](CallArgs& a) { a.backend.upload(a.host_in("src"), a.in("dst")); };
  {
    Case& c = add_case(list, Op::upload, "contiguous_513", "513 host values into a contiguous tensor");
    c.in("src", {513});
    c.in("dst", {513}).io();
    c.round_inputs = true;
    c.call = up;
  }
  {
    Case& c = add_case(list, Op::upload, "transposed_dst", "126 host values into a transposed (14,9) view");
    c.in("src", {14, 9});
    c.in("dst", {9, 14}).t(0, 1).io();
    c.round_inputs = true;
    c.call = up;
  }
  {
    Case& c = add_case(list, Op::upload, "narrowed_dst",
                       "host values into columns 2..6 of a (8,11): the rest stays");
    c.in("src", {8, 5});
    c.in("dst", {8, 11}).narrow(1, 2, 5).io();
    c.round_inputs = true;
    c.call = up;
  }
  {
    Case& c = add_case(list, Op::upload, "empty", "no elements");
    c.in("src", {0});
    c.in("dst", {0}).io();
    c.call = up;
  }
  auto down = [](CallArgs& a) { a.backend.download(a.in("src"), a.host_f32("host")); };
  {
    Case& c = add_case(list, Op::download, "contiguous_1031", "1031 elements to the host");
    c.in("src", {1031});
    c.host_out("host", HostKind::F32, 1031);
    c.round_inputs = true;
    c.call = down;
  }
  {
    Case& c = add_case(list, Op::download, "transposed_3d", "a (5,7,3) view of a (3,7,5) tensor to the host");
    c.in("src", {3, 7, 5}).t(0, 2);
    c.host_out("host", HostKind::F32, 105);
    c.round_inputs = true;
    c.call = down;
  }
  {
    Case& c = add_case(list, Op::download, "narrowed", "rows 1..4 of a transposed (12,10) to the host");
    c.in("src", {10, 12}).t(0, 1).narrow(0, 1, 4);
    c.host_out("host", HostKind::F32, 40);
    c.round_inputs = true;
    c.call = down;
  }
  {
    Case& c = add_case(list, Op::download, "empty", "no elements");
    c.in("src", {4, 0});
    c.host_out("host", HostKind::F32, 0);
    c.call = down;
  }
}

void accumulate_cases(CaseList& list) {
  auto call = [](CallArgs& a) { a.backend.accumulate(a.in("acc"), a.in("g")); };
  {
    Case& c =
        add_case(list, Op::accumulate, "contiguous_999", "acc += g over 999 elements (Inf - Inf, NaNs)");
    c.in("acc", {999}).io();
    c.in("g", {999}).grad();
    c.round_inputs = true;
    c.call = call;
  }
  {
    Case& c =
        add_case(list, Op::accumulate, "transposed_g", "a transposed gradient into a contiguous (13,21)");
    c.in("acc", {13, 21}).io();
    c.in("g", {21, 13}).t(0, 1).grad();
    c.round_inputs = true;
    c.call = call;
  }
  {
    Case& c = add_case(list, Op::accumulate, "narrowed_acc", "into columns 1..7 of a (9,10): the rest stays");
    c.in("acc", {9, 10}).narrow(1, 1, 7).io();
    c.in("g", {9, 7}).grad();
    c.round_inputs = true;
    c.call = call;
  }
  {
    Case& c = add_case(list, Op::accumulate, "empty", "no elements");
    c.in("acc", {0, 3}).io();
    c.in("g", {0, 3}).grad();
    c.call = call;
  }
}

void reduction_cases(CaseList& list) {
  auto sq = [](CallArgs& a) { a.backend.sum_squares(a.in("x"), a.host_f64("sum")); };
  {
    Case& c = add_case(list, Op::sum_squares, "finite_1000", "1000 finite values, continuing from 1.5");
    c.in("x", {1000}, Specials::Finite);
    c.host_out("sum", HostKind::F64, 1, 1.5);
    c.round_inputs = true;
    c.call = sq;
  }
  {
    Case& c = add_case(list, Op::sum_squares, "specials_transposed", "a transposed (19,23) with Inf and NaN");
    c.in("x", {23, 19}).t(0, 1);
    c.host_out("sum", HostKind::F64, 1, 0.0);
    c.round_inputs = true;
    c.call = sq;
  }
  {
    Case& c = add_case(list, Op::sum_squares, "narrowed_large",
                       "huge values (squares beyond binary32) in a narrowed view");
    c.in("x", {16, 9}, Specials::Finite, -1.0e30f, 1.0e30f).narrow(0, 3, 11);
    c.host_out("sum", HostKind::F64, 1, -2.0);
    c.round_inputs = true;
    c.call = sq;
  }
  {
    Case& c = add_case(list, Op::sum_squares, "empty", "no elements: the sum stays");
    c.in("x", {0});
    c.host_out("sum", HostKind::F64, 1, 3.25);
    c.call = sq;
  }
  auto cnt = [](CallArgs& a) { a.backend.count_nonfinite(a.in("x"), a.host_i64("count")); };
  {
    Case& c = add_case(list, Op::count_nonfinite, "specials_2000", "2000 values with Inf and NaN");
    c.in("x", {2000});
    c.host_out("count", HostKind::I64, 1, -1);
    c.round_inputs = true;
    c.call = cnt;
  }
  {
    Case& c = add_case(list, Op::count_nonfinite, "transposed", "a transposed (17,29)");
    c.in("x", {29, 17}).t(0, 1);
    c.host_out("count", HostKind::I64, 1, -1);
    c.round_inputs = true;
    c.call = cnt;
  }
  {
    Case& c = add_case(list, Op::count_nonfinite, "finite", "no Inf or NaN: 0");
    c.in("x", {333}, Specials::Finite);
    c.host_out("count", HostKind::I64, 1, -1);
    c.call = cnt;
  }
  {
    Case& c = add_case(list, Op::count_nonfinite, "empty", "no elements: 0");
    c.in("x", {0, 2});
    c.host_out("count", HostKind::I64, 1, -1);
    c.call = cnt;
  }
}

}  // namespace

void add_memory_cases(CaseList& list) {
  copy_cases(list);
  fill_cases(list);
  transfer_cases(list);
  accumulate_cases(list);
  reduction_cases(list);
}

}  // namespace emu::validate
