// The argument checks of the sequence ops (EMU_OPS_SEQUENCE,
// core/backend_ops_sequence.h), one definition for every backend, so a bad call
// fails with the same message on the CPU and on a device, before any work. The
// checks read indices, masks and argmax on the host (a device tensor is
// downloaded) and return the checked values, so a backend computes with exactly
// what passed. Each check throws std::invalid_argument naming the op and the
// argument (an index or a sequence by its position).
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "numerics/sequence_steps.h"

namespace emu {

// index (P), x (A,S,B) -> y (A,P,B). Returns the P indices, each in [0, S).
std::vector<int64_t> check_index_gather(const Tensor& index, const Tensor& x, const Tensor& y);

// index (P), src (A,P,B) -> dst (A,S,B). Returns the P indices, each in [0, S).
std::vector<int64_t> check_index_sum(const Tensor& index, const Tensor& src, const Tensor& dst);

// The valid steps of a temporal pool: valid[n*L + t] (mask[n, t] != 0; every
// step without a mask) and count[n] >= 1 (a sequence without a valid step is
// an error).
struct Validity {
  std::vector<uint8_t> valid;
  std::vector<int64_t> count;
};

// A checked temporal pool: the layout of its x and its valid steps.
struct TemporalPool {
  TimeLayout t;
  Validity v;
};

// x (N,C,L) or (N,L,C), mask (N,L) or null -> y (N,C)
TemporalPool check_temporal_avg_pool_forward(int time_dim, const Tensor& x, const Tensor* mask,
                                             const Tensor& y);
// gy (N,C), mask (N,L) or null -> gx (N,C,L) or (N,L,C)
TemporalPool check_temporal_avg_pool_backward(int time_dim, const Tensor& gy, const Tensor* mask,
                                              const Tensor& gx);
// x (N,C,L) or (N,L,C), mask (N,L) or null -> y (N,C), argmax (N,C)
TemporalPool check_temporal_max_pool_forward(int time_dim, const Tensor& x, const Tensor* mask,
                                             const Tensor& y, const Tensor& argmax);

// A checked temporal max-pool backward: the layout of gx and the N*C argmax steps, each in [0, L).
struct TemporalMaxGrad {
  TimeLayout t;
  std::vector<int64_t> argmax;
};

// gy (N,C), argmax (N,C) -> gx (N,C,L) or (N,L,C)
TemporalMaxGrad check_temporal_max_pool_backward(int time_dim, const Tensor& gy, const Tensor& argmax,
                                                 const Tensor& gx);

}  // namespace emu
