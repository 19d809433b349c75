// Strict parsing of the scalar values of a recipe, shared by the schema checker
// (config/schema.h), model arguments (config/args.h) and the data section's
// typed reads (config/section.h): the whole text must be the value, so "3x",
// "0.1.2" or "" never silently become a number.
//
// read_* say whether the text is a value; parse_* throw RecipeError
// "<path>: '<text>' is not an integer" (or "a finite number", "true or false").
// Callers with their own message wording (ConfigSection) use read_*.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace emu::config {

// A decimal integer that fits int64 (strtoll, base 10; leading blanks allowed as strtoll allows them).
std::optional<int64_t> read_int(const std::string& text);
// A finite real number (strtod): no inf, nan, overflow or underflow to a range error.
std::optional<double> read_number(const std::string& text);
// A finite binary32, rounded once from the decimal text (strtof, not via a
// double, which could round twice), under the same rules as read_number.
std::optional<float> read_float(const std::string& text);
// true/false as YAML 1.1 spells them: true, True, TRUE, on, On, ON, yes, Yes,
// YES and the matching false, off, no forms.
std::optional<bool> read_bool(const std::string& text);

int64_t parse_int(const std::string& text, const std::string& path);
double parse_number(const std::string& text, const std::string& path);
bool parse_bool(const std::string& text, const std::string& path);

}  // namespace emu::config
