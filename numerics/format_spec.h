// Format spec strings (docs/contract.md section 2): parse, print, validate.
//
//   parse_format("fp8_e4m3:sat:rtz")  -> Format
//   format_name(f)                    -> "fp8_e4m3:rtz:sat" (canonical; parses back to f)
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "numerics/format.h"
#include "numerics/printable.h"

namespace emu {

// A spec that cannot be parsed or used; what() names the bad token and what is allowed.
class FormatError : public OneLineError {
 public:
  using OneLineError::OneLineError;
};

// Parses a spec. Accumulator-only formats (wider than binary32) are accepted
// here; require_storage() rejects them where a tensor value is needed.
Format parse_format(std::string_view spec);

// The canonical spec string: aliases where one exists, modifiers in the order
// rounding, nosub, sat, wrap, defaults omitted.
std::string format_name(const Format& f);

// Throws FormatError("... is accumulator-only ...") if f's values are not all
// binary32 values. `role` says where it was used, e.g. "weights" or "calc add".
void require_storage(const Format& f, std::string_view role);

// Throws FormatError("... is a block format: block formats are read formats
// only ...") if f is a block format (numerics/block_format.h): its rounding
// needs a whole block, so it cannot be a mul / acc / out format.
void require_element_format(const Format& f, std::string_view role);

// Fills in the derived constants (bias, emin, max_finite, ...) of a Format
// whose fields were set by hand; parse_format() already calls it.
void finalize_format(Format& f);

// The formats the calculator and docs list as examples of each family.
std::string format_grammar_help();

}  // namespace emu
