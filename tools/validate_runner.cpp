// One cell of `emutrain validate`: inputs prepared once on the host (the
// policy's pre-steps), then each side builds its own tensors from them, runs
// the op (and the layer-level rounding) on its backend, and hands back the
// bytes of every result.
#include "tools/validate_runner.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <exception>

#include "core/draw_key.h"
#include "core/sparsity.h"
#include "numerics/family_name.h"

namespace emu::validate {
namespace {

// Every case draws from its own stream of one fixed seed, so stochastic
// rounding is the same on both sides and from run to run.
constexpr uint64_t kSeed = 0x76616c6964617465ull;  // "validate"

DrawKey case_key(const Case& c) {
  return DrawKey{kSeed, path_hash(std::string(op_name(c.op)) + "/" + c.name)};
}

// Streams of the pre- and post-steps: apart from the op's own draws.
DrawKey step_key(DrawKey key, uint64_t tag, size_t i) {
  return DrawKey{key.seed, mix64(key.stream ^ mix64(tag + 0x9e3779b97f4a7c15ull * (i + 1)))};
}

// The input the N:M pre-step masks: the first weights-like operand, else the
// first data input.
int masked_input(const Case& c) {
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (c.inputs[i].role == Role::Weight) return static_cast<int>(i);
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (c.inputs[i].role == Role::Data) return static_cast<int>(i);
  return -1;
}

// The inputs as CPU tensors after the policy's pre-steps, all run on the CPU
// reference so that both sides start from the same bits and the op under test
// is the only difference (the pre-step ops have their own rows):
//   1. reads: R_weights / R_activations / R_grads by role (block formats through
//      quantize_blocks along the input's rows), not under layer-level emulation;
//   2. ops without a format argument: data inputs rounded to the element format;
//   3. N:M sparsity on weights: the masked input's mask from its dense values.
std::vector<Tensor> prepare_inputs(const Case& c, const Policy& p, DrawKey key) {
  Backend& cpu = default_cpu_backend();
  const LayerNumerics& n = p.numerics;
  const int masked = n.sparsity.on_weights() ? masked_input(c) : -1;
  std::vector<Tensor> out;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const InputSpec& in = c.inputs[i];
    Tensor t = Tensor::from_vector(in.shape, in.values);
    if (in.role == Role::Exact || t.numel() == 0) {
      out.push_back(t);
      continue;
    }
    const ReadLayout layout = in.layout.len > 0
                                  ? in.layout
                                  : rows_along_last_dim(t.numel(), in.shape.empty() ? 1 : in.shape.back());
    const Tensor master = t;
    if (!p.layer_level) {
      const Format& read = in.role == Role::Weight ? n.weights
                           : in.role == Role::Grad ? n.grads
                                                   : n.activations;
      if (!is_plain_fp32(read)) {
        Tensor r = Tensor::zeros(in.shape);
        if (is_block(read)) {
          // One Inf or NaN makes its whole block NaN (the scale of an MX
          // block), which would leave most inputs NaN: the blocks are read
          // with the non-finite values as zeros, then those are put back, so
          // the op sees its specials and every other value on the grid.
          Tensor finite = t.clone();
          float* fp = finite.data();
          for (int64_t e = 0; e < t.numel(); ++e)
            if (!std::isfinite(fp[e])) fp[e] = 0.0f;
          cpu.quantize_blocks(read, finite, r, layout, step_key(key, 1, i));
          const float* m = t.data();
          float* rp = r.data();
          for (int64_t e = 0; e < t.numel(); ++e)
            if (!std::isfinite(m[e])) rp[e] = m[e];
        } else {
          cpu.quantize(read, t, r, step_key(key, 1, i));
        }
        t = r;
      }
      if (c.round_inputs && !is_plain_fp32(p.op.f)) {
        Tensor r = Tensor::zeros(in.shape);
        cpu.quantize(p.op.f, t, r, step_key(key, 2, i));
        t = r;
      }
    }
    if (static_cast<int>(i) == masked) t = nm_sparsify(n.sparsity, layout, master, t, step_key(key, 3, i));
    out.push_back(t);
  }
  return out;
}

// One result's bytes.
struct Collected {
  std::string name;
  HostKind kind = HostKind::F32;
  std::vector<unsigned char> bytes;
  bool canary = false;  // the last element is the host buffer's canary
};

std::vector<unsigned char> tensor_bytes(const Tensor& t) {
  const std::vector<float> v = t.to_vector();
  std::vector<unsigned char> b(v.size() * sizeof(float));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

size_t host_width(HostKind k) { return k == HostKind::F32 ? 4 : 8; }

// A host result's buffer: count elements and one canary after them (compared
// too, so a write past the end shows), each set to h.init.
std::vector<unsigned char> host_init(const HostSpec& h) {
  std::vector<unsigned char> b(static_cast<size_t>(h.count + 1) * host_width(h.kind));
  for (int64_t i = 0; i <= h.count; ++i) {
    unsigned char* at = b.data() + static_cast<size_t>(i) * host_width(h.kind);
    if (h.kind == HostKind::F32) {
      const float v = static_cast<float>(h.init);
      std::memcpy(at, &v, sizeof v);
    } else if (h.kind == HostKind::F64) {
      std::memcpy(at, &h.init, sizeof h.init);
    } else {
      const int64_t v = static_cast<int64_t>(h.init);
      std::memcpy(at, &v, sizeof v);
    }
  }
  return b;
}

// Runs the case on one side: `backend` with tensors of `device`.
std::vector<Collected> run_side(const Case& c, const Policy& p, Backend& backend, Device device,
                                const std::vector<Tensor>& prepared, DrawKey key) {
  std::vector<std::string> in_names, out_names, host_names;
  std::vector<Tensor> bases, views, outs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const InputSpec& in = c.inputs[i];
    // The CPU side gets its own copy too: in-place ops must not touch the prepared values.
    Tensor base = device == Device::Cpu ? prepared[i].clone() : prepared[i].to(device);
    Tensor v = base;
    for (const ViewStep& s : in.views)
      v = s.kind == ViewStep::Transpose ? v.transpose(s.a, s.b) : v.narrow(s.a, s.start, s.length);
    in_names.push_back(in.name);
    bases.push_back(base);
    views.push_back(v);
  }
  for (const OutputSpec& o : c.outputs) {
    out_names.push_back(o.name);
    outs.push_back(Tensor::zeros(o.shape, device));
  }
  std::vector<std::vector<unsigned char>> host;
  for (const HostSpec& h : c.host) {
    host_names.push_back(h.name);
    host.push_back(host_init(h));
  }
  CallArgs args(backend, p.op, key, in_names, views, out_names, outs, host_names, host, prepared);
  c.call(args);
  std::vector<Collected> results;
  // Layer-level emulation: each value the op wrote rounded once to the output
  // format, on the same backend (layers/layer_io.cpp finish_output). The op's
  // own fp32 results are compared too: the rounding could hide a difference.
  const Format& out_format = p.numerics.out();
  if (p.layer_level && !is_plain_fp32(out_format)) {
    for (size_t j = 0; j < outs.size(); ++j)
      if (c.outputs[j].rounded)
        results.push_back({c.outputs[j].name + " before the layer-level rounding", HostKind::F32,
                           tensor_bytes(outs[j]), false});
    for (size_t i = 0; i < views.size(); ++i)
      if (c.inputs[i].inout && c.inputs[i].role != Role::Exact)
        results.push_back({c.inputs[i].name + " before the layer-level rounding", HostKind::F32,
                           tensor_bytes(bases[i]), false});
    for (size_t j = 0; j < outs.size(); ++j)
      if (c.outputs[j].rounded) backend.quantize(out_format, outs[j], outs[j], step_key(key, 4, j));
    for (size_t i = 0; i < views.size(); ++i)
      if (c.inputs[i].inout && c.inputs[i].role != Role::Exact)
        backend.quantize(out_format, views[i], views[i], step_key(key, 5, i));
  }
  for (size_t j = 0; j < outs.size(); ++j)
    results.push_back({c.outputs[j].name, HostKind::F32, tensor_bytes(outs[j]), false});
  // An updated input: its whole base, so that a write outside the view shows.
  for (size_t i = 0; i < bases.size(); ++i)
    if (c.inputs[i].inout)
      results.push_back({c.inputs[i].name, HostKind::F32, tensor_bytes(bases[i]), false});
  for (size_t h = 0; h < host.size(); ++h) results.push_back({c.host[h].name, c.host[h].kind, host[h], true});
  return results;
}

std::string value_string(HostKind k, const unsigned char* at) {
  if (k == HostKind::F32) {
    uint32_t u;
    float f;
    std::memcpy(&u, at, 4);
    std::memcpy(&f, at, 4);
    return fmt::format("0x{:08x} ({:.9g})", u, f);
  }
  if (k == HostKind::F64) {
    uint64_t u;
    double d;
    std::memcpy(&u, at, 8);
    std::memcpy(&d, at, 8);
    return fmt::format("0x{:016x} ({:.17g})", u, d);
  }
  int64_t v;
  std::memcpy(&v, at, 8);
  return fmt::format("{}", v);
}

// "" when equal; else the first differing element, both values and the count.
std::string compare(const Collected& ref, const Collected& dev) {
  if (ref.bytes.size() != dev.bytes.size())
    return fmt::format("{} bytes on the cpu, {} on the device", ref.bytes.size(), dev.bytes.size());
  const size_t w = host_width(ref.kind), n = ref.bytes.size() / w;
  size_t first = n, differ = 0;
  for (size_t i = 0; i < n; ++i)
    if (std::memcmp(ref.bytes.data() + i * w, dev.bytes.data() + i * w, w) != 0) {
      if (first == n) first = i;
      ++differ;
    }
  if (differ == 0) return "";
  const size_t elements = ref.canary ? n - 1 : n;
  return fmt::format("element {} of {}{} ({} differ): cpu {}, device {}", first, elements,
                     ref.canary && first == elements ? " (the canary: a write past the end)" : "", differ,
                     value_string(ref.kind, ref.bytes.data() + first * w),
                     value_string(dev.kind, dev.bytes.data() + first * w));
}

}  // namespace

std::string unsupported_reason(const Backend& device, Op op, const Policy& p) {
  for (Family f : p.families)
    if (!device.supports(op, f)) return fmt::format("{} with {} formats", op_name(op), family_name(f));
  const Format& out = p.numerics.out();
  if (p.layer_level && !is_plain_fp32(out) && !device.supports(Op::quantize, out.family))
    return fmt::format("quantize with {} formats (the layer-level rounding)", family_name(out.family));
  return "";
}

CellResult run_cell(const Sides& sides, Op op, const Policy& p, const std::vector<const Case*>& cases) {
  CellResult r;
  if (cases.empty()) return r;
  r.unsupported = unsupported_reason(sides.device, op, p);
  if (!r.unsupported.empty()) {
    r.verdict = Verdict::Unsupported;
    return r;
  }
  for (const Case* c : cases) {
    ++r.cases;
    auto fail = [&](const std::string& output, const std::string& detail) {
      r.failures.push_back({op_name(op), p.name, c->name, output, detail});
    };
    const DrawKey key = case_key(*c);
    std::vector<Collected> ref, dev;
    try {
      const std::vector<Tensor> prepared = prepare_inputs(*c, p, key);
      try {
        ref = run_side(*c, p, sides.reference, Device::Cpu, prepared, key);
      } catch (const std::exception& e) {
        fail("-", std::string("the cpu reference threw: ") + e.what());
        continue;
      }
      try {
        dev = run_side(*c, p, sides.device, sides.device_kind, prepared, key);
      } catch (const std::exception& e) {
        fail("-", std::string("the device threw: ") + e.what());
        continue;
      }
    } catch (const std::exception& e) {
      fail("-", std::string("preparing the inputs threw: ") + e.what());
      continue;
    }
    for (size_t i = 0; i < ref.size() && i < dev.size(); ++i) {
      const std::string d = compare(ref[i], dev[i]);
      if (!d.empty()) fail(ref[i].name, d);
    }
  }
  r.verdict = r.failures.empty() ? Verdict::Pass : Verdict::Fail;
  return r;
}

}  // namespace emu::validate
