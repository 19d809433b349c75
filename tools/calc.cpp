// `emutrain calc`: a calculator for emulated formats (docs/calc.md).
//
//   emutrain calc fp8_e4m3 mul 0.1 0.3   inputs as read, exact and rounded result, code, ulp error
//   emutrain calc e5m2 info              the format's properties
//   emutrain calc --batch [--seed N]     lines "OP SPEC ARG..." on stdin, one answer line each
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "calc/batch.h"
#include "calc/print.h"
#include "numerics/approx_mul.h"
#include "numerics/format_info.h"
#include "numerics/format_spec.h"
#include "numerics/philox.h"
#include "numerics/round.h"
#include "numerics/split_mul_spec.h"
#include "tools/commands.h"

namespace emu::cli {
namespace {

using calc::binary32_bits;
using calc::code_fields;
using calc::code_hex;
using calc::decimal;
using calc::hex_float;

constexpr const char* kUsage = R"(Usage:
  emutrain calc [--seed N] FORMAT OP [ARG...]
      OP: info | quantize X | add A B | sub A B | mul A B | div A B | sqrt A
          | encode X | decode CODE          (FORMAT alone means info)
  emutrain calc lut:NAME:FORMAT mul A B   an approximate multiplier's product (docs/approx_mul.md)
  emutrain calc split:SCHEME mul A B      a split product, SCHEME fp32b|fp32f|fp32t|int16 (docs/split_mul.md)
      X, A, B: decimal (rounded to binary32 first), inf, nan, or binary32 bits 0x3f800000
      CODE: 0x<hex> or a decimal integer
  emutrain calc --batch [--seed N] < lines
      each line: OP SPEC ARG..., OP one of quantize add sub mul div sqrt encode decode,
      mul and dot also take lut:NAME:FORMAT or split:SCHEME as the multiplier;
      or: dot MULSPEC|exact ACCSPEC OUTSPEC [chunk=C] [outer=SPEC] [fused=F] [bias=X] a0 b0 a1 b1 ...
      one answer line per input line (binary32 bits, code bits, or "error: <reason>");
      exit code 0 when every line succeeded, 1 otherwise
  Options go before FORMAT. Details: docs/calc.md)";

// Rows of cells printed in aligned columns; a note row is a label and free text.
class Table {
 public:
  void row(std::vector<std::string> cells) { rows_.push_back({std::move(cells), false}); }
  void note(std::string label, std::string text) {
    rows_.push_back({{std::move(label), std::move(text)}, true});
  }

  void print(std::ostream& out) const {
    std::vector<size_t> width;
    for (const Row& r : rows_) {
      for (size_t i = 0; i < (r.note ? 1 : r.cells.size()); ++i) {
        if (width.size() <= i) width.push_back(0);
        // A very long decimal overflows its column rather than widening it for every row.
        width[i] = std::max(width[i], std::min<size_t>(r.cells[i].size(), i == 1 ? 32 : 48));
      }
    }
    for (const Row& r : rows_) {
      size_t last = r.cells.size();
      while (last > 0 && r.cells[last - 1].empty()) --last;
      std::string line;
      size_t target = 0;  // where cell i starts when nothing before it overflowed
      for (size_t i = 0; i < last; ++i) {
        if (i > 0) {
          target += width[i - 1] + 2;
          line.append(line.size() + 2 > target ? 2 : target - line.size(), ' ');
        }
        line += r.cells[i];
      }
      out << line << '\n';
    }
  }

 private:
  struct Row {
    std::vector<std::string> cells;
    bool note;
  };
  std::vector<Row> rows_;
};

std::string power_of_two_text(double v) {
  Exact x = normalized(exact_from_double(v));
  if (x.kind == Exact::Finite && (x.sig & (x.sig - 1)) == 0)
    return fmt::format("{}2^{}", x.negative ? "-" : "", exact_log2(x));
  return "";
}

// The cells of a value: decimal, hex float, binary32 bits (or n/a), and the code when given.
std::vector<std::string> value_cells(std::string label, double v, const Format* f = nullptr) {
  std::vector<std::string> cells{std::move(label), decimal(v), hex_float(v)};
  bool is_binary32 = is_nan(v) || static_cast<double>(static_cast<float>(v)) == v;
  cells.push_back(is_binary32 ? binary32_bits(v) : "n/a (not binary32)");
  if (f) {
    uint64_t code = 0;
    if (encode(*f, v, &code)) {
      cells.push_back(code_hex(code, f->nbits));
      cells.push_back(code_fields(*f, code));
    } else {
      cells.push_back(is_nan(v) ? "no code (NaN)" : "no code");
    }
  }
  return cells;
}

float number(const std::string& token, const char* what) {
  float x = 0;
  std::string why;
  if (!calc::parse_binary32(token, &x, &why)) throw std::runtime_error(fmt::format("{}: {}", what, why));
  return x;
}

struct Human {
  Format f;
  std::string name;
  uint64_t seed = 0;
  Table table;

  uint32_t draw(uint64_t index) const { return is_stochastic(f) ? philox_draw(seed, 0, index) : 0; }

  void header(const std::string& op) {
    table.note("format", name + ", rounding " + describe_format(f).rounding);
    table.note("op", op);
    if (is_stochastic(f))
      table.note("", fmt::format("draws: Philox seed {}, stream 0, index = argument number, result index = "
                                 "number of arguments (as line 0 of --batch)",
                                 seed));
    table.row({""});
    table.row({"", "decimal", "hex float", "binary32", "code", "fields"});
  }

  // Shows how a typed argument becomes a value of the format; returns the value.
  double read(const std::string& label, const std::string& token, uint64_t index, const char* read_label) {
    float x = number(token, label.c_str());
    std::string typed = token;
    if (token.size() > 2 && (token[1] == 'x' || token[1] == 'X')) typed += " (binary32 bits)";
    table.row({label, typed});
    table.row(value_cells("  binary32", x));
    uint32_t r = draw(index);
    double v = quantize(f, x, r);
    table.row(value_cells(read_label, v, &f));
    if (is_stochastic(f)) table.note("  draw", fmt::format("0x{:08x} (index {})", r, index));
    return v;
  }

  void result(const std::string& what, const Exact& exact, double rounded, uint32_t r) {
    table.row({what + " exact", decimal(exact), hex_float(exact)});
    table.row(value_cells("  rounded", rounded, &f));
    if (is_stochastic(f)) table.note("  draw", fmt::format("0x{:08x}", r));
    error(exact, rounded);
  }

  void error(const Exact& exact, double rounded) {
    std::string err = calc::ulp_error(f, rounded, exact);
    std::string ulp_text;
    if (!is_nan(rounded) && !is_inf(rounded)) {
      calc::Dyadic ulp = calc::ulp_at(f, rounded);
      double u = calc::approx_double(ulp);
      std::string p = power_of_two_text(u);
      ulp_text = fmt::format("  (rounded - exact, in ulps of the result: ulp = {}{})",
                             p.empty() ? "" : p + " = ", calc::decimal(ulp));
    }
    table.note("  error", err.rfind("n/a", 0) == 0 ? err : err + " ulp" + ulp_text);
  }
};

void print_info(const Format& f, std::ostream& out) {
  FormatInfo info = describe_format(f);
  Table t;
  t.note("format", info.name);
  t.note("family", info.family);
  t.note("layout", info.layout);
  t.note("width", fmt::format("{} bits", info.width));
  t.row({""});
  t.row({"", "decimal", "hex float", "binary32", "code", "fields"});
  auto value = [&](const std::string& label, double v, std::string remark = "") {
    std::vector<std::string> cells = value_cells(label, v, &f);
    std::string p = power_of_two_text(v);
    if (!p.empty()) remark = remark.empty() ? p : p + ", " + remark;
    if (!remark.empty()) {
      cells.resize(6);
      cells.push_back("(" + remark + ")");
    }
    t.row(cells);
  };
  value("max finite", info.max_finite);
  value("lowest", info.lowest);
  switch (f.family) {
    case Family::Ieee:
      value("min normal", info.min_normal);
      if (info.min_subnormal > 0)
        value("min subnormal", info.min_subnormal);
      else
        t.note("min subnormal", "none");
      break;
    case Family::Posit:
      value("minpos", info.min_positive, "no subnormals");
      break;
    case Family::Fixed:
      value("min positive", info.min_positive, "no subnormals");
      break;
  }
  if (info.epsilon > 0) {
    const char* what = f.family == Family::Ieee    ? "2^-fraction bits"
                       : f.family == Family::Posit ? "next posit above 1, minus 1"
                                                   : "2^-f";
    t.row({"epsilon", decimal(info.epsilon), hex_float(info.epsilon), "", "", "",
           fmt::format("({}{})",
                       power_of_two_text(info.epsilon).empty() ? "" : power_of_two_text(info.epsilon) + ", ",
                       what)});
  } else {
    t.note("epsilon", "none (1 is maxpos)");
  }
  t.row({""});
  std::string total = info.width < 64 ? fmt::format("{} = 2^{}", 1ull << info.width, info.width) : "2^64";
  t.note("codes", fmt::format("{}: {} finite ({} zero{}), {} {}, {} Inf", total, info.finite_codes,
                              info.zero_codes, info.zero_codes == 1 ? "" : "s", info.nan_codes,
                              f.family == Family::Posit ? "NaR" : "NaN", info.inf_codes));
  t.note("accumulator-only",
         info.accumulator_only ? "yes: " + info.accumulator_reason : "no (a storage format)");
  t.note("rounding", info.rounding);
  for (size_t i = 0; i < info.specials.size(); ++i) t.note(i == 0 ? "special values" : "", info.specials[i]);
  t.print(out);
}

// `calc lut:<name>:<format> mul A B` (or info): the approximate product next to the exact one.
int run_approx(const std::vector<std::string>& args, std::ostream& out) {
  const ApproxMulSpec spec = parse_approx_mul_spec(args[0]);
  const ApproxMulTable& t = cached_approx_table(spec.name, spec.format);
  const std::string op = args.size() >= 2 ? args[1] : "info";
  const int y = t.format.man_bits;
  const std::string table_note =
      fmt::format("model {}, {} x {} entries (docs/approx_mul.md), validated", t.name, 1u << y, 1u << y);
  if (op == "info") {
    if (args.size() > 2) throw std::runtime_error("calc info takes no arguments");
    Table n;
    n.note("multiplier", t.spec());
    n.note("table", table_note);
    n.print(out);
    print_info(t.format, out);
    return 0;
  }
  if (op != "mul")
    throw std::runtime_error(
        fmt::format("calc: '{}' is an approximate multiplier: only mul (and info) apply, "
                    "not '{}'",
                    args[0], op));
  if (args.size() != 4)
    throw std::runtime_error(fmt::format("calc mul takes A B (got {} arguments)", args.size() - 2));
  Human h;
  h.f = t.format;
  h.name = t.spec();
  h.table.note("table", table_note);
  h.header("mul (approximate)");
  const double a = h.read("a", args[2], 0, "  read");
  const double b = h.read("b", args[3], 1, "  read");
  const double p = approx_mul_value(t, static_cast<float>(a), static_cast<float>(b));
  h.table.row({""});
  const Exact exact = exact_mul(a, b);
  h.table.row({"a * b exact", decimal(exact), hex_float(exact)});
  h.table.row(value_cells("  approx", p, &h.f));
  if (a != 0 && b != 0 && !is_nan(a) && !is_nan(b) && !is_inf(a) && !is_inf(b)) {
    const approx_detail::Decomposed x = approx_detail::decompose(a, y), z = approx_detail::decompose(b, y);
    const uint32_t entry = t.entries[(x.m << y) | z.m];
    h.table.note("  entry", fmt::format("[0x{:x}][0x{:x}] = carry {}, fraction 0x{:x}: significand {}", x.m,
                                        z.m, entry >> y, entry & ((1u << y) - 1),
                                        decimal(std::ldexp(1.0 + std::ldexp(entry & ((1u << y) - 1), -y),
                                                           static_cast<int>(entry >> y)))));
  }
  h.error(exact, p);
  h.table.print(out);
  return 0;
}

// `calc split:<scheme> mul A B`: the parts, the product (one term into an fp32
// accumulator, as `calc --batch` gives it) and its error against the exact product.
int run_split(const std::vector<std::string>& args, std::ostream& out) {
  SplitMul s = parse_split_mul(args[0]);
  if (args.size() != 4 || args[1] != "mul")
    throw std::runtime_error(
        fmt::format("calc: '{}' is a split multiplier: use calc {} mul A B", args[0], args[0]));
  float v[2];
  for (int j = 0; j < 2; ++j) {
    std::string why;
    if (!calc::parse_binary32(args[2 + j], &v[j], &why)) throw std::runtime_error("calc: " + why);
  }
  if (s == SplitMul::Auto) {  // a one-term reduction: its block is the two operands
    s = split_auto_scheme(&v[0], &v[1], 1);
    out << fmt::format("split:auto chose {} ({} fp32f's range 2^-14 <= |x| < 2^15)\n", split_mul_name(s),
                       s == SplitMul::Fp32F ? "both operands inside" : "an operand outside");
  }
  out << fmt::format("multiplier {} ({} unit multiplies per term, docs/contract.md section 5.6)\n",
                     split_mul_name(s), split_unit_multiplies(s));
  for (int j = 0; j < 2; ++j) {
    if (s == SplitMul::Int16) {
      out << fmt::format("{}  {}  int16 {}\n", j == 0 ? "a" : "b", decimal(v[j]),
                         split_detail::to_int16(v[j]));
      continue;
    }
    const SplitParts p = split_parts(s, v[j]);
    out << fmt::format("{}  {}  hi {}  {}{}\n", j == 0 ? "a" : "b", decimal(v[j]), decimal(p.hi),
                       s == SplitMul::Fp32B ? "mi " + decimal(p.mi) + "  " : "",
                       (s == SplitMul::Fp32F ? "lo (x 2^12) " : "lo ") + decimal(p.lo));
  }
  MacPolicy p;
  set_split_mul(p, s);
  const double y = mac_term(p, 0.0, v[0], v[1]);
  const double exact = static_cast<double>(v[0]) * static_cast<double>(v[1]);  // exact in binary64
  out << fmt::format("exact    {}  {}\n", decimal(exact), hex_float(exact));
  out << fmt::format("split    {}  {}\n", decimal(y), hex_float(y));
  if (exact != 0 && std::isfinite(exact) && std::isfinite(y))
    out << fmt::format("relative error  {:.3g}\n", std::fabs(y - exact) / std::fabs(exact));
  return 0;
}

int run_human(std::vector<std::string> args, uint64_t seed, std::ostream& out) {
  if (!args.empty() && args[0] == "--") args.erase(args.begin());
  for (const std::string& a : args) {
    if (a.size() > 2 && a[0] == '-' && a[1] == '-')
      throw std::runtime_error(
          fmt::format("calc: options go before FORMAT ('{}'); see emutrain calc --help", a));
  }
  if (args.empty()) throw std::runtime_error(std::string("calc needs FORMAT and OP, or --batch\n") + kUsage);
  if (is_approx_mul_spec(args[0])) return run_approx(args, out);
  if (is_split_mul_spec(args[0])) return run_split(args, out);
  Human h;
  h.f = parse_format(args[0]);
  h.name = format_name(h.f);
  h.seed = seed;
  const std::string op = args.size() >= 2 ? args[1] : "info";
  const size_t given = args.size() >= 2 ? args.size() - 2 : 0;
  auto expect = [&](size_t n, const char* usage) {
    if (given != n)
      throw std::runtime_error(
          fmt::format("calc {} takes {} (got {} argument{})", op, usage, given, given == 1 ? "" : "s"));
  };
  if (op == "info") {
    expect(0, "no arguments");
    print_info(h.f, out);
    return 0;
  }
  const bool binary = op == "add" || op == "sub" || op == "mul" || op == "div";
  const bool unary = op == "quantize" || op == "sqrt" || op == "encode";
  if (!binary && !unary && op != "decode")
    throw std::runtime_error(
        fmt::format("calc: unknown op '{}'; expected info quantize add sub mul div sqrt encode decode", op));
  require_storage(h.f, fmt::format("the format of 'calc {}'", op));
  // Block formats round whole blocks against shared metadata; one scalar has no block.
  require_element_format(h.f, fmt::format("the format of 'calc {}'", op));
  if (op == "decode") {
    expect(1, "CODE");
    uint64_t code = 0;
    std::string why;
    if (!calc::parse_code(args[2], &code, &why)) throw std::runtime_error(why);
    if (h.f.nbits < 64 && (code >> h.f.nbits) != 0)
      throw std::runtime_error(
          fmt::format("code {} does not fit the {} bits of {}", args[2], h.f.nbits, h.name));
    double v = decode(h.f, code);
    h.table.note("format", h.name);
    h.table.note("op", "decode");
    h.table.note("code", code_hex(code, h.f.nbits) + " = " + code_fields(h.f, code) + "  (" +
                             calc::code_class(h.f, code) + ")");
    h.table.row({""});
    h.table.row({"", "decimal", "hex float", "binary32"});
    h.table.row(value_cells("value", v));
    h.table.print(out);
    return 0;
  }
  expect(binary ? 2 : 1, binary ? "A B" : op == "sqrt" ? "A" : "X");
  h.header(op);
  if (op == "quantize" || op == "encode") {
    float x = number(args[2], "x");
    h.table.row({"x", args[2]});
    h.table.row(value_cells("  binary32", x));
    uint32_t r = h.draw(0);
    double v = quantize(h.f, x, r);
    h.table.row(value_cells("  rounded", v, &h.f));
    if (is_stochastic(h.f)) h.table.note("  draw", fmt::format("0x{:08x} (index 0)", r));
    h.error(exact_from_float(x), v);
    if (op == "encode") {
      uint64_t code = 0;
      h.table.row({""});
      if (encode(h.f, v, &code)) {
        h.table.note("code", code_hex(code, h.f.nbits) + " = " + code_fields(h.f, code) + "  (" +
                                 calc::code_class(h.f, code) + ")");
      } else {
        h.table.note("code", "none: NaN has no code in " + h.name + " (every code is finite)");
      }
    }
    h.table.print(out);
    return 0;
  }
  double a = h.read("a", args[2], 0, "  read");
  double b = 0;
  if (binary) b = h.read("b", args[3], 1, "  read");
  const uint64_t result_index = binary ? 2 : 1;
  uint32_t r = h.draw(result_index);
  h.table.row({""});
  if (op == "add") h.result("a + b", exact_add(a, b, round_down_zero(h.f)), format_add(h.f, a, b, r), r);
  if (op == "sub") h.result("a - b", exact_sub(a, b, round_down_zero(h.f)), format_sub(h.f, a, b, r), r);
  if (op == "mul") h.result("a * b", exact_mul(a, b), format_mul(h.f, a, b, r), r);
  if (op == "div") h.result("a / b", exact_div(a, b), format_div(h.f, a, b, r), r);
  if (op == "sqrt") h.result("sqrt(a)", exact_sqrt(a), format_sqrt(h.f, a, r), r);
  h.table.print(out);
  return 0;
}

}  // namespace

Runner add_calc_command(CLI::App& app) {
  CLI::App* cmd =
      app.add_subcommand("calc", "Calculator for emulated formats: info, rounding, arithmetic, codes");
  struct Options {
    bool batch = false;
    uint64_t seed = 0;
  };
  auto opts = std::make_shared<Options>();
  cmd->add_flag("--batch", opts->batch,
                "Read lines 'OP SPEC ARG...' from stdin; one answer line per input line");
  cmd->add_option("--seed", opts->seed, "Philox seed for :sr formats (default 0)");
  // Everything from FORMAT on is ours: negative numbers like -inf or -1e5 are arguments, not options.
  cmd->prefix_command();
  cmd->footer(kUsage);
  return [opts, cmd]() -> int {
    std::vector<std::string> args = cmd->remaining();
    if (opts->batch) {
      if (!args.empty())
        throw std::runtime_error("calc --batch reads its lines from stdin and takes no arguments");
      return calc::run_calc_batch(std::cin, std::cout, opts->seed);
    }
    return run_human(std::move(args), opts->seed, std::cout);
  };
}

EMU_COMMAND("calc", add_calc_command);

}  // namespace emu::cli
