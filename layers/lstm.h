// LSTM (PyTorch's nn.LSTM with batch_first=True): multi-layer, optionally
// bidirectional, dropout between layers, optional initial states, variable
// sequence lengths.
//   x: (N, T, I) -> output: (N, T, D*H), h_n, c_n: (L*D, N, H)
// Per layer l and direction d: weight_ih_l<l>[_reverse] (4H, I_l), weight_hh (4H, H),
// bias (4H) (one bias per gate, PyTorch's b_ih + b_hh), gates in the order i, f, g, o.
// Gate pre-activations reduce over the input features, then the hidden features,
// then add the bias (docs/contract.md section 4.2); the cell's element-wise order, the
// backward reductions and the draws are in docs/layers_recurrent.md.
#pragma once

#include <vector>

#include "layers/recurrent_common.h"

namespace emu {

class LSTM : public Module {
 public:
  explicit LSTM(RecurrentOptions options);
  LSTM(int64_t input_size, int64_t hidden_size, int num_layers = 1, bool bias = true,
       bool bidirectional = false, float dropout = 0.0f);

  // h0, c0: (L*D, N, H) or undefined (zeros). lengths_or_mask: (N) lengths, a (N, T)
  // mask (nonzero = valid step), or undefined (every step valid). Padding steps
  // output +0 and leave the state unchanged.
  RecurrentOutput forward(const Tensor& x, const Tensor& h0 = Tensor(), const Tensor& c0 = Tensor(),
                          const Tensor& lengths_or_mask = Tensor());
  // PyTorch's default: every parameter uniform(+-1/sqrt(H)).
  void reset_parameters() override;
  std::string type_name() const override { return "LSTM"; }

  Tensor& weight_ih(int layer, int dir) { return weights_.ih[slot(layer, dir)]; }
  Tensor& weight_hh(int layer, int dir) { return weights_.hh[slot(layer, dir)]; }
  Tensor& bias(int layer, int dir) { return weights_.bias[slot(layer, dir)]; }  // undefined without bias

  RecurrentOptions options;
  // Inspection (tests, statistics): when set, forward() keeps the gate
  // pre-activations (N, T, 4H) of layer l, direction d in preactivations[l*D + d].
  bool keep_preactivations = false;
  std::vector<Tensor> preactivations;

 private:
  size_t slot(int layer, int dir) const {
    return static_cast<size_t>(layer * (options.bidirectional ? 2 : 1) + dir);
  }
  RecurrentWeights weights_;
};

// One layer in one direction (reverse when dir == 1), with autograd: x (N,T,I),
// h0, c0 (N,H), w_ih (4H,I), w_hh (4H,H), bias (4H) or undefined, mask (N,T) or
// undefined -> {y (N,T,H), h_n, c_n (N,H)}. `m` gives the numerics and draw keys;
// `preact` (N,T,4H) receives the gate pre-activations when not null.
RecurrentOutput lstm_layer(const Module& m, int layer, int dir, const Tensor& x, const Tensor& h0,
                           const Tensor& c0, const Tensor& w_ih, const Tensor& w_hh, const Tensor& bias,
                           const Tensor& mask, Tensor* preact = nullptr);

}  // namespace emu
