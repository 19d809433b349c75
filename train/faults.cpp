#include "train/faults.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "config/args.h"
#include "config/schema.h"
#include "core/draw_key.h"
#include "core/sparsity.h"
#include "numerics/block_format.h"
#include "numerics/format_spec.h"
#include "numerics/philox.h"
#include "numerics/round.h"
#include "train/csv.h"

namespace emu::train {

using config::Args;
using config::check_section;
using config::choice_key;
using config::int_key;
using config::int_list_key;
using config::KeySpec;
using config::number_key;
using config::parse_int;
using config::RecipeError;
using config::string_key;

namespace {

FaultSite to_fault_site(TensorSite s) {
  switch (s) {
    case TensorSite::Weights:
      return FaultSite::Weights;
    case TensorSite::Activations:
      return FaultSite::Activations;
    case TensorSite::Gradients:
      return FaultSite::Gradients;
  }
  return FaultSite::Weights;
}

// The stream of one (fault, tensor, step, read): a pure function of names and counters.
uint64_t fault_stream(size_t spec, const std::string& module, int site, const std::string& tensor,
                      int64_t step, int64_t read) {
  uint64_t s = mix64(path_hash(module) ^ 0x6661756c74ull);
  s = mix64(s ^ path_hash(tensor));
  s = mix64(s ^ (static_cast<uint64_t>(spec) << 8 | static_cast<uint64_t>(site)));
  s = mix64(s ^ static_cast<uint64_t>(step) * 0x9e3779b97f4a7c15ull);
  return mix64(s ^ static_cast<uint64_t>(read));
}

// Up to `count` distinct random bit positions below `width`, drawn at indices base, base+1, ...
std::vector<int> random_bits(uint64_t seed, uint64_t stream, uint64_t base, int count, int width) {
  std::vector<int> bits;
  count = std::min(count, width);
  for (uint64_t j = 0; static_cast<int>(bits.size()) < count; ++j) {
    const int b = static_cast<int>(fault_draw_below(seed, stream, base + j, static_cast<uint64_t>(width)));
    if (std::find(bits.begin(), bits.end(), b) == bits.end()) bits.push_back(b);
  }
  return bits;
}

const std::vector<KeySpec>& fault_keys() {
  static const std::vector<KeySpec> k = {
      choice_key("site", "weights", {"weights", "activations", "gradients", "metadata"},
                 "where: weight reads, module outputs, gradient reads, the block metadata of weight reads"),
      string_key("module", "'**'", "glob over module paths ('*' one component, '**' any)"),
      string_key("tensor", "'*'",
                 "glob over the tensor's name in the module (weight, weight_ih_l0, output, grad)"),
      int_key("count", "1", "random bits per faulted element (when bits: random)", 1, 64),
      int_key("step", "", "fire at the first read of this training step"),
      int_list_key("steps", "", "... or of each of these steps"),
      number_key("probability", "", "... or: each element of each read independently with this probability",
                 0, 1),
      choice_key("kind", "flip", {"flip", "transient", "stuck_at_0", "stuck_at_1"},
                 "flip (transient: that read only) or a bit stuck from then on"),
      int_key("seed", "0", "seed of the fault's random choices"),
  };
  return k;
}

}  // namespace

const char* fault_site_name(FaultSite s) {
  switch (s) {
    case FaultSite::Weights:
      return "weights";
    case FaultSite::Activations:
      return "activations";
    case FaultSite::Gradients:
      return "gradients";
    case FaultSite::Metadata:
      return "metadata";
  }
  return "?";
}

const char* fault_kind_name(FaultKind k) {
  switch (k) {
    case FaultKind::Flip:
      return "flip";
    case FaultKind::StuckAt0:
      return "stuck_at_0";
    case FaultKind::StuckAt1:
      return "stuck_at_1";
  }
  return "?";
}

uint64_t fault_draw_below(uint64_t seed, uint64_t stream, uint64_t index, uint64_t n) {
  if (n == 0) return 0;
  const uint64_t hi = philox_draw(seed, stream, 2 * index), lo = philox_draw(seed, stream, 2 * index + 1);
  return ((hi << 32) | lo) % n;
}

float fault_value(const Format& f, float v, int bit, FaultKind kind, uint64_t* code_before,
                  uint64_t* code_after) {
  if (bit < 0 || bit >= f.nbits)
    throw std::invalid_argument(
        fmt::format("fault at bit {}: format {} has bits 0..{}", bit, format_name(f), f.nbits - 1));
  uint64_t code = 0;
  if (!encode(f, static_cast<double>(v), &code))
    throw std::invalid_argument(
        fmt::format("fault: {} is not a value of {} (the tensor was not rounded to it)",
                    static_cast<double>(v), format_name(f)));
  const uint64_t b = uint64_t{1} << bit;
  const uint64_t after = kind == FaultKind::Flip       ? code ^ b
                         : kind == FaultKind::StuckAt0 ? code & ~b
                                                       : code | b;
  if (code_before) *code_before = code;
  if (code_after) *code_after = after;
  // decode is exact into double; every value of a storage format <= 32 bits fits a float.
  return static_cast<float>(decode(f, after));
}

std::vector<FaultSpec> parse_faults(const YAML::Node& faults) {
  std::vector<FaultSpec> out;
  if (!faults || faults.IsNull()) return out;
  for (size_t i = 0; i < faults.size(); ++i) {
    const YAML::Node n = faults[i];
    const std::string where = fmt::format("faults[{}]", i);
    Args a(n, where);
    FaultSpec s;
    const std::string site = a.string("site");
    s.site = site == "weights"       ? FaultSite::Weights
             : site == "activations" ? FaultSite::Activations
             : site == "gradients"   ? FaultSite::Gradients
                                     : FaultSite::Metadata;
    s.module = a.string("module");
    s.tensor = a.string("tensor");
    s.count = static_cast<int>(a.integer("count"));
    if (n["bits"] && n["bits"].IsSequence())
      for (size_t j = 0; j < n["bits"].size(); ++j)
        s.bits.push_back(
            static_cast<int>(parse_int(n["bits"][j].Scalar(), fmt::format("{}.bits[{}]", where, j))));
    if (n["element"] && n["element"].IsScalar() && n["element"].Scalar() != "random")
      s.element = parse_int(n["element"].Scalar(), where + ".element");
    if (n["step"] && !n["step"].IsNull()) s.steps.push_back(a.integer("step"));
    if (n["steps"] && !n["steps"].IsNull())
      for (int64_t v : a.integers("steps")) s.steps.push_back(v);
    if (n["probability"] && !n["probability"].IsNull()) s.probability = a.number("probability");
    const std::string kind = a.string("kind");
    s.kind = kind == "stuck_at_0"   ? FaultKind::StuckAt0
             : kind == "stuck_at_1" ? FaultKind::StuckAt1
                                    : FaultKind::Flip;
    s.seed = static_cast<uint64_t>(a.integer("seed"));
    out.push_back(s);
  }
  return out;
}

void check_faults_section(YAML::Node faults) {
  if (!faults || faults.IsNull()) return;
  if (!faults.IsSequence())
    throw RecipeError(
        "faults: expected a list of faults, each a mapping with site, module, bits, when and kind");
  for (size_t i = 0; i < faults.size(); ++i) {
    YAML::Node n = faults[i];
    const std::string where = fmt::format("faults[{}]", i);
    if (!n.IsMap())
      throw RecipeError(fmt::format("{}: expected a mapping (site, module, bits, step, kind, ...)", where));
    check_section(n, fault_keys(), where, "a fault", {"bits", "element"});
    YAML::Node bits = n["bits"];
    if (bits && !(bits.IsScalar() && bits.Scalar() == "random")) {
      if (!bits.IsSequence() || bits.size() == 0)
        throw RecipeError(
            fmt::format("{}.bits: expected a list of bit positions such as [7], or random", where));
      for (size_t j = 0; j < bits.size(); ++j) {
        const int64_t b = parse_int(bits[j].Scalar(), fmt::format("{}.bits[{}]", where, j));
        if (b < 0 || b > 63)
          throw RecipeError(fmt::format(
              "{}.bits[{}]: {} is not a bit position 0..63 (below the format's width)", where, j, b));
      }
    }
    if (!bits) n["bits"] = "random";
    YAML::Node el = n["element"];
    if (el &&
        !(el.IsScalar() && (el.Scalar() == "random" || parse_int(el.Scalar(), where + ".element") >= 0)))
      throw RecipeError(fmt::format("{}.element: expected an element index >= 0 or random", where));
    if (!el) n["element"] = "random";
    const int whens = (n["step"] && !n["step"].IsNull()) + (n["steps"] && !n["steps"].IsNull()) +
                      (n["probability"] && !n["probability"].IsNull());
    if (whens != 1)
      throw RecipeError(
          fmt::format("{}: give exactly one of step, steps or probability (when the fault fires)", where));
  }
}

FaultInjector::FaultInjector(std::vector<FaultSpec> specs) : specs_(std::move(specs)) {}

FaultInjector::~FaultInjector() { uninstall(); }

void FaultInjector::install() {
  set_tensor_hook([this](const Module& m, TensorSite site, const std::string& name, const Format& f,
                         const ReadLayout& layout,
                         const Tensor& t) { return apply(m, site, name, f, layout, t); });
  installed_ = true;
}

void FaultInjector::uninstall() {
  if (installed_) set_tensor_hook(TensorHook());
  installed_ = false;
}

Tensor FaultInjector::apply(const Module& m, TensorSite tsite, const std::string& name, const Format& f,
                            const ReadLayout& layout, const Tensor& t) {
  const FaultSite site = to_fault_site(tsite);
  const TensorId id{m.path(), static_cast<int>(site), name};
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t step = static_cast<int64_t>(m.context().step);
  const int64_t read = reads_[{id, step}]++;
  std::vector<CodeFault> faults;  // this read's changes: new ones (logged), then the stuck ones
  size_t logged = 0;
  bool have_space = false;
  CodeSpace space;
  for (size_t i = 0; i < specs_.size(); ++i) {
    const FaultSpec& s = specs_[i];
    // Metadata faults hit the block metadata of weight reads.
    const bool meta = s.site == FaultSite::Metadata;
    if ((meta ? FaultSite::Weights : s.site) != site || !glob_match(s.module, m.path()) ||
        !glob_match(s.tensor, name))
      continue;
    if (meta && !is_block(f))
      throw std::invalid_argument(
          fmt::format("faults[{}]: site metadata on {}.{}, whose format {} is not a block "
                      "format (no shared scales or exponents to hit)",
                      i, m.path(), name, format_name(f)));
    if (!have_space) space = code_space(f, layout, t);
    have_space = true;
    const int64_t count = meta ? space.metas : space.elements;
    const int width = meta ? space.meta_bits : space.elem_bits;
    if (count == 0) continue;
    for (int b : s.bits)
      if (b >= width)
        throw std::invalid_argument(
            fmt::format("faults[{}]: bit {} of {}.{}: its {} codes in {} have bits 0..{}", i, b, m.path(),
                        name, meta ? "metadata" : "element", format_name(f), width - 1));
    const uint64_t stream = fault_stream(i, m.path(), static_cast<int>(s.site), name, step, read);
    std::vector<std::pair<int64_t, std::vector<int>>> hits;  // code index, bits
    if (s.probability >= 0) {
      // Each code independently: draw < p * 2^32.
      const double scaled = std::ldexp(s.probability, 32);
      const uint64_t threshold = scaled >= 4294967296.0 ? (uint64_t{1} << 32) : static_cast<uint64_t>(scaled);
      const uint64_t bit_stream = mix64(stream ^ 0x62697473ull);
      for (int64_t e = 0; e < count; ++e)
        if (philox_draw(s.seed, stream, static_cast<uint64_t>(e)) < threshold)
          hits.push_back({e, s.bits.empty() ? random_bits(s.seed, bit_stream, static_cast<uint64_t>(e) * 64,
                                                          s.count, width)
                                            : s.bits});
    } else if (std::find(s.steps.begin(), s.steps.end(), step) != s.steps.end()) {
      bool& done = fired_[{i, id, step}];
      if (done) continue;  // once per step: a later read (evaluation) of the same step is not hit again
      done = true;
      if (s.element >= count)
        throw std::invalid_argument(fmt::format("faults[{}]: {} {} of {}.{}, which has {}", i,
                                                meta ? "block" : "element", s.element, m.path(), name,
                                                count));
      const int64_t e =
          s.element >= 0
              ? s.element
              : static_cast<int64_t>(fault_draw_below(s.seed, stream, 0, static_cast<uint64_t>(count)));
      hits.push_back({e, s.bits.empty() ? random_bits(s.seed, stream, 1, s.count, width) : s.bits});
    }
    for (const auto& [e, bits] : hits)
      for (int b : bits) {
        faults.push_back({e, b, s.kind, meta});
        if (s.kind != FaultKind::Flip) stuck_[id].push_back({e, b, s.kind, meta});
      }
  }
  logged = faults.size();
  // Stuck bits set before this read hold at every later read.
  auto it = stuck_.find(id);
  if (it != stuck_.end()) faults.insert(faults.end(), it->second.begin(), it->second.end());
  if (faults.empty()) return t;
  std::vector<FaultEvent> ev;
  Tensor out = fault_codes(f, layout, t, faults, &ev);
  for (size_t k = 0; k < logged; ++k) {
    ev[k].step = step;
    ev[k].site = faults[k].meta ? FaultSite::Metadata : site;
    ev[k].module = m.path();
    ev[k].tensor = name;
    events_.push_back(ev[k]);
    ++total_events_;
  }
  return out;
}

CodeSpace code_space(const Format& f, const ReadLayout& layout, const Tensor& t) {
  CodeSpace c;
  if (!is_block(f)) {
    c.elements = t.numel();
    c.elem_bits = f.nbits;
    return c;
  }
  const BlockParams p = block_params(f);
  ReadLayout l =
      layout.len > 0 ? layout : rows_along_last_dim(t.numel(), t.ndim() > 0 ? t.dim(t.ndim() - 1) : 1);
  const ReadLayout bl = block_layout(p, l);
  c.elements = t.numel();
  c.metas = bl.rows() * blocks_per_row(p, bl);
  c.elem_bits = p.elem_bits;
  c.meta_bits = p.meta_bits;
  return c;
}

Tensor fault_codes(const Format& f, const ReadLayout& layout, const Tensor& t,
                   const std::vector<CodeFault>& faults, std::vector<FaultEvent>* events) {
  // The codes are changed on the host: a row-major download of t (never written: it may be the
  // master weights), uploaded to t's device at the end.
  std::vector<float> values = t.to_vector();
  float* p = values.data();
  const int64_t numel = t.numel();
  auto result = [&] { return Tensor::from_vector(t.shape(), values, t.device()); };
  auto event = [&](const CodeFault& c, uint64_t before, uint64_t after, float vb, float va) {
    if (!events) return;
    FaultEvent e;
    e.element = c.index;
    e.bit = c.bit;
    e.kind = c.kind;
    e.meta = c.meta;
    e.code_before = before;
    e.code_after = after;
    e.before = vb;
    e.after = va;
    events->push_back(e);
  };
  if (!is_block(f)) {
    for (const CodeFault& c : faults) {
      if (c.meta) throw std::invalid_argument(fmt::format("fault: {} has no metadata codes", format_name(f)));
      if (c.index < 0 || c.index >= numel)
        throw std::invalid_argument(fmt::format("fault: element {} of a tensor of {}", c.index, numel));
      uint64_t before = 0, after = 0;
      const float vb = p[c.index];
      p[c.index] = fault_value(f, vb, c.bit, c.kind, &before, &after);
      event(c, before, after, vb, p[c.index]);
    }
    return result();
  }
  // Block formats: the read re-encoded (it must decode back to itself bit for bit), codes changed, decoded.
  const ReadLayout l =
      layout.len > 0 ? layout : rows_along_last_dim(t.numel(), t.ndim() > 0 ? t.dim(t.ndim() - 1) : 1);
  BlockEncoded enc = encode_blocks(f, p, l);
  {
    std::vector<float> back(static_cast<size_t>(numel));
    decode_blocks(f, enc, back.data());
    if (std::memcmp(back.data(), p, back.size() * sizeof(float)) != 0)
      throw std::logic_error(fmt::format(
          "fault: a read in {} does not re-encode to itself; cannot place the fault", format_name(f)));
  }
  std::vector<size_t> element_events;
  for (const CodeFault& c : faults) {
    std::vector<uint32_t>& codes = c.meta ? enc.meta : enc.elements;
    const int width = c.meta ? enc.meta_bits : enc.elem_bits;
    if (c.index < 0 || c.index >= static_cast<int64_t>(codes.size()) || c.bit < 0 || c.bit >= width)
      throw std::invalid_argument(fmt::format("fault: {} code {} bit {} of {} ({} codes of {} bits)",
                                              c.meta ? "metadata" : "element", c.index, c.bit, format_name(f),
                                              codes.size(), width));
    uint32_t& code = codes[static_cast<size_t>(c.index)];
    const uint32_t b = uint32_t{1} << c.bit, before = code;
    code = c.kind == FaultKind::Flip ? code ^ b : c.kind == FaultKind::StuckAt0 ? code & ~b : code | b;
    if (!c.meta && events) element_events.push_back(events->size());
    event(c, before, code, c.meta ? std::nanf("") : p[c.index], std::nanf(""));
  }
  decode_blocks(f, enc, p);
  for (size_t k : element_events) (*events)[k].after = p[(*events)[k].element];
  return result();
}

std::vector<FaultEvent> FaultInjector::take_events() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<FaultEvent> e;
  e.swap(events_);
  return e;
}

std::vector<std::string> report_masks_and_faults(FaultInjector* faults, const std::string& run_dir,
                                                 int64_t epoch, int64_t step) {
  std::vector<std::string> lines;
  const std::vector<MaskStats> stats = mask_monitor().take();
  if (!stats.empty()) {
    std::ofstream j(std::filesystem::path(run_dir) / "sparsity.jsonl", std::ios::app);
    for (const MaskStats& s : stats) j << mask_stats_json(s, epoch, step) << "\n";
    lines.push_back(describe_mask_stats(stats));
  }
  if (faults && !faults->specs().empty()) {
    const std::vector<FaultEvent> events = faults->take_events();
    const std::filesystem::path path = std::filesystem::path(run_dir) / "fault_events.csv";
    const bool fresh = !std::filesystem::exists(path);
    std::ofstream c(path, std::ios::app);
    if (fresh)
      c << csv_row({"step", "site", "module", "tensor", "element", "bit", "kind", "code_before", "code_after",
                    "before", "after"});
    for (const FaultEvent& e : events)
      c << csv_row({fmt::format("{}", e.step), fault_site_name(e.site), e.module, e.tensor,
                    fmt::format("{}", e.element), fmt::format("{}", e.bit), fault_kind_name(e.kind),
                    fmt::format("{:#x}", e.code_before), fmt::format("{:#x}", e.code_after),
                    fmt::format("{}", e.before), fmt::format("{}", e.after)});
    lines.push_back(fmt::format("faults: {} element changes this epoch ({} in all; fault_events.csv)",
                                events.size(), faults->total_events()));
  }
  return lines;
}

}  // namespace emu::train
