// N:M masks on tensors (docs/contract.md section 5.2; docs/sparsity.md): the mask of a
// read is scored from the dense master copy and applied to the value read, at
// every read, so the pattern can change every step and the master keeps
// training densely. The arithmetic is the backend's nm_mask / apply_mask ops
// (core/backend_ops_sparsity.h); this file picks the scores, keys the random
// ones and keeps per-module mask statistics for the trainer's log.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/draw_key.h"
#include "core/module.h"
#include "core/sparsity_spec.h"

namespace emu {

// The keep-mask (1.0f kept, 0.0f dropped; master's shape) of `spec` over `master`,
// grouped along the rows of `layout`. Random scores draw from a stream derived
// from `key` (mask_key(key)), user scores are computed on the host.
Tensor nm_mask_of(const SparsitySpec& spec, const ReadLayout& layout, const Tensor& master, DrawKey key);

// x (the read value of `master`, same numel) with the elements the mask of
// `master` drops set to +0. Stores the mask in *mask_out when given.
Tensor nm_sparsify(const SparsitySpec& spec, const ReadLayout& layout, const Tensor& master, const Tensor& x,
                   DrawKey key, Tensor* mask_out = nullptr);

// The stream random scores draw from: the read's key with its own stream, so
// the mask is not correlated with the read's stochastic rounding.
inline DrawKey mask_key(DrawKey read_key) {
  return DrawKey{read_key.seed, mix64(read_key.stream ^ 0x6e6d6d61736bull)};
}

// Mask statistics of one (module, tensor) over the reads since the last take().
struct MaskStats {
  std::string module;        // module path
  std::string tensor;        // "weight", "grad", ...
  int64_t reads = 0;         // masked reads recorded
  int64_t elements = 0;      // elements per read (of the last read)
  int64_t kept = 0;          // kept elements, summed over the reads
  int64_t changed = 0;       // mask bits that differ from the previous read's, summed over the reads
  int64_t changed_last = 0;  // ... of the last read only
  double kept_fraction() const { return reads && elements ? double(kept) / double(reads * elements) : 0; }
};

// Collects MaskStats while enabled (the trainer enables it for training reads);
// the previous mask of each (module, tensor) is kept as bytes to count changes.
class MaskMonitor {
 public:
  void set_enabled(bool on) { enabled_ = on; }
  bool enabled() const { return enabled_; }
  void record(const std::string& module, const std::string& tensor, const Tensor& mask);
  // The statistics since the last take(), in the order first seen; resets the counts
  // (not the previous masks, so the first read after a take still counts its changes).
  std::vector<MaskStats> take();
  void reset();  // forget everything (also the previous masks)

 private:
  struct Entry {
    MaskStats stats;
    std::vector<uint8_t> previous;
  };
  bool enabled_ = false;
  std::mutex mutex_;
  std::vector<Entry> entries_;
};

MaskMonitor& mask_monitor();

// Enables mask_monitor() (after a reset) while it lives if some module of `root`'s tree
// has N:M sparsity; disables it on destruction. The trainer holds one per run.
class MaskMonitorScope {
 public:
  explicit MaskMonitorScope(const Module& root);
  ~MaskMonitorScope();
  MaskMonitorScope(const MaskMonitorScope&) = delete;
  MaskMonitorScope& operator=(const MaskMonitorScope&) = delete;
  bool active() const { return active_; }

 private:
  bool active_ = false;
};

// One JSON object (a line of sparsity.jsonl): epoch, step, module, tensor, reads,
// elements, kept_fraction, changed, changed_per_read, changed_last.
std::string mask_stats_json(const MaskStats& s, int64_t epoch, int64_t step);
// "sparsity: fc1.weight kept 50.00% changed 0.12%/read (last 3); ..." (one line).
std::string describe_mask_stats(const std::vector<MaskStats>& stats);

}  // namespace emu
