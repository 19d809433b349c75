// `mul: split:<scheme>` specs (numerics/split_mul_spec.h).
#include "numerics/split_mul_spec.h"

#include "numerics/format_spec.h"

namespace emu {

namespace {
constexpr const char* kAllowed = "split:fp32b, split:fp32f, split:fp32t, split:int16, split:auto";
}

bool is_split_mul_spec(const std::string& s) { return s.rfind("split:", 0) == 0; }

SplitMul parse_split_mul(const std::string& s) {
  if (s == "split:fp32b") return SplitMul::Fp32B;
  if (s == "split:fp32f") return SplitMul::Fp32F;
  if (s == "split:fp32t") return SplitMul::Fp32T;
  if (s == "split:int16") return SplitMul::Int16;
  if (s == "split:auto") return SplitMul::Auto;
  throw std::invalid_argument("'" + s + "' is not a split multiplier; allowed: " + kAllowed);
}

std::string split_mul_name(SplitMul s) {
  switch (s) {
    case SplitMul::Fp32B:
      return "split:fp32b";
    case SplitMul::Fp32F:
      return "split:fp32f";
    case SplitMul::Fp32T:
      return "split:fp32t";
    case SplitMul::Int16:
      return "split:int16";
    case SplitMul::Auto:
      return "split:auto";
    default:
      return "";
  }
}

Format split_unit_format(SplitMul s) {
  switch (s) {
    case SplitMul::Fp32B:
      return parse_format("bf16");
    case SplitMul::Fp32F:
    case SplitMul::Auto:
      return parse_format("fp16");  // its cheaper choice; fp32b's units are bf16
    case SplitMul::Fp32T:
      return parse_format("tf32");
    case SplitMul::Int16:
      return parse_format("int8");
    default:
      return Format{};
  }
}

void set_split_mul(MacPolicy& p, SplitMul s) {
  p.mul_exact = false;
  p.lut = ApproxMulLut{};
  p.split = s;
  p.mul = split_unit_format(s);
}

void check_split_policy(const MacPolicy& p) {
  if (p.mul_exact || p.split == SplitMul::None || !is_stochastic(p.acc)) return;
  throw std::invalid_argument(split_mul_name(p.split) + " with acc " + format_name(p.acc) +
                              ": a split term rounds several times into acc and only one draw site per term "
                              "exists (docs/contract.md section 5.6); use a deterministic acc (:sr stays "
                              "available on acc_outer with chunk)");
}

}  // namespace emu
