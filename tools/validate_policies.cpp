// The policy set of `emutrain validate`: one table, in the policy keys users
// write in recipes (docs/recipes.md), so each column of the matrix is a policy
// a run could use. Reads (weights / activations / grads) are left fp32 except
// where the policy is about reads: ops must give equal bits for any binary32
// input, and raw inputs reach every rounding path of the op.
#include "tools/validate_policies.h"

#include <algorithm>

#include "numerics/format_spec.h"

namespace emu::validate {

const std::vector<PolicyEntry>& policy_table() {
  static const std::vector<PolicyEntry> table = {
      {"fp32", "plain fp32: the native fast paths", {}},
      {"bf16-mul-fp32-acc",
       "bf16 products, fp32 accumulation, bf16 results",
       {{"mul", "bf16"}, {"acc", "fp32"}, {"out", "bf16"}}},
      {"e6m6",
       "a 13-bit format for products, sums and results",
       {{"mul", "e6m6"}, {"acc", "e6m6"}, {"out", "e6m6"}}},
      {"e5m2sr-e6m9sr",
       "stochastic rounding: e5m2:sr products and results, e6m9:sr accumulation",
       {{"mul", "e5m2:sr"}, {"acc", "e6m9:sr"}, {"out", "e5m2:sr"}}},
      {"posit16_1", "posits everywhere", {{"mul", "posit16_1"}, {"acc", "posit16_1"}, {"out", "posit16_1"}}},
      {"fixed16_8-wrap",
       "16-bit fixed point with 8 fraction bits, wrapping on overflow",
       {{"mul", "fixed16_8:wrap"}, {"acc", "fixed16_8:wrap"}, {"out", "fixed16_8:wrap"}}},
      {"int8-int32",
       "int8 products and results, int32 accumulation",
       {{"mul", "int8"}, {"acc", "int32"}, {"out", "int8"}}},
      {"lut-mitchell-e5m7",
       "Mitchell's approximate multiplier (table for e5m7), fp32 accumulation, e5m7 results",
       {{"mul", "lut:mitchell:e5m7"}, {"acc", "fp32"}, {"out", "e5m7"}}},
      {"split-fp32b",
       "APE's FP32 from three bf16 parts (six partial products per term), fp32 accumulation and results",
       {{"mul", "split:fp32b"}, {"acc", "fp32"}, {"out", "fp32"}}},
      {"split-fp32f-chunked",
       "APE's FP32-F (two fp16 parts, scaled low part) into an e8m10 acc, chunks of 4 promoted to fp32:rtz",
       {{"mul", "split:fp32f"},
        {"acc", "e8m10"},
        {"out", "bf16"},
        {"chunk", "4"},
        {"acc_outer", "fp32:rtz"}}},
      {"split-fp32t",
       "APE's FP32-T (two tf32 parts), fp32 accumulation, fp16 results",
       {{"mul", "split:fp32t"}, {"acc", "fp32"}, {"out", "fp16"}}},
      {"split-auto",
       "APE's automatic choice per output: fp32f when its operands lie in [2^-14, 2^15), else fp32b; fp32 "
       "acc",
       {{"mul", "split:auto"}, {"acc", "fp32"}, {"out", "fp32"}}},
      {"split-int16-int32",
       "APE's INT16 from int8 bytes (operands cvt.rni.sat to int16), int32 accumulation, fp32 results",
       {{"mul", "split:int16"}, {"acc", "int32"}, {"out", "fp32"}}},
      {"chunked-acc-outer",
       "fp16 products and sums in chunks of 5 terms, chunk sums in an fp32 acc_outer",
       {{"mul", "fp16"}, {"acc", "fp16"}, {"out", "fp16"}, {"chunk", "5"}, {"acc_outer", "fp32"}}},
      {"fused-4-rtz",
       "tensor-core style: exact runs of 4 products rounded once toward zero into fp32",
       {{"mul", "exact"}, {"acc", "fp32:rtz"}, {"out", "fp32"}, {"fused", "4"}}},
      {"fused-4-chunked",
       "bf16 products in exact runs of 4 rounded once into an e8m10 acc, chunks of 8 promoted to fp32:sr",
       {{"mul", "bf16"},
        {"acc", "e8m10"},
        {"out", "bf16"},
        {"fused", "4"},
        {"chunk", "8"},
        {"acc_outer", "fp32:sr"}}},
      {"layer-level",
       "layer-level emulation: the op in fp32, each result rounded once to fp8_e4m3 afterwards",
       {{"out", "fp8_e4m3"}, {"emulation", "layer"}}},
      {"mxfp8-e4m3-reads",
       "inputs read through mxfp8_e4m3 blocks (quantize_blocks) before the op; fp32 arithmetic",
       {{"format", "mxfp8_e4m3"}}},
      {"sparsity-2-4",
       "the weights-like operand masked 2:4 by magnitude (nm_mask, apply_mask) before the op",
       {{"sparsity", "2:4"}, {"sparsity_on", "weights"}, {"sparsity_score", "magnitude"}}},
      {"pwl-functions",
       "pwl:8 exp, softmax exp, tanh, sigmoid, gelu, silu; bf16 products, sums and results",
       {{"mul", "bf16"},
        {"acc", "bf16"},
        {"out", "bf16"},
        {"functions.exp", "pwl:8"},
        {"functions.softmax_exp", "pwl:8"},
        {"functions.tanh", "pwl:8"},
        {"functions.sigmoid", "pwl:8"},
        {"functions.gelu", "pwl:8"},
        {"functions.silu", "pwl:8"}}},
      // The tile GEMM's paths for an fp32 accumulator with a posit or a directed-rounding
      // multiplier (backends/cuda/ops/gemm_tile.h PositMulPath, Fp32MulPath).
      {"posit16-mul-fp32-acc",
       "posit16_1 products, fp32 accumulation, bf16 results",
       {{"mul", "posit16_1"}, {"acc", "fp32"}, {"out", "bf16"}}},
      {"fp16rtz-mul-fp32-acc",
       "fp16 products rounded toward zero, fp32 accumulation, fp16 results",
       {{"mul", "fp16:rtz"}, {"acc", "fp32"}, {"out", "fp16"}}},
  };
  return table;
}

const FunctionApprox& OpNumerics::activation(Activation a) const {
  static const FunctionApprox exact{};
  switch (a) {
    case Activation::Relu:
      return exact;
    case Activation::Gelu:
      return function(Function::Gelu);
    case Activation::Silu:
      return function(Function::Silu);
    case Activation::Tanh:
      return function(Function::Tanh);
    case Activation::Sigmoid:
      return function(Function::Sigmoid);
  }
  return exact;
}

namespace {

OpNumerics op_numerics(const LayerNumerics& n) {
  OpNumerics o;
  o.f = n.mac.out;
  o.mac = n.mac;
  o.sum = unfused(n.mac);  // sums never fuse (docs/contract.md section 4.8)
  o.sum.mul_exact = true;
  for (int i = 0; i < static_cast<int>(Function::Count); ++i) o.functions[i] = n.functions[i];
  o.gates.sigmoid = n.function(Function::Sigmoid);
  o.gates.tanh = n.function(Function::Tanh);
  return o;
}

void add_family(std::vector<Family>& v, const Format& f) {
  if (std::find(v.begin(), v.end(), f.family) == v.end()) v.push_back(f.family);
}

Policy resolve(const PolicyEntry& e) {
  NumericsPolicy np;
  Policy p;
  p.name = e.name;
  p.what = e.what;
  for (const auto& [key, value] : e.keys) {
    np.set(key, value, std::string("validate policy ") + e.name);
    p.keys += (p.keys.empty() ? "" : " ") + std::string(key) + "=" + value;
  }
  if (p.keys.empty()) p.keys = "(defaults)";
  p.numerics = np.resolve("validate");
  p.layer_level = p.numerics.emulation == Emulation::Layer;
  if (p.layer_level) {
    // As layers/layer_io.cpp compute_numerics: plain fp32 arithmetic; the
    // functions stay the policy's (they are part of the model, not a rounding).
    LayerNumerics plain;
    for (int i = 0; i < static_cast<int>(Function::Count); ++i) plain.functions[i] = p.numerics.functions[i];
    p.op = op_numerics(plain);
  } else {
    p.op = op_numerics(p.numerics);
  }
  const MacPolicy& m = p.op.mac;
  if (!m.mul_exact) add_family(p.families, m.mul);
  add_family(p.families, m.acc);
  add_family(p.families, m.out);
  if (m.chunk > 0) add_family(p.families, m.acc_outer);
  return p;
}

}  // namespace

const std::vector<Policy>& policies() {
  static const std::vector<Policy> all = [] {
    std::vector<Policy> v;
    for (const PolicyEntry& e : policy_table()) v.push_back(resolve(e));
    return v;
  }();
  return all;
}

}  // namespace emu::validate
