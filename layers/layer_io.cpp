#include "layers/layer_io.h"

#include "core/sparsity.h"

namespace emu {

Tensor read_as(const Format& f, const Tensor& x, DrawKey key) {
  if (is_plain_fp32(f)) return x;
  if (is_block(f))
    return read_as(f, x, key, rows_along_last_dim(x.numel(), x.ndim() > 0 ? x.dim(x.ndim() - 1) : 1));
  Tensor y = Tensor::uninitialized(x.shape(), x.device());  // the rounding writes every element
  backend_for(x.device()).quantize(f, x, y, key);
  return y;
}

Tensor read_as(const Format& f, const Tensor& x, DrawKey key, ReadLayout layout) {
  if (!is_block(f)) return read_as(f, x, key);
  if (layout.len <= 0) layout = rows_along_last_dim(x.numel(), x.ndim() > 0 ? x.dim(x.ndim() - 1) : 1);
  Tensor y = Tensor::uninitialized(x.shape(), x.device());  // the rounding writes every element
  backend_for(x.device()).quantize_blocks(f, x, y, layout, key);
  return y;
}

LayerNumerics compute_numerics(const LayerNumerics& n) {
  if (n.emulation == Emulation::Op) return n;
  LayerNumerics plain;  // default-constructed: fp32 everywhere, products rounded to fp32
  return plain;
}

void finish_output(const LayerNumerics& n, Tensor& y, DrawKey key) {
  if (n.emulation == Emulation::Layer && !is_plain_fp32(n.out()))
    backend_for(y.device()).quantize(n.out(), y, y, key);
}

MacPolicy backward_mac(const LayerNumerics& n) {
  MacPolicy p = n.mac;
  p.out = n.grads;
  if (is_block(n.grads)) p.out = Format{};  // a block grads format is a read format; results stay fp32
  return p;
}

MacPolicy sum_mac(const LayerNumerics& n) {
  MacPolicy p = unfused(backward_mac(n));  // sums never fuse (docs/contract.md section 4.8)
  p.mul_exact = true;
  return p;
}

DrawKey draw_key(const Module& m, DrawSite site) {
  return layer_draw_key(m.context().seed, m.path(), site, m.context().step);
}

void finish_grad(const LayerNumerics& n, Tensor& g, DrawKey key) {
  if (n.emulation == Emulation::Layer && g.defined()) backend_for(g.device()).quantize(n.grads, g, g, key);
}

// --- N:M masks and tensor hooks (docs/sparsity.md, docs/faults.md) ---

namespace {

TensorHook& tensor_hook_slot() {
  static TensorHook hook;
  return hook;
}

}  // namespace

void set_tensor_hook(TensorHook hook) { tensor_hook_slot() = std::move(hook); }
bool has_tensor_hook() { return static_cast<bool>(tensor_hook_slot()); }

Tensor read_weight(const Module& m, const LayerNumerics& n, const Tensor& w, DrawKey key,
                   const ReadLayout& layout, WeightUse use, const std::string& name) {
  Tensor r = read_as(n.weights, w, key, layout);
  const SparsitySpec& s = m.numerics().sparsity;
  if (use == WeightUse::Reduction && s.on_weights()) {
    Tensor mask;
    r = nm_sparsify(s, layout, w, r, key, mask_monitor().enabled() && m.is_training() ? &mask : nullptr);
    if (mask.defined()) mask_monitor().record(m.path(), name, mask);
  }
  if (const TensorHook& hook = tensor_hook_slot())
    r = hook(m, TensorSite::Weights, name, n.weights, layout, r);
  return r;
}

Tensor read_grad(const Module& m, const LayerNumerics& n, const Tensor& g, DrawKey key,
                 const ReadLayout& layout) {
  // `layout` (the rows of the grad-input reduction) places a block grads format's blocks
  // and the N:M groups alike (docs/block_formats.md, docs/sparsity.md).
  Tensor r = read_as(n.grads, g, key, layout);
  const SparsitySpec& s = m.numerics().sparsity;
  if (s.on_grads()) {
    // Scored on the gradient itself: it has no other dense copy.
    Tensor mask;
    r = nm_sparsify(s, layout, g, r, key, mask_monitor().enabled() ? &mask : nullptr);
    if (mask.defined()) mask_monitor().record(m.path(), "grad", mask);
  }
  if (const TensorHook& hook = tensor_hook_slot())
    r = hook(m, TensorSite::Gradients, "grad", n.grads, layout, r);
  return r;
}

void hook_output(const Module& m, const LayerNumerics& n, Tensor& y) {
  if (const TensorHook& hook = tensor_hook_slot()) {
    Tensor h = hook(m, TensorSite::Activations, "output", n.out(), ReadLayout{}, y);
    // A hook that hands back y itself (or the same view of its storage) wrote nothing new.
    const bool same_view = h.impl()->storage == y.impl()->storage && h.offset() == y.offset() &&
                           h.shape() == y.shape() && h.strides() == y.strides();
    if (!same_view) y.copy_from(h);
  }
}

}  // namespace emu
