// `mul: split:<scheme>` specs (docs/contract.md section 5.6): parsing, names,
// and setting a policy's multiplier to a split scheme. The arithmetic itself is
// numerics/split_mul.h.
//
//   set_split_mul(policy, parse_split_mul("split:fp32b"));
#pragma once

#include <stdexcept>
#include <string>

#include "numerics/mac.h"

namespace emu {

// Whether s starts with "split:" (then it must parse, or it is an error).
bool is_split_mul_spec(const std::string& s);
// split:fp32b | split:fp32f | split:fp32t | split:int16; anything else throws
// std::invalid_argument naming the allowed schemes.
SplitMul parse_split_mul(const std::string& s);
// "split:fp32b" ...; "" for None.
std::string split_mul_name(SplitMul s);
// The unit format whose multiplier the scheme uses: bf16, fp16, tf32, int8.
Format split_unit_format(SplitMul s);
// p.split = s, p.mul = its unit format, p.mul_exact = false, no table.
void set_split_mul(MacPolicy& p, SplitMul s);
// Throws std::invalid_argument when p is split and its accumulator rounds
// stochastically: a split term rounds several times and the draw sites of
// docs/contract.md section 4.6 number one accumulation per term.
void check_split_policy(const MacPolicy& p);

}  // namespace emu
