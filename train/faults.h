// Fault injection (docs/faults.md): bit flips and stuck-at bits in the
// encoding of a tensor's FORMAT, not of the float32 carrier: value -> code in
// the format -> bit b changed (b < the format's width) -> decoded value.
//
// Faults hit weights (on each read, after rounding and N:M masks), activations
// (a module's output, in its out format) and gradients (the incoming gradient
// as read by a layer's backward, in its grads format), through the tensor hook
// of layers/layer_io.h. Every random choice (element, bit, whether a fault
// fires) is a Philox draw keyed by (seed, stream, index) (docs/contract.md
// section 6): the stream names the fault, the module, the tensor, the step
// and the read, so a run is reproducible and independent of threads.
//
// A recipe's `faults:` section is a list of FaultSpec (check_faults_section);
// the trainer installs a FaultInjector for the run. tools/faults_campaign.cpp
// runs inference campaigns with single random flips.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "layers/layer_io.h"
#include "numerics/format.h"

namespace emu::train {

enum class FaultSite : uint8_t { Weights, Activations, Gradients, Metadata };
enum class FaultKind : uint8_t { Flip, StuckAt0, StuckAt1 };

const char* fault_site_name(FaultSite s);
const char* fault_kind_name(FaultKind k);

struct FaultSpec {
  FaultSite site = FaultSite::Weights;
  std::string module = "**";   // glob over module paths (core/numerics_policy.h glob_match)
  std::string tensor = "*";    // glob over the tensor's name in the module ("weight", "weight_ih_l0", ...)
  std::vector<int> bits;       // fixed bit positions (0 = least significant); empty = random
  int count = 1;               // random bits per faulted element (distinct), when bits is empty
  int64_t element = -1;        // flat element index; -1 = random (step faults)
  std::vector<int64_t> steps;  // fire at the first read of each of these training steps ...
  double probability = -1;     // ... or: each element of each read with this probability
  FaultKind kind = FaultKind::Flip;
  uint64_t seed = 0;
};

// One change made to an element.
struct FaultEvent {
  int64_t step = 0;
  FaultSite site = FaultSite::Weights;
  std::string module, tensor;
  int64_t element = 0;  // element index, or block index for metadata
  int bit = 0;
  FaultKind kind = FaultKind::Flip;
  bool meta = false;
  uint64_t code_before = 0, code_after = 0;
  float before = 0, after = 0;
};

// v (a value of f) with bit `bit` of its code in f flipped (Flip) or forced to
// 0 / 1 (stuck), decoded. *code_before/*code_after get the codes when not null.
// A code that decodes to NaN gives NaN (the fp32 carrier keeps no payload); in
// a format without subnormals a subnormal code decodes to 0 (its meaning there).
// Throws std::invalid_argument if bit >= f.nbits, or v is not a value of f.
float fault_value(const Format& f, float v, int bit, FaultKind kind, uint64_t* code_before = nullptr,
                  uint64_t* code_after = nullptr);

// One change to one code of a tensor read in format f: element code `index`
// (meta false), or, for block formats, metadata code `index` (meta true: the
// shared exponent/scale of block `index`, numbered as numerics/block_format.h's
// BlockEncoded::meta).
struct CodeFault {
  int64_t index = 0;
  int bit = 0;
  FaultKind kind = FaultKind::Flip;
  bool meta = false;
};

// How many codes of each kind a read of t in format f holds and their width:
// scalar formats: t.numel() element codes of f.nbits bits, no metadata; block
// formats: from the block encoding along `layout` (len 0: rows along the last dim).
struct CodeSpace {
  int64_t elements = 0, metas = 0;
  int elem_bits = 0, meta_bits = 0;
};
CodeSpace code_space(const Format& f, const ReadLayout& layout, const Tensor& t);

// t (a read in format f along `layout`) with `faults` applied to its codes:
// scalar formats value by value (fault_value); block formats through
// encode_blocks / decode_blocks (after checking that t re-encodes to itself).
// Returns a new tensor (t is never written); appends one event per fault.
Tensor fault_codes(const Format& f, const ReadLayout& layout, const Tensor& t,
                   const std::vector<CodeFault>& faults, std::vector<FaultEvent>* events = nullptr);

// Parses a checked `faults` list (see check_faults_section).
std::vector<FaultSpec> parse_faults(const YAML::Node& faults);
// Checks the recipe's `faults` section (a list of mappings) and fills defaults;
// throws RecipeError naming faults[i].key, the value and what is allowed.
void check_faults_section(YAML::Node faults);

// Applies FaultSpecs to the tensors the layers read and write. install() makes
// it the tensor hook (set_tensor_hook); uninstall() removes it. Stuck-at bits
// persist from the read that set them to every later read of the same tensor.
class FaultInjector {
 public:
  explicit FaultInjector(std::vector<FaultSpec> specs);
  ~FaultInjector();
  FaultInjector(const FaultInjector&) = delete;
  FaultInjector& operator=(const FaultInjector&) = delete;

  void install();
  void uninstall();
  // The hook itself: t, or a modified copy.
  Tensor apply(const Module& m, TensorSite site, const std::string& name, const Format& f,
               const ReadLayout& layout, const Tensor& t);

  // Events since the last take (every change made to an element, stuck ones only when set).
  std::vector<FaultEvent> take_events();
  int64_t total_events() const { return total_events_; }
  const std::vector<FaultSpec>& specs() const { return specs_; }

 private:
  using Stuck = CodeFault;
  using TensorId = std::tuple<std::string, int, std::string>;  // module, site, tensor name
  std::vector<FaultSpec> specs_;
  std::mutex mutex_;
  std::map<TensorId, std::vector<Stuck>> stuck_;
  std::map<std::tuple<size_t, TensorId, int64_t>, bool> fired_;  // (spec, tensor, step) step faults done
  std::map<std::pair<TensorId, int64_t>, int64_t> reads_;        // reads of a tensor at a step
  std::vector<FaultEvent> events_;
  int64_t total_events_ = 0;
  bool installed_ = false;
};

// The trainer's end-of-epoch report of masks and faults: appends the mask
// statistics since the last call (core/sparsity.h mask_monitor) to
// <run_dir>/sparsity.jsonl and the fault events of `faults` (may be null) to
// <run_dir>/fault_events.csv, and returns the log lines (none when neither is in use).
std::vector<std::string> report_masks_and_faults(FaultInjector* faults, const std::string& run_dir,
                                                 int64_t epoch, int64_t step);

// The random draws of faults, exposed for the campaign and tests: uniform in [0, n).
uint64_t fault_draw_below(uint64_t seed, uint64_t stream, uint64_t index, uint64_t n);

}  // namespace emu::train
