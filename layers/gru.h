// GRU (PyTorch's nn.GRU with batch_first=True): multi-layer, optionally
// bidirectional, dropout between layers, optional initial state, variable
// sequence lengths.
//   x: (N, T, I) -> output: (N, T, D*H), h_n: (L*D, N, H)
// Per layer l and direction d: weight_ih_l<l>[_reverse] (3H, I_l), weight_hh (3H, H),
// gates in the order r, z, n, and bias (4H) = [b_r, b_z, b_in, b_hn] (PyTorch:
// b_r = b_ir + b_hr, b_z = b_iz + b_hz; b_in, b_hn as they are).
//   r = sigmoid(x W_ir + h W_hr + b_r), z likewise, n = tanh(x W_in + b_in + r (h W_hn + b_hn)),
//   h' = n + z (h - n)  (= (1 - z) n + z h)
// r and z reduce over the input features, then the hidden features, then add
// the bias; the two parts of n are separate reductions (docs/layers_recurrent.md).
#pragma once

#include <vector>

#include "layers/recurrent_common.h"

namespace emu {

class GRU : public Module {
 public:
  explicit GRU(RecurrentOptions options);
  GRU(int64_t input_size, int64_t hidden_size, int num_layers = 1, bool bias = true,
      bool bidirectional = false, float dropout = 0.0f);

  // h0: (L*D, N, H) or undefined (zeros); lengths_or_mask as for the LSTM.
  // Returns output and h_n (c_n undefined).
  RecurrentOutput forward(const Tensor& x, const Tensor& h0 = Tensor(),
                          const Tensor& lengths_or_mask = Tensor());
  // PyTorch's default: every parameter uniform(+-1/sqrt(H)).
  void reset_parameters() override;
  std::string type_name() const override { return "GRU"; }

  Tensor& weight_ih(int layer, int dir) { return weights_.ih[slot(layer, dir)]; }
  Tensor& weight_hh(int layer, int dir) { return weights_.hh[slot(layer, dir)]; }
  Tensor& bias(int layer, int dir) { return weights_.bias[slot(layer, dir)]; }  // undefined without bias

  RecurrentOptions options;
  // Inspection: when set, forward() keeps [a_r, a_z, a_nx, a_nh] (N, T, 4H) of
  // layer l, direction d in preactivations[l*D + d].
  bool keep_preactivations = false;
  std::vector<Tensor> preactivations;

 private:
  size_t slot(int layer, int dir) const {
    return static_cast<size_t>(layer * (options.bidirectional ? 2 : 1) + dir);
  }
  RecurrentWeights weights_;
};

// One layer in one direction, with autograd: x (N,T,I), h0 (N,H), w_ih (3H,I),
// w_hh (3H,H), bias (4H) or undefined, mask (N,T) or undefined -> {y (N,T,H), h_n (N,H)}.
RecurrentOutput gru_layer(const Module& m, int layer, int dir, const Tensor& x, const Tensor& h0,
                          const Tensor& w_ih, const Tensor& w_hh, const Tensor& bias, const Tensor& mask,
                          Tensor* preact = nullptr);

}  // namespace emu
