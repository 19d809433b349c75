// What every layer does around its arithmetic: read tensors into the policy's
// formats (NUMERICS.md section 5), pick the numerics a computation runs in
// (op-level or layer-level emulation), and key its random draws.
#pragma once

#include <string>

#include "core/backend.h"
#include "core/draw_key.h"
#include "core/module.h"

namespace emu {

// x read into format f: x itself when f is plain fp32 (R_f is the identity), else a rounded copy
// (element i draws at index i of `key` under :sr).
Tensor read_as(const Format& f, const Tensor& x, DrawKey key);

// The numerics a layer computes in: n itself for op-level emulation; plain fp32
// for layer-level emulation (the output is rounded afterwards with finish_output).
LayerNumerics compute_numerics(const LayerNumerics& n);

// Under layer-level emulation, rounds the computed result y (in place) to the
// layer's output format; a no-op under op-level emulation.
void finish_output(const LayerNumerics& n, Tensor& y, DrawKey key);

// Under layer-level emulation, rounds a computed gradient g (in place; undefined
// g is skipped) to the layer's grads format; a no-op under op-level emulation.
void finish_grad(const LayerNumerics& n, Tensor& g, DrawKey key);

// The numerics of a backward reduction: the forward's mul/acc/chunk with the
// result rounded to the grads format.
MacPolicy backward_mac(const LayerNumerics& n);

// A plain sum in the acc format: mul exact, out = grads (for bias gradients).
MacPolicy sum_mac(const LayerNumerics& n);

// The draw key of `site` in `m` at the current training step.
DrawKey draw_key(const Module& m, DrawSite site);

}  // namespace emu
