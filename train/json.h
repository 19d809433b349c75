// A small JSON reader and writer: enough for safetensors headers and metric
// lines. The reader is strict (RFC 8259 grammar, no trailing commas, no
// comments, duplicate object keys rejected) because it guards checkpoint files;
// its errors say what was expected and at which byte.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "numerics/printable.h"

namespace emu::train {

class JsonError : public OneLineError {
 public:
  using OneLineError::OneLineError;
};

struct Json {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  std::string text;  // String: the decoded string; Number: the literal as written
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;  // in file order

  bool is_object() const { return kind == Kind::Object; }
  bool is_array() const { return kind == Kind::Array; }
  bool is_string() const { return kind == Kind::String; }
  bool is_number() const { return kind == Kind::Number; }
  // The member `key`, or nullptr.
  const Json* find(const std::string& key) const;
  // A non-negative integer literal (digits only, no sign, fraction or exponent)
  // that fits in uint64; throws JsonError otherwise.
  uint64_t as_u64() const;
};

// Parses exactly one JSON value spanning all of `text` (whitespace around it allowed).
Json parse_json(const std::string& text);

// `s` as a JSON string literal, quotes included (control characters escaped).
std::string json_quote(const std::string& s);
// A double as the shortest JSON number that reads back to the same double
// ("null" for NaN and infinities, which JSON cannot express).
std::string json_number(double v);

}  // namespace emu::train
