#include "train/json.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "data/utf8.h"

namespace emu::train {
namespace {

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}

  Json document() {
    Json v = value(0);
    skip_space();
    if (pos_ != s_.size()) fail("end of the document");
    return v;
  }

 private:
  [[noreturn]] void fail(const char* expected) const {
    std::string found = pos_ < s_.size() ? fmt::format("'{}'", printable(s_[pos_])) : std::string("the end");
    throw JsonError(fmt::format("invalid JSON at byte {}: expected {}, found {}", pos_, expected, found));
  }
  static std::string printable(char c) {
    unsigned char u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x7f ? std::string(1, c) : fmt::format("\\x{:02x}", u);
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool eat(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool literal(const char* word) {
    size_t n = std::char_traits<char>::length(word);
    if (s_.compare(pos_, n, word) != 0) return false;
    pos_ += n;
    return true;
  }

  Json value(int depth) {
    if (depth > 64) fail("at most 64 nested arrays/objects");
    skip_space();
    Json v;
    if (pos_ >= s_.size()) fail("a value");
    char c = s_[pos_];
    if (c == '{') {
      ++pos_;
      v.kind = Json::Kind::Object;
      if (eat('}')) return v;
      do {
        skip_space();
        if (pos_ >= s_.size() || s_[pos_] != '"') fail("a member name in quotes");
        std::string key = string();
        for (const auto& [k, _] : v.members)
          if (k == key)
            throw JsonError(fmt::format("invalid JSON at byte {}: duplicate member \"{}\"", pos_, key));
        if (!eat(':')) fail("':'");
        v.members.emplace_back(std::move(key), value(depth + 1));
      } while (eat(','));
      if (!eat('}')) fail("',' or '}'");
    } else if (c == '[') {
      ++pos_;
      v.kind = Json::Kind::Array;
      if (eat(']')) return v;
      do v.items.push_back(value(depth + 1));
      while (eat(','));
      if (!eat(']')) fail("',' or ']'");
    } else if (c == '"') {
      v.kind = Json::Kind::String;
      v.text = string();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = Json::Kind::Number;
      v.text = number();
    } else if (literal("true")) {
      v.kind = Json::Kind::Bool;
      v.boolean = true;
    } else if (literal("false")) {
      v.kind = Json::Kind::Bool;
    } else if (literal("null")) {
      v.kind = Json::Kind::Null;
    } else {
      fail("a value");
    }
    return v;
  }

  std::string number() {
    size_t start = pos_;
    auto digits = [&] {
      size_t d = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      return pos_ - d;
    };
    if (s_[pos_] == '-') ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '0')
      ++pos_;
    else if (digits() == 0)
      fail("a digit");
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (digits() == 0) fail("a digit after '.'");
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (digits() == 0) fail("a digit in the exponent");
    }
    return s_.substr(start, pos_ - start);
  }

  unsigned hex4() {
    unsigned v = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      if (pos_ >= s_.size()) fail("four hex digits");
      char c = s_[pos_];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f')
        v |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        v |= static_cast<unsigned>(c - 'A' + 10);
      else
        fail("a hex digit");
    }
    return v;
  }

  std::string string() {
    ++pos_;  // the opening quote
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) fail("a closing '\"'");
      char c = s_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) fail("no control characters inside a string");
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      ++pos_;
      if (pos_ >= s_.size()) fail("an escape");
      char e = s_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xd800 && cp < 0xdc00) {  // a surrogate pair
            if (!literal("\\u")) fail("the low half of a surrogate pair");
            unsigned lo = hex4();
            if (lo < 0xdc00 || lo >= 0xe000) fail("the low half of a surrogate pair");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          }
          data::append_utf8(out, cp);
          break;
        }
        default:
          --pos_;
          fail("one of the escapes \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u");
      }
    }
  }

  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

const Json* Json::find(const std::string& key) const {
  for (const auto& [k, v] : members)
    if (k == key) return &v;
  return nullptr;
}

uint64_t Json::as_u64() const {
  if (kind != Kind::Number || text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    throw JsonError(fmt::format("expected a non-negative integer, found {}",
                                kind == Kind::Number ? text : "a non-number"));
  if (text.size() > 1 && text[0] == '0') throw JsonError("integer with a leading zero: " + text);
  uint64_t v = 0;
  for (char c : text) {
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) throw JsonError("integer out of range: " + text);
    v = v * 10 + d;
  }
  return v;
}

Json parse_json(const std::string& text) { return Parser(text).document(); }

std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20)
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        else
          out += c;
    }
  }
  return out + "\"";
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  for (int digits = 1; digits <= 17; ++digits) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) return buf;
  }
  return fmt::format("{:.17g}", v);
}

}  // namespace emu::train
