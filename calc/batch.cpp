#include "calc/batch.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <istream>
#include <ostream>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "numerics/approx_mul.h"
#include "numerics/format_spec.h"
#include "numerics/mac.h"
#include "numerics/philox.h"
#include "numerics/round.h"
#include "numerics/split_mul_spec.h"

namespace emu::calc {
namespace {

// A line longer than this is answered with an error and skipped without being
// stored (a dot product of ~5 million terms still fits).
constexpr size_t kMaxLineBytes = size_t{64} << 20;
constexpr size_t kMaxSpecBytes = 64;
constexpr size_t kShownTokenBytes = 40;
constexpr size_t kMaxMessageBytes = 600;

// What a line failed on; the message becomes "error: <message>".
class LineError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string quoted(std::string_view token) { return "'" + printable(token, kShownTokenBytes) + "'"; }

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

std::vector<std::string_view> split_tokens(std::string_view line) {
  std::vector<std::string_view> tokens;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    size_t start = i;
    while (i < line.size() && !is_space(line[i])) ++i;
    if (i > start) tokens.push_back(line.substr(start, i - start));
  }
  return tokens;
}

bool is_hex_digit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
int hex_value(char c) { return is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10; }

bool equals_lower(std::string_view s, std::string_view word) {
  if (s.size() != word.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c | 0x20);
    if (c != word[i]) return false;
  }
  return true;
}

// [+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?
bool is_decimal(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t int_digits = 0, frac_digits = 0;
  while (i < s.size() && is_digit(s[i])) ++i, ++int_digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && is_digit(s[i])) ++i, ++frac_digits;
  }
  if (int_digits + frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && is_digit(s[i])) ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

// Parsed formats by spec string; specs repeat on almost every line.
class FormatCache {
 public:
  const Format& get(std::string_view spec) {
    if (spec.size() > kMaxSpecBytes)
      throw LineError(fmt::format("format spec of {} bytes is too long (at most {}): {}", spec.size(),
                                  kMaxSpecBytes, quoted(spec)));
    auto it = cache_.find(std::string(spec));
    if (it != cache_.end()) return it->second;
    Format f = parse_format(spec);  // throws FormatError naming the bad token
    if (cache_.size() >= 4096) cache_.clear();
    return cache_.emplace(std::string(spec), f).first->second;
  }

 private:
  std::unordered_map<std::string, Format> cache_;
};

enum class Op { Quantize, Add, Sub, Mul, Div, Sqrt, Encode, Decode, Dot };

struct OpName {
  const char* name;
  Op op;
};
constexpr OpName kOps[] = {{"quantize", Op::Quantize}, {"add", Op::Add},       {"sub", Op::Sub},
                           {"mul", Op::Mul},           {"div", Op::Div},       {"sqrt", Op::Sqrt},
                           {"encode", Op::Encode},     {"decode", Op::Decode}, {"dot", Op::Dot}};
constexpr const char* kOpList = "quantize add sub mul div sqrt encode decode dot";

void append_hex(std::string* out, uint64_t v, int digits) {
  char buf[2 + 16];
  buf[0] = '0';
  buf[1] = 'x';
  for (int i = 0; i < digits; ++i) buf[2 + i] = "0123456789abcdef"[(v >> (4 * (digits - 1 - i))) & 15];
  out->append(buf, static_cast<size_t>(2 + digits));
}

void append_binary32(std::string* out, double v) { append_hex(out, float_bits(static_cast<float>(v)), 8); }

float number_arg(std::string_view token, const char* what) {
  float x = 0;
  std::string why;
  if (!parse_binary32(token, &x, &why)) throw LineError(fmt::format("{}: {}", what, why));
  return x;
}

void expect_count(std::string_view op, const std::vector<std::string_view>& tokens, size_t numbers,
                  const char* usage) {
  if (tokens.size() != 2 + numbers)
    throw LineError(fmt::format("{} takes {} (got {} token{} after '{}')", op, usage, tokens.size() - 1,
                                tokens.size() == 2 ? "" : "s", op));
}

class Batch {
 public:
  explicit Batch(uint64_t seed) : seed_(seed), fp32_(parse_format("fp32")) {}

  void line(std::string_view text, uint64_t index, std::string* out) {
    line_ = index;
    std::vector<std::string_view> tokens = split_tokens(text);
    if (tokens.empty()) throw LineError("empty line");
    const OpName* op = nullptr;
    for (const OpName& o : kOps) {
      if (tokens[0] == o.name) op = &o;
    }
    if (!op) throw LineError(fmt::format("unknown op {}; expected one of: {}", quoted(tokens[0]), kOpList));
    if (tokens.size() < 2) throw LineError(fmt::format("{} needs a format after it", op->name));
    switch (op->op) {
      case Op::Encode:
        return encode_line(tokens, out);
      case Op::Decode:
        return decode_line(tokens, out);
      case Op::Dot:
        return dot_line(tokens, out);
      default:
        return arithmetic_line(op->op, tokens, out);
    }
  }

 private:
  uint32_t draw(const Format& f, uint64_t site) const {
    return is_stochastic(f) ? philox_draw(seed_, line_, site) : 0;
  }

  const Format& storage_format(std::string_view op, std::string_view spec) {
    const Format& f = formats_.get(spec);
    require_storage(f, fmt::format("the format of '{}'", op));
    return f;
  }

  // The table of a lut:<name>:<format> spec (built once per process).
  static const ApproxMulTable& approx_table(std::string_view spec) {
    if (spec.size() > kMaxSpecBytes)
      throw LineError(fmt::format("multiplier spec of {} bytes is too long (at most {}): {}", spec.size(),
                                  kMaxSpecBytes, quoted(spec)));
    const ApproxMulSpec s = parse_approx_mul_spec(std::string(spec));  // throws ApproxMulError
    return cached_approx_table(s.name, s.format);
  }

  // The scheme of a split:<scheme> spec.
  static SplitMul split_scheme(std::string_view spec) {
    if (spec.size() > kMaxSpecBytes)
      throw LineError(fmt::format("multiplier spec of {} bytes is too long (at most {}): {}", spec.size(),
                                  kMaxSpecBytes, quoted(spec)));
    try {
      return parse_split_mul(std::string(spec));
    } catch (const std::invalid_argument& e) {
      throw LineError(e.what());
    }
  }

  void arithmetic_line(Op op, const std::vector<std::string_view>& tokens, std::string* out) {
    const std::string_view name = tokens[0];
    const size_t n = op == Op::Quantize || op == Op::Sqrt ? 1 : 2;
    expect_count(name, tokens, n, n == 1 ? "FORMAT X" : "FORMAT A B");
    if (is_split_mul_spec(std::string(tokens[1]))) {  // mul split:<scheme> A B
      if (op != Op::Mul)
        throw LineError(fmt::format("{} is a split multiplier: only mul and dot take it", quoted(tokens[1])));
      // The one-term dot with an fp32 accumulator (docs/contract.md section 5.6).
      MacPolicy p;
      set_split_mul(p, split_scheme(tokens[1]));
      const float x = number_arg(tokens[2], "argument 1"), y = number_arg(tokens[3], "argument 2");
      return append_binary32(out, mac_term(p, 0.0, x, y));
    }
    if (is_approx_mul_spec(std::string(tokens[1]))) {  // mul lut:<name>:<format> A B
      if (op != Op::Mul)
        throw LineError(
            fmt::format("{} is an approximate multiplier: only mul and dot take it", quoted(tokens[1])));
      const ApproxMulTable& t = approx_table(tokens[1]);
      const float x = number_arg(tokens[2], "argument 1"), y = number_arg(tokens[3], "argument 2");
      return append_binary32(out, approx_mul_value(t, x, y));  // reads round into the format inside
    }
    const Format& f = storage_format(name, tokens[1]);
    double a[2] = {0, 0};
    for (size_t j = 0; j < n; ++j) {
      float x = number_arg(tokens[2 + j], j == 0 ? "argument 1" : "argument 2");
      a[j] = quantize(f, x, draw(f, j));  // each read rounds into f: index j
    }
    const uint32_t r = draw(f, n);  // the result: index = number of arguments
    double y = 0;
    switch (op) {
      case Op::Quantize:
        y = a[0];
        break;
      case Op::Add:
        y = format_add(f, a[0], a[1], r);
        break;
      case Op::Sub:
        y = format_sub(f, a[0], a[1], r);
        break;
      case Op::Mul:
        y = format_mul(f, a[0], a[1], r);
        break;
      case Op::Div:
        y = format_div(f, a[0], a[1], r);
        break;
      case Op::Sqrt:
        y = format_sqrt(f, a[0], r);
        break;
      default:
        break;
    }
    append_binary32(out, y);
  }

  void encode_line(const std::vector<std::string_view>& tokens, std::string* out) {
    expect_count("encode", tokens, 1, "FORMAT X");
    const Format& f = storage_format("encode", tokens[1]);
    float x = number_arg(tokens[2], "argument 1");
    double v = quantize(f, x, draw(f, 0));
    uint64_t code = 0;
    if (!encode(f, v, &code))
      throw LineError(fmt::format("{} has no code in {} (every code is finite)",
                                  is_nan(v) ? "NaN" : "the value", format_name(f)));
    append_hex(out, code, (f.nbits + 3) / 4);
  }

  void decode_line(const std::vector<std::string_view>& tokens, std::string* out) {
    expect_count("decode", tokens, 1, "FORMAT CODE");
    const Format& f = storage_format("decode", tokens[1]);
    uint64_t code = 0;
    std::string why;
    if (!parse_code(tokens[2], &code, &why)) throw LineError(why);
    if (f.nbits < 64 && (code >> f.nbits) != 0)
      throw LineError(
          fmt::format("code {} does not fit the {} bits of {}", quoted(tokens[2]), f.nbits, format_name(f)));
    append_binary32(out, decode(f, code));
  }

  // dot MUL ACC OUT [chunk=C] [outer=SPEC] [fused=F] [bias=X] a0 b0 a1 b1 ...
  void dot_line(const std::vector<std::string_view>& tokens, std::string* out) {
    if (tokens.size() < 4)
      throw LineError(
          "dot takes MULSPEC ACCSPEC OUTSPEC [chunk=C] [outer=SPEC] [fused=F] [bias=X] a0 b0 a1 b1 ...");
    MacPolicy p;
    p.mul_exact = tokens[1] == "exact";
    if (is_split_mul_spec(std::string(tokens[1]))) {
      set_split_mul(p, split_scheme(tokens[1]));
    } else if (is_approx_mul_spec(std::string(tokens[1]))) {
      const ApproxMulTable& t = approx_table(tokens[1]);
      p.mul = t.format;
      p.lut = t.lut();
    } else if (!p.mul_exact) {
      p.mul = formats_.get(tokens[1]);
    }
    p.acc = formats_.get(tokens[2]);
    p.out = formats_.get(tokens[3]);
    require_storage(p.out, "the output of 'dot'");
    p.acc_outer = fp32_;
    bool have_chunk = false, have_outer = false, have_bias = false, have_fused = false;
    float bias = 0;
    a_.clear();
    b_.clear();
    for (size_t i = 4; i < tokens.size(); ++i) {
      std::string_view t = tokens[i];
      size_t eq = t.find('=');
      if (eq == std::string_view::npos) {
        float x = number_arg(t, (a_.size() + b_.size()) % 2 == 0 ? "operand a" : "operand b");
        ((a_.size() + b_.size()) % 2 == 0 ? a_ : b_).push_back(x);
        continue;
      }
      std::string_view key = t.substr(0, eq), value = t.substr(eq + 1);
      if (key == "chunk") {
        if (have_chunk) throw LineError("chunk= given twice");
        have_chunk = true;
        uint64_t c = 0;
        bool ok = !value.empty() && value.size() <= 10;
        for (char d : value) {
          ok = ok && is_digit(d);
          c = c * 10 + static_cast<uint64_t>(d - '0');
        }
        if (!ok || c > 0x7fffffff)
          throw LineError(fmt::format("{} is not a chunk size (a decimal integer 0 .. 2^31-1)", quoted(t)));
        p.chunk = static_cast<int>(c);
      } else if (key == "fused") {  // fused runs of F products (docs/contract.md section 4.8)
        if (have_fused) throw LineError("fused= given twice");
        have_fused = true;
        uint64_t f = 0;
        bool ok = !value.empty() && value.size() <= 5;
        for (char d : value) {
          ok = ok && is_digit(d);
          f = f * 10 + static_cast<uint64_t>(d - '0');
        }
        if (!ok || f > 65536)
          throw LineError(
              fmt::format("{} is not a fused run length (a decimal integer 0 .. 65536)", quoted(t)));
        p.fused = static_cast<int>(f);
      } else if (key == "outer") {
        if (have_outer) throw LineError("outer= given twice");
        have_outer = true;
        p.acc_outer = formats_.get(value);
      } else if (key == "bias") {
        if (have_bias) throw LineError("bias= given twice");
        have_bias = true;
        bias = number_arg(value, "bias");
      } else {
        throw LineError(
            fmt::format("unknown dot option {}; allowed: chunk=C outer=SPEC fused=F bias=X", quoted(t)));
      }
    }
    if (have_outer && p.chunk == 0) throw LineError("outer= needs chunk=C with C > 0");
    if (p.fused > 0 && p.chunk > 0 && p.chunk % p.fused != 0)
      throw LineError(
          fmt::format("chunk={} is not a multiple of fused={} (a fused run must not straddle a chunk)",
                      p.chunk, p.fused));
    try {
      check_split_policy(p);
    } catch (const std::invalid_argument& e) {
      throw LineError(e.what());
    }
    if (a_.size() != b_.size())
      throw LineError(fmt::format("dot needs operands in pairs a b; got {} numbers", a_.size() + b_.size()));
    auto draw_site = [this](uint64_t site) { return philox_draw(seed_, line_, site); };
    double y = mac_reduce(p, a_.data(), b_.data(), static_cast<int64_t>(a_.size()),
                          have_bias ? &bias : nullptr, draw_site);
    append_binary32(out, y);
  }

  uint64_t seed_;
  uint64_t line_ = 0;
  Format fp32_;
  FormatCache formats_;
  std::vector<float> a_, b_;
};

// The input, line by line, in large reads; a line over kMaxLineBytes is
// flagged and skipped rather than stored.
class LineReader {
 public:
  explicit LineReader(std::istream& in) : buf_(in.rdbuf()), block_(size_t{1} << 16) {}

  // False at the end of the input. A last line without '\n' is still a line.
  bool next(std::string* line, bool* too_long) {
    line->clear();
    *too_long = false;
    bool any = false;
    while (true) {
      if (pos_ == end_ && !fill()) return any;
      any = true;
      const char* start = block_.data() + pos_;
      const void* nl = std::memchr(start, '\n', end_ - pos_);
      size_t piece = nl ? static_cast<size_t>(static_cast<const char*>(nl) - start) : end_ - pos_;
      if (!*too_long && line->size() + piece > kMaxLineBytes) {
        *too_long = true;
        line->clear();
        line->shrink_to_fit();
      }
      if (!*too_long) line->append(start, piece);
      pos_ += piece;
      if (nl) {
        ++pos_;
        return true;
      }
    }
  }

 private:
  bool fill() {
    if (!buf_) return false;
    std::streamsize n = buf_->sgetn(block_.data(), static_cast<std::streamsize>(block_.size()));
    pos_ = 0;
    end_ = n > 0 ? static_cast<size_t>(n) : 0;
    return end_ > 0;
  }

  std::streambuf* buf_;
  std::vector<char> block_;
  size_t pos_ = 0, end_ = 0;
};

void append_error(std::string* out, std::string_view message) {
  out->append("error: ");
  out->append(printable(message, kMaxMessageBytes));
}

}  // namespace

bool parse_binary32(std::string_view t, float* value, std::string* error) {
  if (t.size() >= 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    size_t digits = t.size() - 2;
    bool ok = digits >= 1 && digits <= 8;
    for (size_t i = 2; ok && i < t.size(); ++i) ok = is_hex_digit(t[i]);
    if (!ok) {
      *error = fmt::format("{} is not a binary32 bit pattern (0x and 1 to 8 hex digits)", quoted(t));
      return false;
    }
    uint32_t bits = 0;
    for (size_t i = 2; i < t.size(); ++i) bits = (bits << 4) | static_cast<uint32_t>(hex_value(t[i]));
    *value = bits_float(bits);
    return true;
  }
  std::string_view body = t;
  bool negative = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  if (equals_lower(body, "inf") || equals_lower(body, "infinity")) {
    *value = negative ? -__builtin_inff() : __builtin_inff();
    return true;
  }
  if (equals_lower(body, "nan")) {
    *value = negative ? -__builtin_nanf("") : __builtin_nanf("");
    return true;
  }
  if (!is_decimal(t)) {
    *error = fmt::format(
        "{} is not a number (a decimal like -1.5e-3, inf, nan, or binary32 bits like 0x3f800000)", quoted(t));
    return false;
  }
  // strtof rounds correctly (glibc), straight to binary32: no double rounding
  // through binary64. Out of range gives +-inf or +-0 (ERANGE), as RNE would.
  std::string copy(t);
  *value = std::strtof(copy.c_str(), nullptr);
  return true;
}

bool parse_code(std::string_view t, uint64_t* code, std::string* error) {
  uint64_t v = 0;
  bool ok = !t.empty();
  if (t.size() >= 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    ok = t.size() >= 3 && t.size() <= 18;
    for (size_t i = 2; ok && i < t.size(); ++i) {
      ok = is_hex_digit(t[i]);
      v = (v << 4) | static_cast<uint64_t>(ok ? hex_value(t[i]) : 0);
    }
  } else {
    for (size_t i = 0; ok && i < t.size(); ++i) {
      ok = is_digit(t[i]) && v <= (~0ull - static_cast<uint64_t>(t[i] - '0')) / 10;
      if (ok) v = v * 10 + static_cast<uint64_t>(t[i] - '0');
    }
  }
  if (!ok) {
    *error = fmt::format("{} is not a code (0x and 1 to 16 hex digits, or a decimal integer below 2^64)",
                         quoted(t));
    return false;
  }
  *code = v;
  return true;
}

bool calc_batch_line(std::string_view line, uint64_t line_index, uint64_t seed, std::string* out) {
  Batch batch(seed);
  try {
    batch.line(line, line_index, out);
    return true;
  } catch (const std::exception& e) {
    append_error(out, e.what());
    return false;
  }
}

int run_calc_batch(std::istream& in, std::ostream& out, uint64_t seed) {
  Batch batch(seed);
  LineReader reader(in);
  std::string line, answer;
  bool too_long = false, failed = false;
  for (uint64_t index = 0; reader.next(&line, &too_long); ++index) {
    size_t mark = answer.size();
    if (too_long) {
      append_error(&answer, fmt::format("line longer than {} bytes", kMaxLineBytes));
      failed = true;
    } else {
      try {
        batch.line(line, index, &answer);
      } catch (const std::exception& e) {  // LineError, FormatError, bad_alloc
        answer.resize(mark);
        append_error(&answer, e.what());
        failed = true;
      }
    }
    answer.push_back('\n');
    if (answer.size() >= (size_t{1} << 16)) {
      out.write(answer.data(), static_cast<std::streamsize>(answer.size()));
      answer.clear();
    }
  }
  out.write(answer.data(), static_cast<std::streamsize>(answer.size()));
  out.flush();
  return failed ? 1 : 0;
}

}  // namespace emu::calc
