// The counter's bookkeeping: naming the layer of an op from its draw key, the
// formats of its operands, and adding counts. The per-op counts are in
// cost_backend_ops.cpp.
#include "train/cost_backend.h"

#include <fmt/format.h>

#include "core/sparsity.h"
#include "layers/layer_io.h"
#include "layers/recurrent_common.h"
#include "numerics/approx_mul.h"
#include "numerics/format_spec.h"
#include "numerics/split_mul_spec.h"

namespace emu::train {

namespace {

// Draw stages an op may add to its layer's key (nn_stage_key, sparse_matmul's
// stage; attention offsets its products by up to 40, each op adds its own sites).
constexpr uint32_t kMaxStage = 64;
// Stages whose read keys get an N:M mask key (sparse_matmul uses stages 0 and 1).
constexpr uint32_t kMaskStages = 4;
// Stacked recurrent layers a model may have (layers/recurrent_common.h keys each).
constexpr int kMaxRecurrentLayers = 8;

std::string layer_label(const std::string& path) { return path.empty() ? "(model)" : path; }

int64_t block_element_bits(const Format& f) {
  if (f.block.elem_family == Family::Fixed) return f.block.elem_nbits;
  return 1 + f.block.elem_exp_bits + f.block.elem_man_bits;
}

}  // namespace

CountingBackend::CountingBackend(Backend& inner, const Module& model, CostCounts& counts)
    : inner_(inner), model_(model), counts_(counts) {
  modules_.push_back({&model, ""});
  for (const auto& [path, m] : model.named_modules()) modules_.push_back({m.get(), m->path()});
}

void CountingBackend::begin_step() {
  streams_.clear();
  masks_.clear();
  // The keys each layer computes for this step (its context's seed and step), as
  // layers/layer_io.h and layers/recurrent_common.h compute them.
  auto add = [&](const Module* m, const std::string& path, DrawSite site, DrawKey k) {
    streams_[k.stream] = Who{m, layer_label(path), site, 0};
    // Random N:M scores draw from the read key's mask stream (core/sparsity.h).
    if (site == DrawSite::ReadWeights || site == DrawSite::ReadGrad || site == DrawSite::ReadInput)
      for (uint32_t st = 0; st < kMaskStages; ++st)
        streams_[mask_key(DrawKey{k.seed, k.stream + st}).stream] = Who{m, layer_label(path), site, st};
  };
  for (const auto& [m, path] : modules_) {
    for (uint32_t s = static_cast<uint32_t>(DrawSite::Forward);
         s <= static_cast<uint32_t>(DrawSite::ReadBias); ++s) {
      const DrawSite site = static_cast<DrawSite>(s);
      add(m, path, site, draw_key(*m, site));
      // Recurrent layers key each (layer, direction) apart; direction 2 is the
      // dropout between layers.
      for (int layer = 0; layer < kMaxRecurrentLayers; ++layer)
        for (int dir = 0; dir < 3; ++dir) add(m, path, site, recurrent_key(*m, site, layer, dir));
    }
  }
}

CountingBackend::Who CountingBackend::who(DrawKey key) const {
  for (uint32_t s = 0; s < kMaxStage; ++s) {
    auto it = streams_.find(key.stream - s);
    if (it != streams_.end()) {
      Who w = it->second;
      w.stage += s;
      return w;
    }
  }
  return Who{nullptr, "(unattributed)", DrawSite::Forward, 0};
}

CountingBackend::Who CountingBackend::who_param(const Tensor& param) const {
  for (const auto& [m, path] : modules_)
    for (const auto& [name, t] : m->named_parameters())
      if (name.find('.') == std::string::npos && t.same(param))
        return Who{m, layer_label(path), DrawSite::Update, 0};
  return Who{nullptr, "(optimizer)", DrawSite::Update, 0};
}

Format CountingBackend::read_format(const Who& w, Role r) const {
  if (!w.module) return Format{};
  const LayerNumerics cn = compute_numerics(w.module->numerics());
  switch (r) {
    case Role::Weights:
      return cn.weights;
    case Role::Activations:
      return cn.activations;
    case Role::Grads:
      return cn.grads;
  }
  return Format{};
}

Format CountingBackend::write_format(const Who& w) const {
  if (!w.module) return Format{};
  const LayerNumerics& n = w.module->numerics();
  // A block format is a read format: results stay fp32 (layers/layer_io.h backward_mac).
  const Format f = phase_ == Phase::Backward ? n.grads : n.out();
  return is_block(f) ? Format{} : f;
}

static std::string mul_mode(const MacPolicy& p) {
  if (p.mul_exact) return "exact";
  if (has_approx_mul(p.lut)) return approx_mul_spec_of(p);        // "lut:<model>:<format>"
  if (p.split != SplitMul::None) return split_mul_name(p.split);  // "split:fp32b", ...
  return format_name(p.mul);
}

void CountingBackend::mac(const Who& w, const MacPolicy& p, Role ra, Role rb, int64_t terms, int64_t masked) {
  CountKey k{w.layer,
             phase_,
             Category::Mac,
             format_name(read_format(w, ra)),
             format_name(read_format(w, rb)),
             format_name(p.acc),
             mul_mode(p)};
  counts_.add(k, terms - masked);
  k.category = Category::MacMasked;
  counts_.add(k, masked);
}

void CountingBackend::sum(const Who& w, const MacPolicy& p, int64_t adds) {
  counts_.add(CountKey{w.layer, phase_, Category::Add, "", "", format_name(p.acc), "add"}, adds);
}

void CountingBackend::op(const Who& w, const char* kind, const Format& f, int64_t n) {
  counts_.add(CountKey{w.layer, phase_, Category::Op, "", "", format_name(f), kind}, n);
}

void CountingBackend::function(const Who& w, const std::string& fn, const std::string& mode, const Format& f,
                               int64_t n) {
  counts_.add(CountKey{w.layer, phase_, Category::Function, mode, "", format_name(f), fn}, n);
}

void CountingBackend::read(const Who& w, Role r, int64_t elements) {
  static const char* names[] = {"weights", "activations", "grads"};
  read_as(w, names[static_cast<int>(r)], read_format(w, r), elements);
}

void CountingBackend::read_as(const Who& w, const char* cls, const Format& f, int64_t elements) {
  const int64_t bits = is_block(f) ? block_element_bits(f) : f.nbits;
  counts_.add(CountKey{w.layer, phase_, Category::Read, "", "", format_name(f), cls}, elements * bits);
}

void CountingBackend::write(const Who& w, int64_t elements) {
  write_as(w, phase_ == Phase::Backward ? "grads" : "activations", write_format(w), elements);
}

void CountingBackend::write_as(const Who& w, const char* cls, const Format& f, int64_t elements) {
  counts_.add(CountKey{w.layer, phase_, Category::Write, "", "", format_name(f), cls}, elements * f.nbits);
}

void CountingBackend::meta(const Who& w, const char* kind, int64_t bits) {
  counts_.add(CountKey{w.layer, phase_, Category::Meta, "", "", "", kind}, bits);
}

void CountingBackend::uncounted(const char* op) { ++counts_.uncounted[op]; }

const std::vector<uint8_t>* CountingBackend::mask(const Who& w, DrawSite read_site) const {
  auto it = masks_.find({w.layer, static_cast<int>(read_site)});
  return it == masks_.end() ? nullptr : &it->second;
}

}  // namespace emu::train
