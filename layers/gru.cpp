#include "layers/gru.h"

#include <cmath>

#include "core/autograd.h"
#include "layers/init.h"
#include "layers/layer_io.h"
#include "layers/shape_ops.h"
#include "numerics/recurrent_cells.h"

namespace emu {

GRU::GRU(RecurrentOptions o) : options(o) {
  check_recurrent_options("GRU", o);
  weights_ = register_recurrent_weights(*this, o, 3 * o.hidden_size);
}

GRU::GRU(int64_t input_size, int64_t hidden_size, int num_layers, bool bias, bool bidirectional,
         float dropout)
    : GRU(RecurrentOptions{input_size, hidden_size, num_layers, bias, bidirectional, dropout}) {}

void GRU::reset_parameters() { reset_recurrent_weights(*this, weights_, options.hidden_size); }

RecurrentOutput GRU::forward(const Tensor& x, const Tensor& h0, const Tensor& lengths_or_mask) {
  const int D = options.bidirectional ? 2 : 1;
  preactivations.assign(keep_preactivations ? static_cast<size_t>(options.num_layers * D) : 0, Tensor());
  return run_recurrent(
      *this, options, false, x, h0, Tensor(), lengths_or_mask,
      [&](int l, int d, const Tensor& in, const Tensor& h, const Tensor&, const Tensor& mask) {
        Tensor* preact = nullptr;
        if (keep_preactivations) {
          Tensor& p = preactivations[slot(l, d)];
          p = Tensor::zeros({in.dim(0), in.dim(1), 4 * options.hidden_size}, in.device());
          preact = &p;
        }
        return gru_layer(*this, l, d, in, h, weight_ih(l, d), weight_hh(l, d), bias(l, d), mask, preact);
      });
}

RecurrentOutput gru_layer(const Module& m, int layer, int dir, const Tensor& x, const Tensor& h0,
                          const Tensor& w_ih, const Tensor& w_hh, const Tensor& bias, const Tensor& mask,
                          Tensor* preact) {
  const int64_t N = x.dim(0), T = x.dim(1), I = x.dim(2), H = w_hh.dim(1), G = 4 * H;
  const LayerNumerics& n = m.numerics();
  const LayerNumerics cn = compute_numerics(n);
  Backend& be = backend_for(x.device());
  const RecurrentReads r = read_recurrent_operands(m, layer, dir, x, h0, Tensor(), w_ih, w_hh, bias);

  // packed = [y (N*T*H), h_n (N*H)]: one recorded result, sliced below.
  const int64_t ny = N * T * H, nh = N * H;
  Tensor packed = Tensor::zeros({ny + nh}, x.device());
  Tensor y = packed.narrow(0, 0, ny).view({N, T, H});
  Tensor h_n = packed.narrow(0, ny, nh).view({N, H});
  Tensor xh = Tensor::zeros({N, T, I + H}, x.device());
  Tensor saved = Tensor::zeros({N, T, 5 * H}, x.device());
  const GateFunctions fns = gate_functions(n);
  Tensor slopes = zeros_if(fns.any_pwl(), {N, T, 3 * H}, x.device());  // pwl gates' slopes for the backward
  const DrawKey fwd = recurrent_key(m, DrawSite::Forward, layer, dir);
  be.gru_forward(cn.mac, fns, cn.activations, r.x, r.h0, r.w_ih, r.w_hh, r.bias.defined() ? &r.bias : nullptr,
                 mask.defined() ? &mask : nullptr, dir == 1, y, h_n, xh, saved,
                 slopes.defined() ? &slopes : nullptr, preact, fwd);
  finish_output(n, packed, fwd);

  const Module* mp = &m;
  record_lambda(packed, "gru", {x, h0, w_ih, w_hh, bias}, [=](const Tensor& gp) -> std::vector<Tensor> {
    const LayerNumerics& n = mp->numerics();
    const LayerNumerics cn = compute_numerics(n);
    Backend& be = backend_for(gp.device());
    Tensor g = read_as(cn.grads, contiguous_copy(gp), recurrent_key(*mp, DrawSite::ReadGrad, layer, dir));
    const Tensor gy = g.narrow(0, 0, ny).view({N, T, H});
    const Tensor gh = g.narrow(0, ny, nh).view({N, H});
    const Device dev = gp.device();
    Tensor dx = zeros_if(x.requires_grad(), {N, T, I}, dev);
    Tensor dw_ih = zeros_if(w_ih.requires_grad(), {3 * H, I}, dev);
    Tensor dw_hh = zeros_if(w_hh.requires_grad(), {3 * H, H}, dev);
    Tensor dbias = zeros_if(bias.defined() && bias.requires_grad(), {G}, dev);
    Tensor dh0 = Tensor::zeros({N, H}, dev);
    const DrawKey key = recurrent_key(*mp, DrawSite::GradInput, layer, dir);
    auto opt = [](Tensor& t) { return t.defined() ? &t : nullptr; };
    be.gru_backward(backward_mac(cn), fns, r.w_ih, r.w_hh, xh, saved, slopes.defined() ? &slopes : nullptr,
                    &gy, &gh, mask.defined() ? &mask : nullptr, dir == 1, opt(dx), opt(dw_ih), opt(dw_hh),
                    opt(dbias), dh0, key);
    for (Tensor* t : {&dx, &dw_ih, &dw_hh, &dbias, &dh0}) finish_grad(n, *t, key);
    return {dx, dh0, dw_ih, dw_hh, dbias};
  });
  RecurrentOutput result;
  result.output = packed_slice(packed, 0, {N, T, H});
  result.h_n = packed_slice(packed, ny, {N, H});
  return result;
}

}  // namespace emu
