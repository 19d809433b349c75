// The case model of `emutrain validate` (docs/validate.md): one named, small,
// deterministic call of one backend op. A case lists its tensor inputs (a base
// tensor of seeded values and the view the op sees of it), the results the
// harness allocates, the host buffers an op writes, and the call itself. The
// runner builds the inputs on the CPU and on the device under test, calls the
// op on each backend and compares every byte of every result.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/tensor.h"
#include "tools/validate_policies.h"

namespace emu::validate {

// What an input is to the policy's read pre-steps (tools/validate_policies.h).
enum class Role : uint8_t {
  Data,    // read in the activations format
  Weight,  // read in the weights format; the operand N:M masks apply to
  Grad,    // read in the grads format
  Exact,   // indices, targets, masks, argmax, optimizer state: never rounded
};

// Which special values the seeded generator mixes into an input.
enum class Specials : uint8_t {
  None,    // only values of the range
  Zeros,   // +-0, subnormals, tiny normals: safe inside long reductions
  Finite,  // those and huge finite values (overflow of narrow formats)
  All,     // those and +-Inf, NaNs (with payloads, both signs)
};

// One step from the base tensor to the view the op sees.
struct ViewStep {
  enum Kind : uint8_t { Transpose, Narrow } kind = Transpose;
  int a = 0, b = 0;               // Transpose: the dimensions; Narrow: a = the dimension
  int64_t start = 0, length = 0;  // Narrow
};

struct InputSpec {
  std::string name;
  Shape shape;                // the base tensor (contiguous)
  std::vector<float> values;  // row-major, numel(shape)
  Role role = Role::Data;
  bool inout = false;           // the op updates it in place: compared after the call
  std::vector<ViewStep> views;  // the operand is this view of the base (empty: the base)
  ReadLayout layout;            // rows of block reads and N:M groups; len 0: rows along the last dimension

  InputSpec& weight() {
    role = Role::Weight;
    return *this;
  }
  InputSpec& grad() {
    role = Role::Grad;
    return *this;
  }
  InputSpec& exact(std::vector<float> v);  // exact values (checked against the shape), Role::Exact
  InputSpec& set(std::vector<float> v);    // given values (checked against the shape), role kept
  InputSpec& io() {
    inout = true;
    return *this;
  }
  InputSpec& t(int a, int b) {
    views.push_back({ViewStep::Transpose, a, b, 0, 0});
    return *this;
  }
  InputSpec& narrow(int dim, int64_t start, int64_t length) {
    views.push_back({ViewStep::Narrow, dim, 0, start, length});
    return *this;
  }
  InputSpec& rows(ReadLayout l) {
    layout = l;
    return *this;
  }
};

// A result tensor the harness allocates (zero-filled, contiguous) on each side.
struct OutputSpec {
  std::string name;
  Shape shape;
  bool rounded = true;  // a value (layer-level emulation rounds it); false for indices and masks
};

// A result in host memory (download, sum_squares, count_nonfinite).
enum class HostKind : uint8_t { F32, F64, I64 };
struct HostSpec {
  std::string name;
  HostKind kind = HostKind::F32;
  int64_t count = 1;
  double init = 0;  // every element's value before the call
};

// What a case's call sees on one side: that side's backend, the policy's
// numerics, the draw key, and that side's tensors by name.
class CallArgs {
 public:
  Backend& backend;
  const OpNumerics& num;
  DrawKey key;

  CallArgs(Backend& b, const OpNumerics& n, DrawKey k, const std::vector<std::string>& in_names,
           std::vector<Tensor>& in, const std::vector<std::string>& out_names, std::vector<Tensor>& out,
           const std::vector<std::string>& host_names, std::vector<std::vector<unsigned char>>& host,
           const std::vector<Tensor>& prepared)
      : backend(b),
        num(n),
        key(k),
        in_names_(in_names),
        in_(in),
        out_names_(out_names),
        out_(out),
        host_names_(host_names),
        host_(host),
        prepared_(prepared) {}

  Tensor& in(const char* name);         // an input (throws when the case has none of that name)
  const Tensor* opt(const char* name);  // an optional input, null when absent
  Tensor& out(const char* name);
  Tensor* opt_out(const char* name);
  float* host_f32(const char* name);
  double* host_f64(const char* name);
  int64_t* host_i64(const char* name);
  // An input's base values after the pre-steps, in CPU memory (row-major): the
  // same buffer on both sides, for ops that read host memory (upload).
  const float* host_in(const char* name);

 private:
  const std::vector<std::string>& in_names_;
  std::vector<Tensor>& in_;
  const std::vector<std::string>& out_names_;
  std::vector<Tensor>& out_;
  const std::vector<std::string>& host_names_;
  std::vector<std::vector<unsigned char>>& host_;
  const std::vector<Tensor>& prepared_;
};

struct Case {
  Op op{};
  std::string name;
  std::string note;  // one line for --list
  std::vector<InputSpec> inputs;
  std::vector<OutputSpec> outputs;
  std::vector<HostSpec> host;
  // The op has no format argument (memory ops, masks): its data inputs are
  // rounded to the policy's element format first, so every policy row still
  // moves values of that format's grid.
  bool round_inputs = false;
  std::function<void(CallArgs&)> call;

  // Builders. in() draws seeded values in [lo, hi] mixed with `sp` specials (the
  // seed is the hash of "op/case/input", so a case never changes when another
  // case is added). A returned reference is valid until the next in().
  InputSpec& in(const std::string& input, Shape shape, Specials sp = Specials::All, float lo = -2.0f,
                float hi = 2.0f);
  Case& out(const std::string& output, Shape shape, bool rounded = true);
  Case& host_out(const std::string& output, HostKind kind, int64_t count, double init = 0);
};

using CaseList = std::vector<Case>;

// Adds a case to `list` and returns it.
Case& add_case(CaseList& list, Op op, const std::string& name, const std::string& note);

// Seeded values: `n` values in [lo, hi] (binary32 of a 24-bit uniform), with
// `sp` specials at about one position in 11, from `seed`.
std::vector<float> seeded_values(uint64_t seed, int64_t n, Specials sp, float lo, float hi);
// `n` integers in [0, bound) as floats, from `seed`.
std::vector<float> seeded_indices(uint64_t seed, int64_t n, int64_t bound);
// A 0/1 mask with prefix lengths: row r of (rows, cols) holds lengths[r] ones then zeros.
std::vector<float> prefix_mask(int64_t rows, int64_t cols, const std::vector<int64_t>& lengths);

// The case lists of each op family (tools/validate_cases_*.cpp).
void add_memory_cases(CaseList& list);
void add_dense_cases(CaseList& list);  // quantize, gemm, quantize_blocks, nm_mask, apply_mask
void add_elementwise_cases(CaseList& list);
void add_nn_cases(CaseList& list);
void add_optim_cases(CaseList& list);
void add_sequence_cases(CaseList& list);
void add_attention_cases(CaseList& list);
void add_recurrent_cases(CaseList& list);
void add_sparse_cases(CaseList& list);

// Every case, built once (values drawn at first use).
const CaseList& all_cases();

}  // namespace emu::validate
