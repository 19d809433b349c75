// The case model's builders, the seeded value generator and the lookup of a
// case's tensors by name.
#include "tools/validate_case.h"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

#include "core/draw_key.h"

namespace emu::validate {
namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Values that break naive kernels: signed zeros, subnormals (the smallest, one
// mid-range, the largest), the smallest normal, values beyond every narrow
// format's range, and (All) infinities and NaNs whose payload and sign a copy
// must keep.
const std::vector<float>& zero_specials() {
  static const std::vector<float> v = {
      0.0f,      -0.0f,   from_bits(0x00000001u), from_bits(0x80300000u), from_bits(0x007fffffu),
      0x1p-126f, 1.0e-30f};
  return v;
}
const std::vector<float>& finite_specials() {
  static const std::vector<float> v = [] {
    std::vector<float> s = zero_specials();
    for (float f : {3.0e38f, -262016.0f, 70000.0f}) s.push_back(f);
    return s;
  }();
  return v;
}
const std::vector<float>& all_specials() {
  static const std::vector<float> v = [] {
    std::vector<float> s = finite_specials();
    for (uint32_t u : {0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7fc12345u, 0xffc00001u})
      s.push_back(from_bits(u));
    return s;
  }();
  return v;
}

uint64_t draw64(uint64_t seed, uint64_t i) { return mix64(seed ^ mix64(0x9e3779b97f4a7c15ull * (i + 1))); }

int find_name(const std::vector<std::string>& names, const char* name) {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<int>(i);
  return -1;
}

}  // namespace

std::vector<float> seeded_values(uint64_t seed, int64_t n, Specials sp, float lo, float hi) {
  std::vector<float> v(static_cast<size_t>(n));
  const std::vector<float>* specials = sp == Specials::All      ? &all_specials()
                                       : sp == Specials::Finite ? &finite_specials()
                                       : sp == Specials::Zeros  ? &zero_specials()
                                                                : nullptr;
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t r = draw64(seed, static_cast<uint64_t>(i));
    if (specials && (r & 0xffu) % 11 == 0) {
      v[static_cast<size_t>(i)] = (*specials)[(r >> 8) % specials->size()];
      continue;
    }
    const double u = static_cast<double>(r >> 40) * 0x1p-24;  // 24 bits in [0, 1)
    v[static_cast<size_t>(i)] =
        static_cast<float>(static_cast<double>(lo) + (static_cast<double>(hi) - lo) * u);
  }
  return v;
}

std::vector<float> seeded_indices(uint64_t seed, int64_t n, int64_t bound) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] =
        static_cast<float>(draw64(seed, static_cast<uint64_t>(i)) % static_cast<uint64_t>(bound));
  return v;
}

std::vector<float> prefix_mask(int64_t rows, int64_t cols, const std::vector<int64_t>& lengths) {
  std::vector<float> v(static_cast<size_t>(rows * cols), 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < lengths.at(static_cast<size_t>(r)) && c < cols; ++c)
      v[static_cast<size_t>(r * cols + c)] = 1.0f;
  return v;
}

InputSpec& InputSpec::exact(std::vector<float> v) {
  if (static_cast<int64_t>(v.size()) != shape_numel(shape))
    throw std::logic_error(
        fmt::format("validate case input {}: {} values for shape {}", name, v.size(), shape_string(shape)));
  values = std::move(v);
  role = Role::Exact;
  return *this;
}

InputSpec& InputSpec::set(std::vector<float> v) {
  const Role r = role;
  exact(std::move(v));
  role = r;
  return *this;
}

InputSpec& Case::in(const std::string& input, Shape shape, Specials sp, float lo, float hi) {
  InputSpec s;
  s.name = input;
  s.values = seeded_values(path_hash(std::string(op_name(op)) + "/" + name + "/" + input), shape_numel(shape),
                           sp, lo, hi);
  s.shape = std::move(shape);
  inputs.push_back(std::move(s));
  return inputs.back();
}

Case& Case::out(const std::string& output, Shape shape, bool rounded) {
  outputs.push_back({output, std::move(shape), rounded});
  return *this;
}

Case& Case::host_out(const std::string& output, HostKind kind, int64_t count, double init) {
  host.push_back({output, kind, count, init});
  return *this;
}

Case& add_case(CaseList& list, Op op, const std::string& name, const std::string& note) {
  list.emplace_back();
  Case& c = list.back();
  c.op = op;
  c.name = name;
  c.note = note;
  return c;
}

Tensor& CallArgs::in(const char* name) {
  const int i = find_name(in_names_, name);
  if (i < 0) throw std::logic_error(fmt::format("validate case: no input named {}", name));
  return in_[static_cast<size_t>(i)];
}

const Tensor* CallArgs::opt(const char* name) {
  const int i = find_name(in_names_, name);
  return i < 0 ? nullptr : &in_[static_cast<size_t>(i)];
}

Tensor& CallArgs::out(const char* name) {
  Tensor* t = opt_out(name);
  if (!t) throw std::logic_error(fmt::format("validate case: no output named {}", name));
  return *t;
}

Tensor* CallArgs::opt_out(const char* name) {
  const int i = find_name(out_names_, name);
  return i < 0 ? nullptr : &out_[static_cast<size_t>(i)];
}

namespace {

unsigned char* host_buffer(const std::vector<std::string>& names,
                           std::vector<std::vector<unsigned char>>& bufs, const char* name) {
  const int i = find_name(names, name);
  if (i < 0) throw std::logic_error(fmt::format("validate case: no host output named {}", name));
  return bufs[static_cast<size_t>(i)].data();
}

}  // namespace

float* CallArgs::host_f32(const char* name) {
  return reinterpret_cast<float*>(host_buffer(host_names_, host_, name));
}
double* CallArgs::host_f64(const char* name) {
  return reinterpret_cast<double*>(host_buffer(host_names_, host_, name));
}
int64_t* CallArgs::host_i64(const char* name) {
  return reinterpret_cast<int64_t*>(host_buffer(host_names_, host_, name));
}

const float* CallArgs::host_in(const char* name) {
  const int i = find_name(in_names_, name);
  if (i < 0) throw std::logic_error(fmt::format("validate case: no input named {}", name));
  return prepared_[static_cast<size_t>(i)].data();
}

const CaseList& all_cases() {
  static const CaseList all = [] {
    CaseList v;
    add_memory_cases(v);
    add_dense_cases(v);
    add_elementwise_cases(v);
    add_nn_cases(v);
    add_optim_cases(v);
    add_sequence_cases(v);
    add_attention_cases(v);
    add_recurrent_cases(v);
    add_sparse_cases(v);
    return v;
  }();
  return all;
}

}  // namespace emu::validate
