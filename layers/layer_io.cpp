#include "layers/layer_io.h"

namespace emu {

Tensor read_as(const Format& f, const Tensor& x, DrawKey key) {
  if (is_plain_fp32(f)) return x;
  Tensor y = Tensor::zeros(x.shape(), x.device());
  backend_for(x.device()).quantize(f, x, y, key);
  return y;
}

LayerNumerics compute_numerics(const LayerNumerics& n) {
  if (n.emulation == Emulation::Op) return n;
  LayerNumerics plain;  // default-constructed: fp32 everywhere, products rounded to fp32
  return plain;
}

void finish_output(const LayerNumerics& n, Tensor& y, DrawKey key) {
  if (n.emulation == Emulation::Layer && !is_plain_fp32(n.out())) backend_for(y.device()).quantize(n.out(), y, y, key);
}

MacPolicy backward_mac(const LayerNumerics& n) {
  MacPolicy p = n.mac;
  p.out = n.grads;
  return p;
}

MacPolicy sum_mac(const LayerNumerics& n) {
  MacPolicy p = backward_mac(n);
  p.mul_exact = true;
  return p;
}

DrawKey draw_key(const Module& m, DrawSite site) {
  return layer_draw_key(m.context().seed, m.path(), site, m.context().step);
}

void finish_grad(const LayerNumerics& n, Tensor& g, DrawKey key) {
  if (n.emulation == Emulation::Layer && g.defined()) backend_for(g.device()).quantize(n.grads, g, g, key);
}

}  // namespace emu
