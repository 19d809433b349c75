#include "layers/recurrent_common.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "core/autograd.h"
#include "layers/dropout.h"
#include "layers/init.h"
#include "layers/layer_io.h"
#include "layers/shape_ops.h"
#include "numerics/philox.h"
#include "numerics/recurrent_cells.h"

namespace emu {
namespace {

// The identity format: a copy that rounds nothing (fp32 is binary32 itself).
void copy_into(const Tensor& src, Tensor& dst) {
  backend_for(src.device()).quantize(Format{}, src, dst, DrawKey{});
}

}  // namespace

Tensor sequence_mask(const Tensor& lengths_or_mask, int64_t N, int64_t T) {
  if (!lengths_or_mask.defined()) return Tensor();
  const Tensor& s = lengths_or_mask;
  if (s.ndim() == 2) {
    if (s.dim(0) != N || s.dim(1) != T)
      throw std::invalid_argument(fmt::format("sequence mask of shape {} for {} sequences of {} steps",
                                              shape_string(s.shape()), N, T));
    return contiguous_copy(s);
  }
  if (s.ndim() != 1 || s.dim(0) != N)
    throw std::invalid_argument(
        fmt::format("sequence lengths of shape {}: want ({}) lengths or a ({}, {}) mask",
                    shape_string(s.shape()), N, N, T));
  // Lengths are checked and expanded on the host; the mask goes to the lengths' device.
  std::vector<float> lengths = s.to_vector(), mask(static_cast<size_t>(N * T), 0.0f);
  for (int64_t n = 0; n < N; ++n) {
    const float len = lengths[static_cast<size_t>(n)];
    if (!(len >= 0.0f && len <= static_cast<float>(T)) || std::floor(len) != len)
      throw std::invalid_argument(
          fmt::format("sequence length {} of sequence {} is not an integer in [0, {}]", len, n, T));
    for (int64_t t = 0; t < static_cast<int64_t>(len); ++t) mask[static_cast<size_t>(n * T + t)] = 1.0f;
  }
  return Tensor::from_vector({N, T}, mask, s.device());
}

DrawKey recurrent_key(const Module& m, DrawSite site, int layer, int dir) {
  const DrawKey base = draw_key(m, site);
  const uint64_t which = static_cast<uint64_t>(layer) * 4 + static_cast<uint64_t>(dir) + 1;
  return DrawKey{base.seed, mix64(base.stream ^ mix64(0x243f6a8885a308d3ull * which))};
}

Tensor packed_slice(const Tensor& packed, int64_t offset, const Shape& shape) {
  const int64_t count = shape_numel(shape);
  Tensor result = packed.narrow(0, offset, count).view(shape);
  const Shape packed_shape = packed.shape();
  record_lambda(result, "packed_slice", {packed},
                [packed_shape, offset, count](const Tensor& g) -> std::vector<Tensor> {
                  Tensor full = Tensor::zeros(packed_shape, g.device());
                  Tensor slot = full.narrow(0, offset, count);
                  copy_into(contiguous_copy(g).view({count}), slot);
                  return {full};
                });
  return result;
}

Tensor recurrent_dropout(const Module& m, const Tensor& x, float p, int layer) {
  if (!m.is_training() || !(p > 0.0f)) return x;
  const LayerNumerics& n = m.numerics();
  const LayerNumerics cn = compute_numerics(n);
  Backend& be = backend_for(x.device());
  // Direction slot 2: the layer's two directions use slots 0 and 1.
  const DrawKey mask_key = recurrent_key(m, DrawSite::Dropout, layer, 2);
  const DrawKey fwd_key = recurrent_key(m, DrawSite::Forward, layer, 2);
  // The scale's own rounding draws at index 0 of the stream after site 0, as Dropout does.
  auto scale_for = [p](const Format& f, DrawKey key) {
    return dropout_scale(f, p, is_stochastic(f) ? philox_draw(key.seed, key.stream + 1, 0) : 0u);
  };
  Tensor xr = read_as(cn.activations, contiguous_copy(x), recurrent_key(m, DrawSite::ReadInput, layer, 2));
  Tensor y = Tensor::zeros(x.shape(), x.device());
  be.dropout(p, scale_for(cn.out(), fwd_key), cn.out(), xr, y, mask_key, fwd_key);
  finish_output(n, y, fwd_key);
  Tensor result = y.view(x.shape());
  const Module* mp = &m;
  const Shape shape = x.shape();
  record_lambda(result, "recurrent_dropout", {x}, [=](const Tensor& gy) -> std::vector<Tensor> {
    const LayerNumerics& n = mp->numerics();
    const LayerNumerics cn = compute_numerics(n);
    Backend& be = backend_for(gy.device());
    const DrawKey key = recurrent_key(*mp, DrawSite::GradInput, layer, 2);
    Tensor g = read_as(cn.grads, contiguous_copy(gy), recurrent_key(*mp, DrawSite::ReadGrad, layer, 2));
    Tensor gx = Tensor::zeros(shape, gy.device());
    be.dropout(p, scale_for(cn.grads, key), cn.grads, g, gx, mask_key, key);
    finish_grad(n, gx, key);
    return {gx};
  });
  return result;
}

std::string recurrent_param_name(const char* base, int layer, int dir) {
  return fmt::format("{}_l{}{}", base, layer, dir == 1 ? "_reverse" : "");
}

void check_recurrent_options(const char* type, const RecurrentOptions& o) {
  if (o.input_size <= 0 || o.hidden_size <= 0 || o.num_layers <= 0)
    throw std::invalid_argument(
        fmt::format("{}: input_size {}, hidden_size {} and num_layers {} must be positive", type,
                    o.input_size, o.hidden_size, o.num_layers));
  if (!(o.dropout >= 0.0f && o.dropout <= 1.0f))
    throw std::invalid_argument(fmt::format("{}: dropout {} is not in [0, 1]", type, o.dropout));
}

RecurrentOutput run_recurrent(const Module& m, const RecurrentOptions& o, bool with_cell_state,
                              const Tensor& x, const Tensor& h0, const Tensor& c0,
                              const Tensor& lengths_or_mask, const RecurrentCell& cell) {
  if (x.ndim() != 3 || x.dim(2) != o.input_size || x.dim(1) < 1)
    throw std::invalid_argument(fmt::format("{}: input of shape {}, expected (N, T >= 1, {}) (batch first)",
                                            m.path(), shape_string(x.shape()), o.input_size));
  const int64_t N = x.dim(0), T = x.dim(1), H = o.hidden_size;
  const int D = o.bidirectional ? 2 : 1, L = o.num_layers;
  const Shape state_shape = {static_cast<int64_t>(L) * D, N, H};
  for (const Tensor* s : {&h0, &c0})
    if (s->defined() && s->shape() != state_shape)
      throw std::invalid_argument(fmt::format("{}: initial state of shape {}, expected {}", m.path(),
                                              shape_string(s->shape()), shape_string(state_shape)));
  if (c0.defined() && !with_cell_state)
    throw std::invalid_argument(fmt::format("{}: no cell state", m.path()));
  const Tensor mask = sequence_mask(lengths_or_mask, N, T);
  const int64_t state_numel = shape_numel(state_shape);
  const Tensor h0_flat = h0.defined() ? reshape(h0, {state_numel}) : Tensor();
  const Tensor c0_flat = c0.defined() ? reshape(c0, {state_numel}) : Tensor();
  auto initial = [&](const Tensor& flat, int l, int d) {
    if (!flat.defined()) return Tensor::zeros({N, H}, x.device());
    return packed_slice(flat, (static_cast<int64_t>(l) * D + d) * N * H, {N, H});
  };

  Tensor input = x;
  std::vector<Tensor> hs, cs;
  for (int l = 0; l < L; ++l) {
    std::vector<Tensor> outputs;
    for (int d = 0; d < D; ++d) {
      RecurrentOutput r = cell(l, d, input, initial(h0_flat, l, d),
                               with_cell_state ? initial(c0_flat, l, d) : Tensor(), mask);
      outputs.push_back(r.output);
      hs.push_back(reshape(r.h_n, {1, N, H}));
      if (with_cell_state) cs.push_back(reshape(r.c_n, {1, N, H}));
    }
    input = D == 1 ? outputs[0] : concat(outputs, 2);
    if (l + 1 < L) input = recurrent_dropout(m, input, o.dropout, l);
  }
  RecurrentOutput out;
  out.output = input;
  out.h_n = hs.size() == 1 ? hs[0] : concat(hs, 0);
  if (with_cell_state) out.c_n = cs.size() == 1 ? cs[0] : concat(cs, 0);
  return out;
}

}  // namespace emu

namespace emu {

RecurrentReads read_recurrent_operands(const Module& m, int layer, int dir, const Tensor& x, const Tensor& h0,
                                       const Tensor& c0, const Tensor& w_ih, const Tensor& w_hh,
                                       const Tensor& bias) {
  const LayerNumerics cn = compute_numerics(m.numerics());
  // Each read draws from its own stream: x from the ReadInput key, h0 and c0 from the next two.
  const DrawKey read_in = recurrent_key(m, DrawSite::ReadInput, layer, dir);
  const DrawKey read_w = recurrent_key(m, DrawSite::ReadWeights, layer, dir);
  RecurrentReads r;
  r.x = read_as(cn.activations, contiguous_copy(x), read_in);
  r.h0 = read_as(cn.activations, contiguous_copy(h0), DrawKey{read_in.seed, read_in.stream + 1});
  if (c0.defined())
    r.c0 = read_as(cn.activations, contiguous_copy(c0), DrawKey{read_in.seed, read_in.stream + 2});
  // (gates*H, in) and (gates*H, H): each gate row reduces over its input / hidden features.
  r.w_ih = read_weight(m, cn, contiguous_copy(w_ih), read_w, ReadLayout{w_ih.dim(0), w_ih.dim(1), 1},
                       WeightUse::Reduction, recurrent_param_name("weight_ih", layer, dir));
  r.w_hh = read_weight(m, cn, contiguous_copy(w_hh), DrawKey{read_w.seed, read_w.stream + 1},
                       ReadLayout{w_hh.dim(0), w_hh.dim(1), 1}, WeightUse::Reduction,
                       recurrent_param_name("weight_hh", layer, dir));
  if (bias.defined())
    r.bias = read_as(cn.weights, contiguous_copy(bias), recurrent_key(m, DrawSite::ReadBias, layer, dir));
  return r;
}

GateFunctions gate_functions(const LayerNumerics& n) {
  GateFunctions f;
  f.sigmoid = n.function(Function::Sigmoid);
  f.tanh = n.function(Function::Tanh);
  return f;
}

Tensor zeros_if(bool wanted, const Shape& shape, Device device) {
  return wanted ? Tensor::zeros(shape, device) : Tensor();
}

RecurrentWeights register_recurrent_weights(Module& m, const RecurrentOptions& o, int64_t gate_rows) {
  const int D = o.bidirectional ? 2 : 1;
  const int64_t H = o.hidden_size;
  RecurrentWeights w;
  for (int l = 0; l < o.num_layers; ++l)
    for (int d = 0; d < D; ++d) {
      const int64_t in = l == 0 ? o.input_size : D * H;
      w.ih.push_back(
          m.register_parameter(recurrent_param_name("weight_ih", l, d), Tensor::zeros({gate_rows, in})));
      w.hh.push_back(
          m.register_parameter(recurrent_param_name("weight_hh", l, d), Tensor::zeros({gate_rows, H})));
      w.bias.push_back(o.bias
                           ? m.register_parameter(recurrent_param_name("bias", l, d), Tensor::zeros({4 * H}))
                           : Tensor());
    }
  return w;
}

void reset_recurrent_weights(Module& m, RecurrentWeights& w, int64_t hidden_size) {
  const float bound = 1.0f / std::sqrt(static_cast<float>(hidden_size));
  for (size_t s = 0; s < w.ih.size(); ++s) {
    init_uniform(m, w.ih[s], bound, 3 * s);
    init_uniform(m, w.hh[s], bound, 3 * s + 1);
    if (w.bias[s].defined()) init_uniform(m, w.bias[s], bound, 3 * s + 2);
  }
}

}  // namespace emu
