// What each op of the op list counts (docs/cost.md has the table). Every op
// runs on the inner backend first; then CostOps::count adds its counts. An op
// without an overload here falls to the template, which records it as
// uncounted: `emutrain cost` lists those, so nothing is left out silently.
//
// Term counts are those of the op specs' reductions (core/backend_ops_*.h):
// a reduction of K terms is K multiply-accumulates, padding and off-grid
// positions included where the spec makes them zero-operand terms.
#include <cmath>

#include "core/csr.h"
#include "core/sparsity.h"
#include "numerics/recurrent_cells.h"
#include "train/cost_backend.h"

namespace emu::train {

template <Op op>
struct OpTag {};

namespace {

using Role = CountingBackend::Role;
using Who = CountingBackend::Who;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Chunked reductions promote every chunk's sum into acc_outer: one addition per chunk.
void chunk_promotions(CountingBackend& c, const Who& w, const MacPolicy& p, int64_t outputs, int64_t K) {
  if (p.chunk <= 0 || K == 0) return;
  MacPolicy outer = p;
  outer.acc = p.acc_outer;
  c.sum(w, outer, outputs * ceil_div(K, p.chunk));
}

// Sum over the window positions (o, k) of one dimension that fall inside [0, size).
int64_t taps_inside(int64_t size, int64_t out, int64_t kernel, int64_t stride, int64_t pad,
                    int64_t dilation) {
  int64_t n = 0;
  for (int64_t o = 0; o < out; ++o)
    for (int64_t k = 0; k < kernel; ++k) {
      const int64_t i = o * stride - pad + k * dilation;
      if (i >= 0 && i < size) ++n;
    }
  return n;
}

// Dropped elements of a 0/1 mask along rows of length `len`: per row (rows = size / len).
std::vector<int64_t> dropped_per_row(const std::vector<uint8_t>& m, int64_t len) {
  std::vector<int64_t> r(m.size() / static_cast<size_t>(len), 0);
  for (size_t i = 0; i < m.size(); ++i) r[i / static_cast<size_t>(len)] += m[i] ? 0 : 1;
  return r;
}
// ... per column of a row-major (rows, len) mask.
std::vector<int64_t> dropped_per_col(const std::vector<uint8_t>& m, int64_t len) {
  std::vector<int64_t> r(static_cast<size_t>(len), 0);
  for (size_t i = 0; i < m.size(); ++i) r[i % static_cast<size_t>(len)] += m[i] ? 0 : 1;
  return r;
}

}  // namespace

struct CostOps {
  template <Op op, class... A>
  static void count(CountingBackend& c, OpTag<op>, const A&...) {
    c.uncounted(op_name(op));
  }

  // --- memory and format conversion: no arithmetic of the modelled hardware ---
  // Copies, fills and transfers are the emulator's plumbing; a rounding into a
  // read format models the format the value is stored in, whose bits the reading
  // op counts. count_nonfinite is the trainer's diagnosis.
  static void count(CountingBackend&, OpTag<Op::copy>, const Tensor&, const Tensor&) {}
  static void count(CountingBackend&, OpTag<Op::fill>, const Tensor&, float) {}
  static void count(CountingBackend&, OpTag<Op::upload>, const float*, const Tensor&) {}
  static void count(CountingBackend&, OpTag<Op::download>, const Tensor&, float*) {}
  static void count(CountingBackend&, OpTag<Op::count_nonfinite>, const Tensor&, int64_t*) {}
  static void count(CountingBackend&, OpTag<Op::quantize>, const Format&, const Tensor&, const Tensor&,
                    DrawKey) {}
  static void count(CountingBackend&, OpTag<Op::apply_mask>, const Tensor&, const Tensor&, const Tensor&) {}

  // Autograd's gradient accumulation: one fp32 addition per element.
  static void count(CountingBackend& c, OpTag<Op::accumulate>, const Tensor& acc, const Tensor&) {
    Who w{nullptr, "(autograd)", DrawSite::GradInput, 0};
    c.op(w, "add", Format{}, acc.numel());
  }

  // Block formats: the scale of each block is metadata read with the block.
  static void count(CountingBackend& c, OpTag<Op::quantize_blocks>, const Format& f, const Tensor&,
                    const Tensor&, const ReadLayout& layout, DrawKey key) {
    const Who w = c.who(key);
    const int64_t blocks =
        f.block.size > 0 ? layout.outer * layout.inner * ceil_div(layout.len, f.block.size) : 1;
    c.meta(w, "block_scale", blocks * 8);  // E8M0 or e4m3 scales: 8 bits each
  }

  // N:M masks: the mask is kept for the products that follow; the hardware's
  // metadata is the position of each kept element in its group, ceil(log2 M) bits.
  static void count(CountingBackend& c, OpTag<Op::nm_mask>, const NmParams& p, const Tensor&,
                    const Tensor& mask, DrawKey key) {
    const Who w = c.who(key);
    std::vector<float> m = mask.to_vector();
    std::vector<uint8_t> bytes(m.size());
    int64_t kept = 0;
    for (size_t i = 0; i < m.size(); ++i) {
      bytes[i] = m[i] != 0.0f;
      kept += bytes[i];
    }
    c.masks_[{w.layer, static_cast<int>(w.site)}] = std::move(bytes);
    int bits = 0;
    while ((1 << bits) < p.m) ++bits;
    c.meta(w, "nm_index", kept * bits);
  }

  // gemm: a (M,K) b (K,N) -> c (M,N): M*N*K terms. Operands by the layers'
  // convention (layers/linear.cpp): forward x*w^T, grad-input g*w, grad-weight
  // g^T*x, bias gradient g^T*ones (a plain sum).
  static void count(CountingBackend& c, OpTag<Op::gemm>, const MacPolicy& p, const Tensor& a, const Tensor& b,
                    const Tensor* bias, const Tensor& out, DrawKey key) {
    const Who w = c.who(key);
    const int64_t M = a.dim(0), K = a.dim(1), N = b.dim(1);
    if (w.site == DrawSite::GradBias) {
      c.sum(w, p, M * N * K);
      c.read(w, Role::Grads, a.numel());
      c.write(w, out.numel());
      return;
    }
    Role ra = Role::Activations, rb = Role::Weights;
    if (w.site == DrawSite::GradInput) ra = Role::Grads;
    if (w.site == DrawSite::GradWeight) ra = Role::Grads, rb = Role::Activations;
    // Products an N:M mask drops: a weight element of b (K,N) is an operand of M
    // products, a gradient element of a (M,K) of N; both dropped counts once.
    const std::vector<uint8_t>* wm = rb == Role::Weights ? c.mask(w, DrawSite::ReadWeights) : nullptr;
    const std::vector<uint8_t>* gm = ra == Role::Grads ? c.mask(w, DrawSite::ReadGrad) : nullptr;
    if (wm && static_cast<int64_t>(wm->size()) != b.numel()) wm = nullptr;
    if (gm && static_cast<int64_t>(gm->size()) != a.numel()) gm = nullptr;
    int64_t masked = 0;
    // Masks are in the master's row-major order: w (N,K) for b = w^T in the forward
    // (Linear transposes it), w (K,N) = b itself in the grad-input; g (M,K) or, for
    // the grad-weight's a = g^T, g (K,M).
    std::vector<int64_t> w_by_k, g_by_k;
    if (wm) w_by_k = w.site == DrawSite::Forward ? dropped_per_col(*wm, K) : dropped_per_row(*wm, N);
    if (gm) g_by_k = w.site == DrawSite::GradWeight ? dropped_per_row(*gm, M) : dropped_per_col(*gm, K);
    for (int64_t k = 0; k < K; ++k) {
      const int64_t dw = wm ? w_by_k[static_cast<size_t>(k)] : 0,
                    dg = gm ? g_by_k[static_cast<size_t>(k)] : 0;
      masked += M * dw + N * dg - dg * dw;
    }
    c.mac(w, p, ra, rb, M * N * K, masked);
    chunk_promotions(c, w, p, M * N, K);
    if (bias) c.sum(w, p, M * N);  // acc = R(acc + bias), once per output
    c.read(w, ra, a.numel());
    c.read(w, rb, b.numel());
    if (bias) c.read(w, Role::Weights, bias->numel());
    c.write(w, out.numel());
  }

  // conv2d_forward: y (N,Cout,OH,OW), K = Cin/G*KH*KW terms each, padding taps included.
  static void count(CountingBackend& c, OpTag<Op::conv2d_forward>, const MacPolicy& p, const Conv2dParams& cp,
                    const Tensor& x, const Tensor& wt, const Tensor* bias, const Tensor& y, DrawKey key) {
    const Who w = c.who(key);
    const int64_t K = wt.numel() / wt.dim(0);
    const int64_t per_weight = y.dim(0) * y.dim(2) * y.dim(3);  // each weight meets every output pixel
    int64_t masked = 0;
    if (const auto* m = c.mask(w, DrawSite::ReadWeights); m && static_cast<int64_t>(m->size()) == wt.numel())
      for (uint8_t keep : *m) masked += keep ? 0 : per_weight;
    c.mac(w, p, Role::Activations, Role::Weights, y.numel() * K, masked);
    chunk_promotions(c, w, p, y.numel(), K);
    if (bias) c.sum(w, p, y.numel());
    (void)cp;
    c.read(w, Role::Activations, x.numel());
    c.read(w, Role::Weights, wt.numel());
    if (bias) c.read(w, Role::Weights, bias->numel());
    c.write(w, y.numel());
  }

  // conv2d_grad_input: gx (N,Cin,H,W), K = Cout/G*KH*KW terms each (off-grid taps are zero-operand terms).
  static void count(CountingBackend& c, OpTag<Op::conv2d_grad_input>, const MacPolicy& p,
                    const Conv2dParams& cp, const Tensor& gy, const Tensor& wt, const Tensor& gx,
                    DrawKey key) {
    const Who w = c.who(key);
    const int64_t K = wt.dim(0) / cp.groups * wt.dim(2) * wt.dim(3);
    int64_t masked = 0;
    const auto* wm = c.mask(w, DrawSite::ReadWeights);
    const auto* gm = c.mask(w, DrawSite::ReadGrad);
    if (wm && static_cast<int64_t>(wm->size()) == wt.numel()) {
      const int64_t per_weight = gx.dim(0) * gx.dim(2) * gx.dim(3);
      for (uint8_t keep : *wm) masked += keep ? 0 : per_weight;
    }
    if (gm) c.uncounted("conv2d_grad_input: products dropped by a gradient mask (not subtracted)");
    c.mac(w, p, Role::Grads, Role::Weights, gx.numel() * K, masked);
    chunk_promotions(c, w, p, gx.numel(), K);
    c.read(w, Role::Grads, gy.numel());
    c.read(w, Role::Weights, wt.numel());
    c.write(w, gx.numel());
  }

  // conv2d_grad_weight: gw (Cout,Cin/G,KH,KW), K = N*OH*OW terms each.
  static void count(CountingBackend& c, OpTag<Op::conv2d_grad_weight>, const MacPolicy& p,
                    const Conv2dParams&, const Tensor& x, const Tensor& gy, const Tensor& gw, DrawKey key) {
    const Who w = c.who(key);
    const int64_t K = gy.dim(0) * gy.dim(2) * gy.dim(3);
    int64_t masked = 0;
    if (const auto* gm = c.mask(w, DrawSite::ReadGrad);
        gm && static_cast<int64_t>(gm->size()) == gy.numel()) {
      const int64_t per_grad = gw.numel() / gw.dim(0);  // each gy element meets Cin/G*KH*KW weights
      for (uint8_t keep : *gm) masked += keep ? 0 : per_grad;
    }
    c.mac(w, p, Role::Grads, Role::Activations, gw.numel() * K, masked);
    chunk_promotions(c, w, p, gw.numel(), K);
    c.read(w, Role::Activations, x.numel());
    c.read(w, Role::Grads, gy.numel());
    c.write(w, gw.numel());
  }

  // channel_sum: the bias gradient of a convolution, a plain sum of every element.
  static void count(CountingBackend& c, OpTag<Op::channel_sum>, const MacPolicy& p, const Tensor& x,
                    const Tensor& y, DrawKey key) {
    const Who w = c.who(key);
    c.sum(w, p, x.numel());
    c.read(w, Role::Grads, x.numel());
    c.write(w, y.numel());
  }

  // spmm: nnz stored entries times N columns; the dense operand is the layer's
  // parameter (sparse features times weights) or its input (adjacency times features).
  static void count(CountingBackend& c, OpTag<Op::spmm>, const MacPolicy& p, const CsrMatrix& a,
                    const Tensor& b, const Tensor* bias, const Tensor& out, DrawKey key) {
    const Who w = c.who(key);
    const int64_t N = b.dim(1);
    bool b_is_weight = false;
    if (w.module)
      for (const auto& [name, t] : w.module->named_parameters())
        if (t.numel() == b.numel() && name.find('.') == std::string::npos) b_is_weight = true;
    const Role ra = b_is_weight ? Role::Activations : Role::Weights;
    const Role rb = b_is_weight ? Role::Weights : Role::Activations;
    int64_t masked = 0;
    if (const auto* wm = c.mask(w, DrawSite::ReadWeights);
        b_is_weight && wm && static_cast<int64_t>(wm->size()) == b.numel()) {
      // Row k of b meets the stored entries of column k.
      const std::vector<int64_t> d = dropped_per_row(*wm, N);
      for (int32_t k : a.col_idx) masked += d[static_cast<size_t>(k)];
    }
    c.mac(w, p, ra, rb, a.nnz() * N, masked);
    int64_t promotions = 0;
    if (p.chunk > 0)
      for (int64_t r = 0; r < a.rows; ++r)
        promotions += ceil_div(a.row_ptr[r + 1] - a.row_ptr[r], p.chunk) * N;
    if (promotions) {
      MacPolicy outer = p;
      outer.acc = p.acc_outer;
      c.sum(w, outer, promotions);
    }
    if (bias) c.sum(w, p, out.numel());
    c.read(w, ra, a.nnz());
    c.meta(w, "csr_index", 32 * (a.nnz() + a.rows + 1));
    c.read(w, rb, b.numel());
    if (bias) c.read(w, Role::Weights, bias->numel());
    c.write(w, out.numel());
  }

  // spmm_transposed: a^T b, the same nnz * N terms; b is the incoming gradient.
  static void count(CountingBackend& c, OpTag<Op::spmm_transposed>, const MacPolicy& p, const CsrMatrix& a,
                    const Tensor& b, const Tensor& out, DrawKey key) {
    const Who w = c.who(key);
    const int64_t N = b.dim(1);
    const Role ra = w.site == DrawSite::GradWeight ? Role::Activations : Role::Weights;
    int64_t masked = 0;
    if (const auto* gm = c.mask(w, DrawSite::ReadGrad); gm && static_cast<int64_t>(gm->size()) == b.numel()) {
      // Row r of the gradient meets the stored entries of row r of a.
      const std::vector<int64_t> d = dropped_per_row(*gm, N);
      for (int64_t r = 0; r < a.rows; ++r)
        masked += (a.row_ptr[r + 1] - a.row_ptr[r]) * d[static_cast<size_t>(r)];
    }
    c.mac(w, p, Role::Grads, ra, a.nnz() * N, masked);
    if (p.chunk > 0) c.uncounted("spmm_transposed: chunk promotions");
    c.read(w, ra, a.nnz());
    c.meta(w, "csr_index", 32 * (a.nnz() + a.rows + 1));
    c.read(w, Role::Grads, b.numel());
    c.write(w, out.numel());
  }

  // Attention products: both operands are activations (or a gradient and an activation).
  static void attention(CountingBackend& c, const MacPolicy& p, const Tensor& a, const Tensor& b,
                        const Tensor& out, int64_t K, DrawKey key) {
    const Who w = c.who(key);
    const Role ra = w.site == DrawSite::Forward ? Role::Activations : Role::Grads;
    c.mac(w, p, ra, Role::Activations, out.numel() * K, 0);
    chunk_promotions(c, w, p, out.numel(), K);
    c.read(w, ra, a.numel());
    c.read(w, Role::Activations, b.numel());
    c.write(w, out.numel());
  }
  static void count(CountingBackend& c, OpTag<Op::attention_scores>, const MacPolicy& p, int64_t heads,
                    const Tensor& x, const Tensor& y, const Tensor& s, DrawKey key) {
    attention(c, p, x, y, s, x.dim(2) / heads, key);  // over d: D = E / heads
  }
  static void count(CountingBackend& c, OpTag<Op::attention_context>, const MacPolicy& p, int64_t,
                    const Tensor& a, const Tensor& y, const Tensor& out, DrawKey key) {
    attention(c, p, a, y, out, a.dim(3), key);  // over the key positions S
  }
  static void count(CountingBackend& c, OpTag<Op::attention_context_transposed>, const MacPolicy& p, int64_t,
                    const Tensor& a, const Tensor& x, const Tensor& out, DrawKey key) {
    attention(c, p, a, x, out, a.dim(2), key);  // over the query positions T
  }

  // --- element-wise layers ---
  static std::string fn_mode(const FunctionApprox& fn) {
    return fn.pwl() ? "pwl:" + std::to_string(fn.pieces) : "exact";
  }

  static void count(CountingBackend& c, OpTag<Op::activation_forward>, Activation kind,
                    const FunctionApprox& fn, const Format& out, const Tensor& x, const Tensor& y,
                    DrawKey key) {
    const Who w = c.who(key);
    const int64_t n = x.numel();
    if (kind == Activation::Relu)
      c.op(w, "cmp", out, n);
    else
      c.function(w, activation_name(kind), fn_mode(fn), out, n);
    c.read(w, Role::Activations, n);
    c.write(w, y.numel());
  }

  // Backward per element (docs/layers_elementwise.md): relu a select; tanh and
  // sigmoid two products and a subtraction from y; gelu and silu their
  // derivative (a function evaluation) times gy; pwl the piece's slope times gy.
  static void count(CountingBackend& c, OpTag<Op::activation_backward>, Activation kind,
                    const FunctionApprox& fn, const Format& g, const Tensor&, const Tensor&, const Tensor& gy,
                    const Tensor& gx, DrawKey key) {
    const Who w = c.who(key);
    const int64_t n = gy.numel();
    if (kind == Activation::Relu) {
      c.op(w, "cmp", g, n);
    } else if (fn.pwl()) {
      c.function(w, std::string(activation_name(kind)) + "_slope", fn_mode(fn), g, n);
      c.op(w, "mul", g, n);
    } else if (kind == Activation::Tanh || kind == Activation::Sigmoid) {
      c.op(w, "mul", g, 2 * n);
      c.op(w, "add", g, n);
    } else {
      c.function(w, std::string(activation_name(kind)) + "_grad", "exact", g, n);
      c.op(w, "mul", g, n);
    }
    c.read(w, Role::Activations, n);
    c.read(w, Role::Grads, n);
    c.write(w, gx.numel());
  }

  static void count(CountingBackend& c, OpTag<Op::elementwise_add>, const Format& f, const Tensor& a,
                    const Tensor& b, const Tensor& y, DrawKey key) {
    const Who w = c.who(key);
    c.op(w, "add", f, y.numel());
    c.read(w, Role::Activations, a.numel());
    c.read(w, Role::Activations, b.numel());
    c.write(w, y.numel());
  }

  // Dropout: every element is a product with the scale (a dropped one is
  // selected away afterwards); the random draws are not costed.
  static void count(CountingBackend& c, OpTag<Op::dropout>, float, float, const Format& f, const Tensor& x,
                    const Tensor& y, DrawKey, DrawKey round_key) {
    const Who w = c.who(round_key);
    c.op(w, "mul", f, x.numel());
    c.read(w, c.phase_ == Phase::Backward ? Role::Grads : Role::Activations, x.numel());
    c.write(w, y.numel());
  }

  // Softmax / log-softmax of rows of C: C-1 comparisons (max), C subtractions,
  // C exps, a C-term sum, then C quotients (softmax) or a log and C subtractions.
  static void softmax(CountingBackend& c, const MacPolicy& p, bool log, const std::string& exp_mode,
                      const Tensor& x, DrawKey key) {
    const Who w = c.who(key);
    const int64_t C = x.dim(-1), rows = x.numel() / C;
    c.op(w, "cmp", p.out, rows * (C - 1));
    c.op(w, "add", p.out, rows * C);
    c.function(w, "exp", exp_mode, p.out, rows * C);
    c.sum(w, p, rows * C);
    if (log) {
      c.function(w, "log", "exact", p.out, rows);
      c.op(w, "add", p.out, rows * C);
    } else {
      c.op(w, "div", p.out, rows * C);
    }
    c.read(w, Role::Activations, x.numel());
    c.write(w, x.numel());
  }
  static void count(CountingBackend& c, OpTag<Op::softmax_forward>, const MacPolicy& p, bool log,
                    const Tensor& x, const Tensor&, DrawKey key) {
    softmax(c, p, log, "exact", x, key);
  }
  static void count(CountingBackend& c, OpTag<Op::softmax_forward_fn>, const MacPolicy& p, bool log,
                    const FunctionApprox& exp, const Tensor& x, const Tensor&, DrawKey key) {
    softmax(c, p, log, fn_mode(exp), x, key);
  }
  // softmax: dot = C-term reduction of gy*y, then C subtractions and C products;
  // log-softmax: a C-term sum, C exps, C products and C subtractions.
  static void count(CountingBackend& c, OpTag<Op::softmax_backward>, const MacPolicy& p, bool log,
                    const Tensor& y, const Tensor& gy, const Tensor& gx, DrawKey key) {
    const Who w = c.who(key);
    const int64_t C = y.dim(-1), rows = y.numel() / C;
    if (log) {
      c.sum(w, p, rows * C);
      c.function(w, "exp", "exact", p.out, rows * C);
    } else {
      c.mac(w, p, Role::Grads, Role::Activations, rows * C, 0);
    }
    c.op(w, "add", p.out, rows * C);
    c.op(w, "mul", p.out, rows * C);
    c.read(w, Role::Activations, y.numel());
    c.read(w, Role::Grads, gy.numel());
    c.write(w, gx.numel());
  }

  static int64_t kept_rows(const Tensor& targets, int64_t ignore_index) {
    int64_t n = 0;
    for (float t : targets.to_vector()) n += static_cast<int64_t>(t) != ignore_index;
    return n;
  }

  // Cross-entropy: the log-softmax of every row, then per kept row the C-term
  // reduction with q (a single term without label smoothing: q_off = 0 is a
  // zero operand the policy fixes), a sum over kept rows and one quotient.
  static void count(CountingBackend& c, OpTag<Op::cross_entropy_forward>, const MacPolicy& p,
                    const Tensor& logits, const Tensor& targets, int64_t ignore_index, float, float q_off,
                    const Tensor&, const Tensor&, DrawKey key) {
    softmax(c, p, true, "exact", logits, key);
    const Who w = c.who(key);
    const int64_t C = logits.dim(-1), kept = kept_rows(targets, ignore_index);
    c.mac(w, p, Role::Activations, Role::Activations, kept * (q_off == 0.0f ? 1 : C), 0);
    c.sum(w, p, kept);
    c.op(w, "div", p.out, 1);
  }
  // Backward: w' = w / count, then per element of the kept rows exp, subtraction, product.
  static void count(CountingBackend& c, OpTag<Op::cross_entropy_backward>, const Format& g,
                    const Tensor& logp, const Tensor& targets, int64_t ignore_index, float, float,
                    const Tensor&, const Tensor& gx, DrawKey key) {
    const Who w = c.who(key);
    const int64_t C = logp.dim(-1), n = kept_rows(targets, ignore_index) * C;
    c.op(w, "div", g, 1);
    c.function(w, "exp", "exact", g, n);
    c.op(w, "add", g, n);
    c.op(w, "mul", g, n);
    c.read(w, Role::Activations, logp.numel());
    c.write(w, gx.numel());
  }

  static void count(CountingBackend& c, OpTag<Op::mse_forward>, const MacPolicy& p, const Tensor& x,
                    const Tensor& target, const Tensor& diff, const Tensor&, DrawKey key) {
    const Who w = c.who(key);
    const int64_t n = x.numel();
    c.op(w, "add", p.out, n);
    c.mac(w, p, Role::Activations, Role::Activations, n, 0);
    c.op(w, "div", p.out, 1);
    c.read(w, Role::Activations, n + target.numel());
    c.write(w, diff.numel());
  }
  static void count(CountingBackend& c, OpTag<Op::mse_backward>, const Format& g, const Tensor& diff,
                    const Tensor&, const Tensor& gx, Tensor* gtarget, DrawKey key) {
    const Who w = c.who(key);
    c.op(w, "mul", g, 1);
    c.op(w, "div", g, 1);
    c.op(w, "mul", g, diff.numel());
    c.read(w, Role::Activations, diff.numel());
    c.write(w, gx.numel() + (gtarget ? gtarget->numel() : 0));
  }

  // --- pooling ---
  static void count(CountingBackend& c, OpTag<Op::max_pool2d_forward>, const Format& out,
                    const Pool2dParams& pp, const Tensor& x, const Tensor& y, const Tensor&, DrawKey key) {
    const Who w = c.who(key);
    const int64_t NC = x.dim(0) * x.dim(1);
    const int64_t taps = taps_inside(x.dim(2), y.dim(2), pp.kernel_h, pp.stride_h, pp.pad_h, 1) *
                         taps_inside(x.dim(3), y.dim(3), pp.kernel_w, pp.stride_w, pp.pad_w, 1);
    c.op(w, "cmp", out, NC * taps - y.numel());  // a window of k inputs: k - 1 comparisons
    c.read(w, Role::Activations, x.numel());
    c.write(w, y.numel());
  }
  // Backward: each (output, input tap) pair is a term of the input's sum.
  static void count(CountingBackend& c, OpTag<Op::max_pool2d_backward>, const MacPolicy& p,
                    const Pool2dParams& pp, const Tensor& gy, const Tensor&, const Tensor& gx, DrawKey key) {
    const Who w = c.who(key);
    const int64_t NC = gx.dim(0) * gx.dim(1);
    const int64_t taps = taps_inside(gx.dim(2), gy.dim(2), pp.kernel_h, pp.stride_h, pp.pad_h, 1) *
                         taps_inside(gx.dim(3), gy.dim(3), pp.kernel_w, pp.stride_w, pp.pad_w, 1);
    c.sum(w, p, NC * taps);
    c.read(w, Role::Grads, gy.numel());
    c.write(w, gx.numel());
  }
  // Average: KH*KW terms per output (padding counted, count_include_pad), one quotient.
  static void count(CountingBackend& c, OpTag<Op::avg_pool2d_forward>, const MacPolicy& p,
                    const Pool2dParams& pp, const Tensor& x, const Tensor& y, DrawKey key) {
    const Who w = c.who(key);
    c.sum(w, p, y.numel() * pp.kernel_h * pp.kernel_w);
    c.op(w, "div", p.out, y.numel());
    c.read(w, Role::Activations, x.numel());
    c.write(w, y.numel());
  }
  static void count(CountingBackend& c, OpTag<Op::avg_pool2d_backward>, const MacPolicy& p,
                    const Pool2dParams& pp, const Tensor& gy, const Tensor& gx, DrawKey key) {
    const Who w = c.who(key);
    const int64_t NC = gx.dim(0) * gx.dim(1);
    c.op(w, "div", p.out, gy.numel());
    c.sum(w, p,
          NC * taps_inside(gx.dim(2), gy.dim(2), pp.kernel_h, pp.stride_h, pp.pad_h, 1) *
              taps_inside(gx.dim(3), gy.dim(3), pp.kernel_w, pp.stride_w, pp.pad_w, 1));
    c.read(w, Role::Grads, gy.numel());
    c.write(w, gx.numel());
  }
  static int64_t adaptive_taps(int64_t in, int64_t out) {
    int64_t n = 0;
    for (int64_t o = 0; o < out; ++o) n += (((o + 1) * in + out - 1) / out) - (o * in / out);
    return n;
  }
  static void count(CountingBackend& c, OpTag<Op::adaptive_avg_pool2d_forward>, const MacPolicy& p,
                    const Tensor& x, const Tensor& y, DrawKey key) {
    const Who w = c.who(key);
    c.sum(w, p, x.dim(0) * x.dim(1) * adaptive_taps(x.dim(2), y.dim(2)) * adaptive_taps(x.dim(3), y.dim(3)));
    c.op(w, "div", p.out, y.numel());
    c.read(w, Role::Activations, x.numel());
    c.write(w, y.numel());
  }
  static void count(CountingBackend& c, OpTag<Op::adaptive_avg_pool2d_backward>, const MacPolicy& p,
                    const Tensor& gy, const Tensor& gx, DrawKey key) {
    const Who w = c.who(key);
    c.op(w, "div", p.out, gy.numel());
    c.sum(w, p,
          gx.dim(0) * gx.dim(1) * adaptive_taps(gx.dim(2), gy.dim(2)) * adaptive_taps(gx.dim(3), gy.dim(3)));
    c.read(w, Role::Grads, gy.numel());
    c.write(w, gx.numel());
  }

  // --- batch normalisation (core/backend_ops_nn.h), per channel of M = N*S elements ---
  static void count(CountingBackend& c, OpTag<Op::batch_norm_stats>, const MacPolicy& p, const Tensor& x,
                    const Tensor& mean, const Tensor&, const Tensor&, DrawKey key) {
    const Who w = c.who(key);
    const int64_t C = mean.numel(), n = x.numel();
    c.sum(w, p, n);                                           // sum1
    c.op(w, "add", p.out, n);                                 // d = x - mean
    c.mac(w, p, Role::Activations, Role::Activations, n, 0);  // sum2 of d*d
    c.op(w, "div", p.out, 3 * C);                             // mean, var, var_unbiased
    c.read(w, Role::Activations, n);
    c.write(w, 3 * C);
  }
  static void count(CountingBackend& c, OpTag<Op::batch_norm_normalize>, const Format& out, float,
                    const Tensor& x, const Tensor& mean, const Tensor&, const Tensor* gamma,
                    const Tensor* beta, const Tensor& y, const Tensor&, const Tensor&, DrawKey key) {
    const Who w = c.who(key);
    const int64_t C = mean.numel(), n = x.numel();
    c.op(w, "add", out, C);
    c.function(w, "rsqrt", "exact", out, C);
    c.op(w, "add", out, n * (1 + (beta ? 1 : 0)));
    c.op(w, "mul", out, n * (1 + (gamma ? 1 : 0)));
    c.read(w, Role::Activations, n);
    c.read(w, Role::Weights, 2 * C + (gamma ? C : 0) + (beta ? C : 0));
    c.write(w, 2 * y.numel());  // y and xhat
  }
  static void count(CountingBackend& c, OpTag<Op::batch_norm_update_running>, const Format& out, float,
                    const Tensor& mean, const Tensor&, const Tensor&, const Tensor&, DrawKey key) {
    const Who w = c.who(key);
    c.op(w, "mul", out, 4 * mean.numel());
    c.op(w, "add", out, 2 * mean.numel());
  }
  static void count(CountingBackend& c, OpTag<Op::batch_norm_backward>, const MacPolicy& p, bool batch_stats,
                    const Tensor& gy, const Tensor&, const Tensor& invstd, const Tensor*, Tensor* gx, Tensor*,
                    Tensor*, DrawKey key) {
    const Who w = c.who(key);
    const int64_t C = invstd.numel(), n = gy.numel();
    c.sum(w, p, n);                                     // sg
    c.mac(w, p, Role::Grads, Role::Activations, n, 0);  // sgx
    c.op(w, "mul", p.out, C);                           // k
    if (gx) {
      if (batch_stats) {
        c.op(w, "div", p.out, 2 * C);
        c.op(w, "add", p.out, 2 * n);
        c.op(w, "mul", p.out, 2 * n);
      } else {
        c.op(w, "mul", p.out, n);
      }
    }
    c.read(w, Role::Grads, n);
    c.read(w, Role::Activations, n);
    if (gx) c.write(w, gx->numel());
  }

  // --- layer norm (core/backend_ops_attention.h), rows of D ---
  static void count(CountingBackend& c, OpTag<Op::layer_norm_forward>, const MacPolicy& p, float,
                    const Tensor& x, const Tensor* gamma, const Tensor* beta, const Tensor& y, const Tensor&,
                    const Tensor&, DrawKey key) {
    const Who w = c.who(key);
    const int64_t n = x.numel(), rows = n / x.dim(-1);
    c.sum(w, p, n);                                           // sum1
    c.op(w, "div", p.out, 2 * rows);                          // mean, var
    c.op(w, "add", p.out, n + rows + (beta ? n : 0));         // d = x - mean, var + eps, + beta
    c.mac(w, p, Role::Activations, Role::Activations, n, 0);  // sum2 of d*d
    c.function(w, "rsqrt", "exact", p.out, rows);
    c.op(w, "mul", p.out, n * (gamma ? 2 : 1));  // xhat, * gamma
    c.read(w, Role::Activations, n);
    c.read(w, Role::Weights, (gamma ? gamma->numel() : 0) + (beta ? beta->numel() : 0));
    c.write(w, 2 * y.numel());  // y and xhat
  }
  static void count(CountingBackend& c, OpTag<Op::layer_norm_backward>, const MacPolicy& p, const Tensor& gy,
                    const Tensor&, const Tensor&, const Tensor* gamma, Tensor* gx, Tensor* ggamma,
                    Tensor* gbeta, DrawKey key) {
    const Who w = c.who(key);
    const int64_t n = gy.numel(), D = gy.dim(-1), rows = n / D;
    if (gamma) c.op(w, "mul", p.out, n);  // gh
    if (gx) {
      c.sum(w, p, n);                                     // sg
      c.mac(w, p, Role::Grads, Role::Activations, n, 0);  // sgx
      c.op(w, "div", p.out, 2 * rows);
      c.op(w, "add", p.out, 2 * n);
      c.op(w, "mul", p.out, 2 * n);
      c.write(w, gx->numel());
    }
    if (ggamma) c.mac(w, p, Role::Grads, Role::Activations, n, 0), c.write(w, ggamma->numel());
    if (gbeta) c.sum(w, p, n), c.write(w, gbeta->numel());
    c.read(w, Role::Grads, n);
    c.read(w, Role::Activations, n);
  }

  // --- attention softmax: only unmasked positions take part (a masked one is a fixed zero) ---
  static void attention_rows(const Tensor& s, const Tensor* key_padding, bool causal, int64_t* unmasked,
                             int64_t* nonempty_rows) {
    const int64_t N = s.dim(0), H = s.dim(1), T = s.dim(2), S = s.dim(3);
    std::vector<float> pad = key_padding ? key_padding->to_vector() : std::vector<float>();
    *unmasked = 0, *nonempty_rows = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t t = 0; t < T; ++t) {
        int64_t k = 0;
        for (int64_t j = 0; j < S; ++j)
          k += !((causal && j > t) || (key_padding && pad[static_cast<size_t>(n * S + j)] != 0.0f));
        *unmasked += H * k;
        *nonempty_rows += k > 0 ? H : 0;
      }
  }
  static void attention_softmax(CountingBackend& c, const MacPolicy& p, const std::string& exp_mode,
                                bool causal, const Tensor& s, const Tensor* key_padding, DrawKey key) {
    const Who w = c.who(key);
    int64_t u = 0, rows = 0;
    attention_rows(s, key_padding, causal, &u, &rows);
    c.op(w, "mul", p.out, u);         // z = s * scale
    c.op(w, "cmp", p.out, u - rows);  // the max of each row
    c.op(w, "add", p.out, u);         // z - m
    c.function(w, "exp", exp_mode, p.out, u);
    c.sum(w, p, u);
    c.op(w, "div", p.out, u);
    c.read(w, Role::Activations, s.numel());
    c.write(w, s.numel());
  }
  static void count(CountingBackend& c, OpTag<Op::attention_softmax_forward>, const MacPolicy& p, float,
                    bool causal, const Tensor& s, const Tensor* key_padding, const Tensor&, DrawKey key) {
    attention_softmax(c, p, "exact", causal, s, key_padding, key);
  }
  static void count(CountingBackend& c, OpTag<Op::attention_softmax_forward_fn>, const MacPolicy& p,
                    const FunctionApprox& exp, float, bool causal, const Tensor& s, const Tensor* key_padding,
                    const Tensor&, DrawKey key) {
    attention_softmax(c, p, fn_mode(exp), causal, s, key_padding, key);
  }
  static void count(CountingBackend& c, OpTag<Op::attention_softmax_backward>, const MacPolicy& p, float,
                    bool causal, const Tensor& probs, const Tensor& gprobs, const Tensor* key_padding,
                    const Tensor& gs, DrawKey key) {
    const Who w = c.who(key);
    int64_t u = 0, rows = 0;
    attention_rows(probs, key_padding, causal, &u, &rows);
    c.mac(w, p, Role::Grads, Role::Activations, u, 0);  // dot
    c.op(w, "add", p.out, u);
    c.op(w, "mul", p.out, 2 * u);
    c.read(w, Role::Activations, probs.numel());
    c.read(w, Role::Grads, gprobs.numel());
    c.write(w, gs.numel());
  }

  // --- sequence ops ---
  static void count(CountingBackend& c, OpTag<Op::index_gather>, const Format&, const Tensor&,
                    const Tensor& x, const Tensor& y, DrawKey key) {
    const Who w = c.who(key);  // a lookup: no arithmetic
    c.read(w, x.numel() == y.numel() ? Role::Activations : Role::Weights, y.numel());
    c.write(w, y.numel());
    (void)x;
  }
  // One term per occurrence of a selected index that is not `skip`.
  static void count(CountingBackend& c, OpTag<Op::index_sum>, const MacPolicy& p, const Tensor& index,
                    int64_t skip, const Tensor& src, const Tensor& dst, DrawKey key) {
    const Who w = c.who(key);
    int64_t used = 0;
    for (float v : index.to_vector()) used += static_cast<int64_t>(v) != skip;
    const int64_t per_position = src.numel() / index.numel();  // A * B
    c.sum(w, p, used * per_position);
    c.read(w, Role::Grads, src.numel());
    c.write(w, dst.numel());
  }
  // Valid steps of each sequence: the mask (N,L), else L each.
  static int64_t valid_steps(const Tensor* mask, int64_t N, int64_t L) {
    if (!mask) return N * L;
    int64_t v = 0;
    for (float m : mask->to_vector()) v += m != 0.0f;
    return v;
  }
  static void count(CountingBackend& c, OpTag<Op::temporal_avg_pool_forward>, const MacPolicy& p,
                    int time_dim, const Tensor& x, const Tensor* mask, const Tensor& y, DrawKey key) {
    const Who w = c.who(key);
    const int64_t C = y.dim(1);
    c.sum(w, p, C * valid_steps(mask, x.dim(0), x.dim(time_dim)));
    c.op(w, "div", p.out, y.numel());
    c.read(w, Role::Activations, x.numel());
    c.write(w, y.numel());
  }
  static void count(CountingBackend& c, OpTag<Op::temporal_avg_pool_backward>, const MacPolicy& p,
                    int time_dim, const Tensor& gy, const Tensor* mask, const Tensor& gx, DrawKey key) {
    const Who w = c.who(key);
    c.op(w, "div", p.out, gy.numel());
    c.sum(w, p, gy.dim(1) * valid_steps(mask, gx.dim(0), gx.dim(time_dim)));  // one-term sums
    c.read(w, Role::Grads, gy.numel());
    c.write(w, gx.numel());
  }
  static void count(CountingBackend& c, OpTag<Op::temporal_max_pool_forward>, const Format& out, int time_dim,
                    const Tensor& x, const Tensor* mask, const Tensor& y, const Tensor&, DrawKey key) {
    const Who w = c.who(key);
    c.op(w, "cmp", out, y.dim(1) * valid_steps(mask, x.dim(0), x.dim(time_dim)) - y.numel());
    c.read(w, Role::Activations, x.numel());
    c.write(w, y.numel());
  }
  static void count(CountingBackend& c, OpTag<Op::temporal_max_pool_backward>, const MacPolicy& p, int,
                    const Tensor& gy, const Tensor&, const Tensor& gx, DrawKey key) {
    const Who w = c.who(key);
    c.sum(w, p, gx.numel());  // one term (or a zero) per element
    c.read(w, Role::Grads, gy.numel());
    c.write(w, gx.numel());
  }

  // --- recurrent layers (docs/layers_recurrent.md): only valid steps (n, t) compute ---
  // Forward per valid step: G*H reductions over I + H terms (the GRU's n gate: I
  // and H terms in two reductions, the same total), the biases, the cell.
  static void recurrent_forward(CountingBackend& c, const MacPolicy& p, const GateFunctions& fns, bool lstm,
                                const Tensor& x, const Tensor& w_ih, const Tensor& w_hh, const Tensor* bias,
                                const Tensor* mask, const Tensor& y, DrawKey key) {
    const Who w = c.who(key);
    const int64_t N = x.dim(0), T = x.dim(1), I = x.dim(2), H = w_hh.dim(1), G = lstm ? 4 : 3;
    const int64_t V = valid_steps(mask, N, T);
    c.mac(w, p, Role::Activations, Role::Weights, V * G * H * (I + H), 0);
    if (bias) c.sum(w, p, V * (lstm ? 4 : 4) * H);  // GRU: b_r, b_z, b_in, b_hn
    const std::string sig = fn_mode(fns.sigmoid), th = fn_mode(fns.tanh);
    c.function(w, "sigmoid", sig, p.out, V * H * (lstm ? 3 : 2));
    c.function(w, "tanh", th, p.out, V * H * (lstm ? 2 : 1));
    c.op(w, "mul", p.out, V * H * (lstm ? 3 : 2));        // LSTM f*c, i*g, o*tanh(c); GRU r*a_nh, z*(h-n)
    c.op(w, "add", p.out, V * H * (lstm ? 1 : 3));        // LSTM c sum; GRU a_nx +, h - n, n +
    c.read(w, Role::Activations, x.numel() + N * T * H);  // x and the read state rows
    c.read(w, Role::Weights, w_ih.numel() + w_hh.numel() + (bias ? bias->numel() : 0));
    c.write(w, y.numel());
  }
  static void count(CountingBackend& c, OpTag<Op::lstm_forward>, const MacPolicy& p, const GateFunctions& fns,
                    const Format&, const Tensor& x, const Tensor&, const Tensor&, const Tensor& w_ih,
                    const Tensor& w_hh, const Tensor* bias, const Tensor* mask, bool, const Tensor& y,
                    const Tensor&, const Tensor&, const Tensor&, const Tensor&, Tensor*, Tensor*,
                    DrawKey key) {
    recurrent_forward(c, p, fns, true, x, w_ih, w_hh, bias, mask, y, key);
  }
  static void count(CountingBackend& c, OpTag<Op::gru_forward>, const MacPolicy& p, const GateFunctions& fns,
                    const Format&, const Tensor& x, const Tensor&, const Tensor& w_ih, const Tensor& w_hh,
                    const Tensor* bias, const Tensor* mask, bool, const Tensor& y, const Tensor&,
                    const Tensor&, const Tensor&, Tensor*, Tensor*, DrawKey key) {
    recurrent_forward(c, p, fns, false, x, w_ih, w_hh, bias, mask, y, key);
  }
  // Backward per valid step: the cell's gate gradients (LSTM 7 additions and 16
  // products per unit, GRU 5 and 10), dh_{t-1} over G*H gate units (GRU + dd);
  // then over the valid rows: dx (G*H terms), dw_ih and dw_hh (one term per row), dbias (sums).
  static void recurrent_backward(CountingBackend& c, const MacPolicy& p, bool lstm, const Tensor& w_ih,
                                 const Tensor& w_hh, const Tensor& xh, const Tensor* mask, Tensor* dx,
                                 Tensor* dw_ih, Tensor* dw_hh, Tensor* dbias, DrawKey key) {
    const Who w = c.who(key);
    const int64_t N = xh.dim(0), T = xh.dim(1), H = w_hh.dim(1), I = w_ih.dim(1), G = lstm ? 4 : 3;
    const int64_t V = valid_steps(mask, N, T);
    c.op(w, "add", p.out, V * H * (lstm ? 7 : 5));
    c.op(w, "mul", p.out, V * H * (lstm ? 16 : 10));
    c.mac(w, p, Role::Grads, Role::Weights, V * H * G * H, 0);
    if (!lstm) c.op(w, "add", p.out, V * H);  // + dd
    if (dx) c.mac(w, p, Role::Grads, Role::Weights, V * I * G * H, 0), c.write(w, dx->numel());
    if (dw_ih) c.mac(w, p, Role::Grads, Role::Activations, V * G * H * I, 0), c.write(w, dw_ih->numel());
    if (dw_hh) c.mac(w, p, Role::Grads, Role::Activations, V * G * H * H, 0), c.write(w, dw_hh->numel());
    if (dbias) c.sum(w, p, V * dbias->numel()), c.write(w, dbias->numel());
    c.read(w, Role::Grads, N * T * (H + G * H));
    c.read(w, Role::Activations, xh.numel());
    c.read(w, Role::Weights, w_ih.numel() + w_hh.numel());
  }
  static void count(CountingBackend& c, OpTag<Op::lstm_backward>, const MacPolicy& p, const GateFunctions&,
                    const Tensor& w_ih, const Tensor& w_hh, const Tensor& xh, const Tensor&, const Tensor*,
                    const Tensor*, const Tensor*, const Tensor*, const Tensor* mask, bool, Tensor* dx,
                    Tensor* dw_ih, Tensor* dw_hh, Tensor* dbias, const Tensor&, const Tensor&, DrawKey key) {
    recurrent_backward(c, p, true, w_ih, w_hh, xh, mask, dx, dw_ih, dw_hh, dbias, key);
  }
  static void count(CountingBackend& c, OpTag<Op::gru_backward>, const MacPolicy& p, const GateFunctions&,
                    const Tensor& w_ih, const Tensor& w_hh, const Tensor& xh, const Tensor&, const Tensor*,
                    const Tensor*, const Tensor*, const Tensor* mask, bool, Tensor* dx, Tensor* dw_ih,
                    Tensor* dw_hh, Tensor* dbias, const Tensor&, DrawKey key) {
    recurrent_backward(c, p, false, w_ih, w_hh, xh, mask, dx, dw_ih, dw_hh, dbias, key);
  }

  // --- optimizer updates: numerics/update_arith.h step by step, in the update format ---
  static void count(CountingBackend& c, OpTag<Op::sgd_update>, const SgdUpdate& o, const Tensor& param,
                    const Tensor& grad, const Tensor& buf) {
    const Who w = c.who_param(param);
    const Format& f = o.update_format;
    const int64_t n = param.numel();
    int64_t muls = 1, adds = 1;  // p - lr*d
    if (o.weight_decay != 0) muls += 1, adds += 1;
    const bool momentum = buf.defined() && buf.numel() == n && o.momentum != 0;
    if (momentum && !o.first_step) muls += 2, adds += 1;
    if (momentum && o.nesterov) muls += 1, adds += 1;
    c.op(w, "mul", f, muls * n);
    c.op(w, "add", f, adds * n);
    const int64_t state = momentum ? n : 0;
    c.read_as(w, "weights", Format{}, n);
    c.read_as(w, "grads", Format{}, grad.numel());
    c.read_as(w, "state", f, state);
    c.write_as(w, "weights", Format{}, n);
    c.write_as(w, "state", f, state);
  }
  static void count(CountingBackend& c, OpTag<Op::adam_update>, const AdamUpdate& o, const Tensor& param,
                    const Tensor& grad, const Tensor&, const Tensor&) {
    const Who w = c.who_param(param);
    const Format& f = o.update_format;
    const int64_t n = param.numel();
    int64_t muls = 6,
            adds = 4;  // m: 2 mul 1 add; v: 3 mul 1 add; p - (lr*mhat)/(sqrt(vhat)+eps): 1 mul 2 add
    if (o.weight_decay != 0) muls += 1, adds += 1;
    c.op(w, "mul", f, muls * n);
    c.op(w, "add", f, adds * n);
    c.op(w, "div", f, 3 * n);  // mhat, vhat, the step
    c.op(w, "sqrt", f, n);
    c.read_as(w, "weights", Format{}, n);
    c.read_as(w, "grads", Format{}, grad.numel());
    c.read_as(w, "state", f, 2 * n);
    c.write_as(w, "weights", Format{}, n);
    c.write_as(w, "state", f, 2 * n);
  }
  // Gradient clipping's rescale.
  static void count(CountingBackend& c, OpTag<Op::scale>, const Format& f, const Tensor& x, float) {
    c.op(Who{nullptr, "(clip)", DrawSite::Update, 0}, "mul", f, x.numel());
  }
};

#define EMU_COST_DEFINE_OP(name, params, args)                      \
  void CountingBackend::name params {                               \
    inner_.name args;                                               \
    CostOps::count(*this, OpTag<Op::name>{}, EMU_COST_UNPACK args); \
  }
#define EMU_COST_UNPACK(...) __VA_ARGS__
EMU_BACKEND_OPS(EMU_COST_DEFINE_OP)
#undef EMU_COST_DEFINE_OP

}  // namespace emu::train
