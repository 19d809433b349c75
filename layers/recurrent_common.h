// What LSTM and GRU share: options, the stacking of layers and directions
// (bidirectional outputs concatenated on the feature dim, forward first; dropout
// between layers), sequence masks from lengths, and the draw keys of each layer
// and direction. The arithmetic of one layer in one direction is the backend's
// lstm_forward / gru_forward (core/backend_ops_recurrent.h); see
// docs/layers_recurrent.md.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/draw_key.h"
#include "core/module.h"

namespace emu {

struct RecurrentOptions {
  int64_t input_size = 0;
  int64_t hidden_size = 0;
  int num_layers = 1;
  bool bias = true;
  bool bidirectional = false;
  float dropout = 0.0f;  // on the output of every layer but the last, in training
};

// output: (N, T, D*H), D = 2 if bidirectional else 1; h_n, c_n: (L*D, N, H),
// entry l*D + d for layer l, direction d (0 forward, 1 reverse), as PyTorch.
// c_n is undefined for the GRU.
struct RecurrentOutput {
  Tensor output, h_n, c_n;
};

// A (N,T) 0/1 mask from lengths (N) (step t of sequence n is valid when t <
// lengths[n]; lengths are integers in [0, T]) or a (N,T) mask as given (nonzero
// = valid); an undefined tensor for an undefined input (every step valid).
Tensor sequence_mask(const Tensor& lengths_or_mask, int64_t N, int64_t T);

// The draw key of `site` for layer `layer`, direction `dir` of `m` at the
// current step: a hash of m's key, so layers and directions never share streams.
DrawKey recurrent_key(const Module& m, DrawSite site, int layer, int dir);

// Differentiable slice of a flat packed result: the `shape`-sized run of
// elements starting at `offset`. Its gradient is zero outside the run.
Tensor packed_slice(const Tensor& packed, int64_t offset, const Shape& shape);

// Dropout between layers: Dropout's arithmetic (layers/dropout.h) with the mask
// drawn from recurrent_key(m, Dropout, layer, 0).
Tensor recurrent_dropout(const Module& m, const Tensor& x, float p, int layer);

// Checks sizes and the input, then runs every layer and direction with `cell`,
// which returns {y (N,T,H), h_n (N,H), c_n (N,H) or undefined} for one layer
// and direction given its input (N,T,I_l), initial states (N,H) (c0 undefined
// for the GRU) and mask. h0 / c0: (L*D, N, H) or undefined (zeros).
using RecurrentCell = std::function<RecurrentOutput(int layer, int dir, const Tensor& x, const Tensor& h0,
                                                    const Tensor& c0, const Tensor& mask)>;
RecurrentOutput run_recurrent(const Module& m, const RecurrentOptions& o, bool with_cell_state,
                              const Tensor& x, const Tensor& h0, const Tensor& c0,
                              const Tensor& lengths_or_mask, const RecurrentCell& cell);

// The operands of one layer and direction read into the policy's formats
// (docs/contract.md section 5.1), G = gates per unit.
struct RecurrentReads {
  Tensor x;           // (N,T,I), activations format
  Tensor h0, c0;      // (N,H), activations format (c0 undefined for the GRU)
  Tensor w_ih, w_hh;  // (G*H, I), (G*H, H), weights format
  Tensor bias;        // weights format, or undefined
};
RecurrentReads read_recurrent_operands(const Module& m, int layer, int dir, const Tensor& x, const Tensor& h0,
                                       const Tensor& c0, const Tensor& w_ih, const Tensor& w_hh,
                                       const Tensor& bias);

// A zero tensor of `shape` when `wanted`, else undefined (an op's optional result).
Tensor zeros_if(bool wanted, const Shape& shape, Device device);

// The gate functions of the policy (functions.sigmoid, functions.tanh), exact or
// pwl under either emulation mode; with a pwl one the layers keep the slopes
// tensor for the backward (core/backend_ops_recurrent.h).
GateFunctions gate_functions(const LayerNumerics& n);

// "weight_ih_l0", "weight_ih_l1_reverse", ...: PyTorch's parameter names.
std::string recurrent_param_name(const char* base, int layer, int dir);

void check_recurrent_options(const char* type, const RecurrentOptions& o);

// The parameters of every (layer, direction) of a recurrent module, slot l*D + d:
// weight_ih (gate_rows, in), weight_hh (gate_rows, H), bias (4H, one per
// reduction: docs/layers_recurrent.md) or undefined without bias.
struct RecurrentWeights {
  std::vector<Tensor> ih, hh, bias;
};
// Registers them on `m` under PyTorch's names (gate_rows: 4H for the LSTM, 3H for the GRU).
RecurrentWeights register_recurrent_weights(Module& m, const RecurrentOptions& o, int64_t gate_rows);
// U(-1/sqrt(H), 1/sqrt(H)) for every tensor, as PyTorch; init streams 3s, 3s+1, 3s+2 for slot s.
void reset_recurrent_weights(Module& m, RecurrentWeights& w, int64_t hidden_size);

}  // namespace emu
