// `emutrain calc --batch`: the calculator for tools and tests (docs/calc.md).
//
//   stdin:  mul fp8_e4m3 0.1 0.3          stdout: 0x3d000000
//           dot fp16 fp32 bf16 1 2 3 4            0x41300000
//           add e9m3 1 2                          error: bad format 'e9m3': ...
//
// Exactly one output line per input line, in order, whatever the input holds.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

#include "numerics/printable.h"

namespace emu::calc {

// Reads lines until EOF and answers each one. Returns 0 when every line
// succeeded and 1 when any line failed. Stochastic draws: line i (0-based)
// uses Philox stream i under `seed`.
int run_calc_batch(std::istream& in, std::ostream& out, uint64_t seed);

// One line (without its '\n'): appends the answer (without '\n') to *out and
// returns whether it succeeded; a failure appends "error: <reason>".
bool calc_batch_line(std::string_view line, uint64_t line_index, uint64_t seed, std::string* out);

// A number argument: binary32 bits "0x" + 1..8 hex digits, a decimal number
// (correctly rounded to binary32 by strtof, so 1e400 is inf and 1e-400 is 0),
// or [+-]inf, [+-]infinity, [+-]nan (any case). False with *error set otherwise.
bool parse_binary32(std::string_view token, float* value, std::string* error);

// A code for `decode`: "0x" + 1..16 hex digits or a decimal integer below 2^64.
bool parse_code(std::string_view token, uint64_t* code, std::string* error);

// Every token echoed in a message goes through printable (numerics/printable.h).
using emu::printable;

}  // namespace emu::calc
