// CountingBackend: the op counter behind `emutrain cost` (docs/cost.md). It
// stands in front of the CPU backend, runs every op there (so the step is the
// real one, bit for bit) and adds what the op does to a CostCounts table:
// the terms of its reductions (docs/contract.md section 4) as multiply-
// accumulates keyed by operand and accumulator formats, its element-wise
// operations, non-linear function evaluations and bits read and written.
//
// Ops carry no module, but every op a layer runs is keyed by the layer's draw
// key (core/draw_key.h: a hash of the layer's path, the draw site and the
// step), so the counter inverts that hash over the model's paths to name the
// layer and the site (forward, grad-input, grad-weight, ...), and from the
// site which policy formats read each operand. Optimizer updates are named by
// their parameter. Counts come from shapes, the CSR structure and the N:M
// masks (whose kept counts are fixed by the shape: min(N, group size) per
// group), never from the values: a product with a zero operand the data
// happens to hold is counted, a product a mask drops is not.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/backend.h"
#include "core/draw_key.h"
#include "core/module.h"
#include "train/cost_counts.h"

namespace emu::train {

class CountingBackend final : public Backend {
 public:
  // Counts into `counts` the ops of `model`'s modules; `inner` runs them.
  CountingBackend(Backend& inner, const Module& model, CostCounts& counts);

  const char* name() const override { return inner_.name(); }
  Device device() const override { return inner_.device(); }
  bool supports(Op op, Family family) const override { return inner_.supports(op, family); }

  // The phase the following ops belong to.
  void set_phase(Phase p) { phase_ = p; }
  // Call after setting the model's step (RunContext): the layers' draw keys of
  // this step, which name the layers, are computed from their contexts.
  void begin_step();

#define EMU_COST_DECLARE_OP(name, params, args) void name params override;
  EMU_BACKEND_OPS(EMU_COST_DECLARE_OP)
#undef EMU_COST_DECLARE_OP

  // Who runs an op: the layer and the draw site its key names.
  struct Who {
    const Module* module = nullptr;  // null: not a layer of the model (an optimizer, a test's direct call)
    std::string layer;
    DrawSite site = DrawSite::Forward;
    uint32_t stage = 0;
  };
  Who who(DrawKey key) const;
  Who who_param(const Tensor& param) const;  // the module owning a parameter (optimizer updates)

  // Counting helpers used by the op definitions (cost_backend_ops.cpp).
  enum class Role : uint8_t { Weights, Activations, Grads };
  Format read_format(const Who& w, Role r) const;
  Format write_format(const Who& w) const;  // out in the forward, grads in the backward
  void mac(const Who& w, const MacPolicy& p, Role ra, Role rb, int64_t terms, int64_t masked);
  void sum(const Who& w, const MacPolicy& p, int64_t adds);
  void op(const Who& w, const char* kind, const Format& f, int64_t n);
  void function(const Who& w, const std::string& fn, const std::string& mode, const Format& f, int64_t n);
  void read(const Who& w, Role r, int64_t elements);
  void read_as(const Who& w, const char* cls, const Format& f, int64_t elements);
  void write(const Who& w, int64_t elements);
  void write_as(const Who& w, const char* cls, const Format& f, int64_t elements);
  void meta(const Who& w, const char* kind, int64_t bits);
  void uncounted(const char* op);
  // The last N:M mask of (layer, read site) this step, as 0/1 bytes in the master's row-major order.
  const std::vector<uint8_t>* mask(const Who& w, DrawSite read_site) const;
  Backend& inner() { return inner_; }

 private:
  Backend& inner_;
  const Module& model_;
  CostCounts& counts_;
  Phase phase_ = Phase::Forward;
  std::unordered_map<uint64_t, Who> streams_;
  std::map<std::pair<std::string, int>, std::vector<uint8_t>> masks_;
  std::vector<std::pair<const Module*, std::string>> modules_;
  friend struct CostOps;
};

}  // namespace emu::train
