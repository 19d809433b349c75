// docs/contract.md section 4, written out literally with exact rationals:
//
//     acc = +0
//     for k = 0 .. K-1 (zero operands skipped):
//         p   = R_mul(a_k * b_k)      (exact product when mul = exact)
//         acc = R_acc(acc + p)
//     if bias: acc = R_acc(acc + bias)
//     y = R_out(acc)
//
// with `chunk: C`: each run of C consecutive terms is accumulated as above from
// +0 and its result added to acc_outer in order; the bias then goes into
// acc_outer (docs/contract.md section 4.5). No stochastic rounding here (rand = 0).
#include "tests/reference/reference.h"

namespace emu::ref {

double ref_dot(bool mul_exact, const Format& mul, const Format& acc_format, const Format& out, int chunk,
               const Format& acc_outer, const float* a, const float* b, int64_t K, const float* bias) {
  auto add_into = [](const Format& f, double acc, const RefExact& term) {
    return ref_round(f, exact_sum(RefExact::of(acc), term, f.rounding == Rounding::Down), 0);
  };
  double outer = 0.0;  // +0 in acc_outer
  double acc = 0.0;    // +0 in acc
  int64_t in_run = 0;
  for (int64_t k = 0; k < K; ++k) {
    if (chunk > 0 && in_run == chunk) {  // a run is complete: promote it
      outer = add_into(acc_outer, outer, RefExact::of(acc));
      acc = 0.0;
      in_run = 0;
    }
    ++in_run;
    if (a[k] == 0.0f || b[k] == 0.0f) continue;
    RefExact p =
        exact_product(RefExact::of(static_cast<double>(a[k])), RefExact::of(static_cast<double>(b[k])));
    if (!mul_exact) p = RefExact::of(ref_round(mul, p, 0));
    acc = add_into(acc_format, acc, p);
  }
  const Format* last = &acc_format;
  if (chunk > 0) {
    if (in_run > 0) outer = add_into(acc_outer, outer, RefExact::of(acc));  // the last (partial) run
    acc = outer;
    last = &acc_outer;
  }
  if (bias) acc = add_into(*last, acc, RefExact::of(static_cast<double>(*bias)));
  return ref_round(out, RefExact::of(acc), 0);
}

}  // namespace emu::ref
