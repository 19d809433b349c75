#include "core/sparsity.h"

#include <fmt/format.h>

#include <stdexcept>
#include <vector>

namespace emu {

Tensor nm_mask_of(const SparsitySpec& spec, const ReadLayout& layout, const Tensor& master, DrawKey key) {
  if (layout.numel() != master.numel())
    throw std::invalid_argument(fmt::format("N:M mask: layout [{}, {}, {}] for a tensor of shape {}",
                                            layout.outer, layout.len, layout.inner,
                                            shape_string(master.shape())));
  Backend& be = backend_for(master.device());
  NmParams p;
  p.n = spec.n;
  p.m = spec.m;
  p.layout = layout;
  Tensor mask = Tensor::zeros(master.shape(), master.device());
  switch (spec.score) {
    case SparsityScore::Magnitude:
      p.score = NmScoreSource::Magnitude;
      be.nm_mask(p, master, mask, key);
      break;
    case SparsityScore::Random:
      p.score = NmScoreSource::Random;
      be.nm_mask(p, master, mask, mask_key(key));
      break;
    case SparsityScore::User: {
      // Host-side scores (a user function is plain C++): the master downloaded, the scores
      // uploaded to its device, then the same op.
      p.score = NmScoreSource::Given;
      const std::vector<float> values = master.to_vector();
      std::vector<float> host_scores(values.size(), 0.0f);
      sparsity_score_fn(spec.user)(values.data(), host_scores.data(), master.numel(), layout);
      be.nm_mask(p, Tensor::from_vector(master.shape(), host_scores, master.device()), mask, key);
      break;
    }
  }
  return mask;
}

Tensor nm_sparsify(const SparsitySpec& spec, const ReadLayout& layout, const Tensor& master, const Tensor& x,
                   DrawKey key, Tensor* mask_out) {
  if (x.numel() != master.numel())
    throw std::invalid_argument(fmt::format("N:M mask: read of shape {} for a master of shape {}",
                                            shape_string(x.shape()), shape_string(master.shape())));
  Tensor mask = nm_mask_of(spec, layout, master, key);
  Tensor y = Tensor::zeros(x.shape(), x.device());  // never written into x: x may be the master itself
  backend_for(x.device()).apply_mask(x, mask, y);
  if (mask_out) *mask_out = mask;
  return y;
}

void MaskMonitor::record(const std::string& module, const std::string& tensor, const Tensor& mask) {
  if (!enabled_) return;
  // Statistics are host bookkeeping: the mask is downloaded (what the run logs).
  const std::vector<float> mv = mask.to_vector();
  const float* mp = mv.data();
  const int64_t n = mask.numel();
  std::lock_guard<std::mutex> lock(mutex_);
  Entry* e = nullptr;
  for (Entry& x : entries_)
    if (x.stats.module == module && x.stats.tensor == tensor) e = &x;
  if (!e) {
    entries_.push_back({});
    e = &entries_.back();
    e->stats.module = module;
    e->stats.tensor = tensor;
  }
  const bool comparable = static_cast<int64_t>(e->previous.size()) == n;
  int64_t kept = 0, changed = 0;
  e->previous.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t bit = mp[i] != 0.0f;
    kept += bit;
    if (comparable && e->previous[static_cast<size_t>(i)] != bit) ++changed;
    e->previous[static_cast<size_t>(i)] = bit;
  }
  e->stats.reads += 1;
  e->stats.elements = n;
  e->stats.kept += kept;
  e->stats.changed += changed;
  e->stats.changed_last = changed;
}

std::vector<MaskStats> MaskMonitor::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<MaskStats> out;
  for (Entry& e : entries_) {
    if (e.stats.reads > 0) out.push_back(e.stats);
    e.stats.reads = e.stats.kept = e.stats.changed = e.stats.changed_last = 0;
  }
  return out;
}

void MaskMonitor::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.clear();
}

MaskMonitorScope::MaskMonitorScope(const Module& root) {
  active_ = root.numerics().sparsity.enabled();
  for (const auto& [name, m] : root.named_modules()) active_ = active_ || m->numerics().sparsity.enabled();
  mask_monitor().reset();
  mask_monitor().set_enabled(active_);
}

MaskMonitorScope::~MaskMonitorScope() {
  mask_monitor().set_enabled(false);
  mask_monitor().reset();
}

std::string mask_stats_json(const MaskStats& s, int64_t epoch, int64_t step) {
  const double per_read = s.reads && s.elements ? double(s.changed) / double(s.reads * s.elements) : 0;
  return fmt::format(
      "{{\"epoch\": {}, \"step\": {}, \"module\": \"{}\", \"tensor\": \"{}\", \"reads\": {}, \"elements\": "
      "{}, "
      "\"kept_fraction\": {:.6f}, \"changed\": {}, \"changed_per_read\": {:.6f}, \"changed_last\": {}}}",
      epoch, step, s.module, s.tensor, s.reads, s.elements, s.kept_fraction(), s.changed, per_read,
      s.changed_last);
}

std::string describe_mask_stats(const std::vector<MaskStats>& stats) {
  std::string line = "sparsity:";
  for (size_t i = 0; i < stats.size(); ++i) {
    const MaskStats& s = stats[i];
    const double per_read = s.reads && s.elements ? double(s.changed) / double(s.reads * s.elements) : 0;
    line += fmt::format("{} {}.{} kept {:.2f}% changed {:.3f}%/read (last {})", i ? ";" : "", s.module,
                        s.tensor, 100 * s.kept_fraction(), 100 * per_read, s.changed_last);
  }
  return line;
}

MaskMonitor& mask_monitor() {
  static MaskMonitor m;
  return m;
}

}  // namespace emu
