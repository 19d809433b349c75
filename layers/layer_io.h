// What every layer does around its arithmetic: read tensors into the policy's
// formats (docs/contract.md section 5.1), pick the numerics a computation runs in
// (op-level or layer-level emulation), and key its random draws.
#pragma once

#include <functional>
#include <string>

#include "core/backend.h"
#include "core/draw_key.h"
#include "core/module.h"
#include "numerics/read_layout.h"

namespace emu {

// x read into format f: x itself when f is plain fp32 (R_f is the identity), else a rounded copy
// (element i draws at index i of `key` under :sr). A block format (docs/block_formats.md) is
// rounded per block with blocks along the last dimension.
Tensor read_as(const Format& f, const Tensor& x, DrawKey key);

// The same with blocks along the rows of `layout` (the reduction dimension of the reader,
// numerics/read_layout.h; len 0 = rows along the last dimension). Only block formats use
// the layout: for the others this is read_as(f, x, key). Runs the backend op quantize_blocks.
Tensor read_as(const Format& f, const Tensor& x, DrawKey key, ReadLayout layout);

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

// --- weight and gradient reads with N:M masks and fault hooks (docs/sparsity.md, docs/faults.md) ---

// How a layer uses a weight: as an operand of a reduction along `layout`'s rows
// (N:M masks apply), or as a lookup table (Embedding: no reduction, no mask).
enum class WeightUse : uint8_t { Reduction, Lookup };

// The read of weight w by m: R_{n.weights}(w) (read_as with `layout`: blocks of
// block formats run along its rows), then, if m's policy
// has N:M sparsity on weights and use == Reduction, the mask of the dense
// master w along `layout` (elements dropped -> +0; recomputed at every read,
// never stored into w), then the fault hook (TensorSite::Weights, format
// n.weights). With none of these it is exactly read_as(n.weights, w, key).
// The sparsity spec is m's own (m.numerics()), so layer-level emulation keeps it.
// `name` tells the weights of one module apart in the mask statistics and fault sites.
Tensor read_weight(const Module& m, const LayerNumerics& n, const Tensor& w, DrawKey key,
                   const ReadLayout& layout, WeightUse use = WeightUse::Reduction,
                   const std::string& name = "weight");

// The read of an incoming gradient g by m's backward: R_{n.grads}(g), then the
// N:M mask of g itself along `layout` if m's policy has sparsity on grads,
// then the fault hook (TensorSite::Gradients, format n.grads).
Tensor read_grad(const Module& m, const LayerNumerics& n, const Tensor& g, DrawKey key,
                 const ReadLayout& layout);

// The fault hook on m's forward output y (TensorSite::Activations, format
// n.out()), in place: layers call it after finish_output. A no-op without a hook.
void hook_output(const Module& m, const LayerNumerics& n, Tensor& y);

// Where a tensor hook sees a tensor.
enum class TensorSite : uint8_t { Weights, Activations, Gradients };
// A hook (train/faults.h installs one) gets every weight read, gradient read
// and layer output with the format it was rounded to, the layout it was read
// with (block formats' blocks run along its rows; len 0 for outputs) and the
// tensor's name in the module ("weight", "weight_ih_l0", "grad", "output"), and
// returns t itself or a modified copy: it must never write into t (a weight
// read in fp32 is the master copy itself).
using TensorHook = std::function<Tensor(const Module& m, TensorSite site, const std::string& name,
                                        const Format& f, const ReadLayout& layout, const Tensor& t)>;
void set_tensor_hook(TensorHook hook);  // an empty function removes it
bool has_tensor_hook();

}  // namespace emu
