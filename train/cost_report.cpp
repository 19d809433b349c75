#include "train/cost_report.h"

#include <fmt/format.h>

#include <sstream>

#include "numerics/format_spec.h"
#include "train/json.h"

namespace emu::train {

namespace {

// Thousands separators: step counts run to billions.
std::string grouped(int64_t v) {
  std::string s = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return (v < 0 ? "-" : "") + out;
}

std::string energy_text(double pj) {
  if (pj >= 1e6) return fmt::format("{:.3f} uJ", pj / 1e6);
  if (pj >= 1e3) return fmt::format("{:.3f} nJ", pj / 1e3);
  return fmt::format("{:.3f} pJ", pj);
}

// Nine significant digits: the energies are sums of products of table entries,
// whose last binary digits say nothing.
std::string pj_text(double pj) { return fmt::format("{:.9g}", pj); }

bool is(const CountKey& k, Category c) { return k.category == c; }

void layer_rows(std::ostringstream& o, const CostCounts& c, const CostModel& m, bool training) {
  o << fmt::format("{:<16} {:>14} {:>14} {:>12} {:>12} {:>12} {:>10} {:>14} {:>14} {:>14}\n", "layer",
                   "MACs fwd", training ? "MACs bwd" : "", "masked", "adds", "elem ops", "fn evals",
                   "bits read", "bits written", "energy");
  for (const std::string& layer : c.layers()) {
    auto sum = [&](Category cat, int phase) {
      return c.sum([&](const CountKey& k) {
        return k.layer == layer && k.category == cat && (phase < 0 || k.phase == static_cast<Phase>(phase));
      });
    };
    const Priced p = price(m, c, [&](const CountKey& k) { return k.layer == layer; });
    o << fmt::format("{:<16} {:>14} {:>14} {:>12} {:>12} {:>12} {:>10} {:>14} {:>14} {:>14}\n", layer,
                     grouped(sum(Category::Mac, 0)), training ? grouped(sum(Category::Mac, 1)) : "",
                     grouped(sum(Category::MacMasked, -1)), grouped(sum(Category::Add, -1)),
                     grouped(sum(Category::Op, -1)), grouped(sum(Category::Function, -1)),
                     grouped(sum(Category::Read, -1) + sum(Category::Meta, -1)),
                     grouped(sum(Category::Write, -1)), energy_text(p.total()));
  }
  const Priced p = price(m, c);
  o << fmt::format("{:<16} {:>14} {:>14} {:>12} {:>12} {:>12} {:>10} {:>14} {:>14} {:>14}\n", "total",
                   grouped(c.total(Category::Mac, Phase::Forward)),
                   training ? grouped(c.total(Category::Mac, Phase::Backward)) : "",
                   grouped(c.total(Category::MacMasked)), grouped(c.total(Category::Add)),
                   grouped(c.total(Category::Op)), grouped(c.total(Category::Function)),
                   grouped(c.total(Category::Read) + c.total(Category::Meta)),
                   grouped(c.total(Category::Write)), energy_text(p.total()));
  o << fmt::format(
      "energy: MACs {}, sums {}, element-wise {}, functions {}, memory {} ({} per bit at {}); "
      "total {}; units {:.0f} um2 (MAC units {:.0f} um2)\n",
      energy_text(p.mac), energy_text(p.add), energy_text(p.op), energy_text(p.function),
      energy_text(p.memory), energy_text(bit_cost(m)), m.operands, energy_text(p.total()), p.area_um2,
      p.mac_area_um2);
}

void mac_kinds(std::ostringstream& o, const CostCounts& c, const CostModel& m) {
  std::map<std::tuple<std::string, std::string, std::string, std::string>, int64_t> kinds;
  for (const auto& [k, n] : c.entries())
    if (is(k, Category::Mac)) kinds[{k.a, k.b, k.c, k.mode}] += n;
  if (kinds.empty()) return;
  o << "MACs by operands x accumulator (product):\n";
  for (const auto& [k, n] : kinds) {
    const auto& [a, b, acc, mode] = k;
    const double each = mac_cost(m, a, b, acc, mode).pj;
    o << fmt::format("  {:<36} {:>16} x {:.4f} pJ = {}\n", fmt::format("{} x {} -> {} ({})", a, b, acc, mode),
                     grouped(n), each, energy_text(each * static_cast<double>(n)));
    if (mode.rfind("split:", 0) == 0) {  // what the scheme costs in the units it is built from
      const SplitCost s = split_cost_shape(mode);
      o << fmt::format("  {:<36} {:>16} {} unit multiplies ({} per product)\n", "", grouped(n * s.unit_muls),
                       s.unit, s.unit_muls);
    }
  }
}

std::string entries_json(const CostCounts& c, const CostModel& m) {
  std::string s = "[";
  bool first = true;
  for (const auto& [k, n] : c.entries()) {
    s += first ? "\n" : ",\n";
    first = false;
    s += fmt::format(
        "      {{\"layer\": {}, \"phase\": \"{}\", \"category\": \"{}\", \"a\": {}, \"b\": {}, \"c\": {}, "
        "\"mode\": {}, \"count\": {}, \"pj\": {}}}",
        json_quote(k.layer), phase_name(k.phase), category_name(k.category), json_quote(k.a), json_quote(k.b),
        json_quote(k.c), json_quote(k.mode), n, pj_text(entry_pj(m, k, n)));
  }
  return s + "\n    ]";
}

std::string pass_json(const CostCounts& c, const CostModel& m) {
  const Priced p = price(m, c);
  std::string totals;
  for (Category cat : {Category::Mac, Category::MacMasked, Category::Add, Category::Op, Category::Function,
                       Category::Read, Category::Write, Category::Meta})
    totals += fmt::format("{}\"{}\": {}", totals.empty() ? "" : ", ", category_name(cat), c.total(cat));
  std::string uncounted;
  for (const auto& [op, n] : c.uncounted)
    uncounted += fmt::format("{}{}: {}", uncounted.empty() ? "" : ", ", json_quote(op), n);
  return fmt::format(
      "{{\n    \"totals\": {{{}}},\n    \"energy_pj\": {{\"mac\": {}, \"add\": {}, \"op\": {}, \"function\": "
      "{}, "
      "\"memory\": {}, \"total\": {}}},\n    \"area_um2\": {},\n    \"uncounted\": {{{}}},\n    \"entries\": "
      "{}\n  }}",
      totals, json_number(p.mac), json_number(p.add), json_number(p.op), json_number(p.function),
      json_number(p.memory), json_number(p.total()), json_number(p.area_um2), uncounted, entries_json(c, m));
}

}  // namespace

std::string cost_table(const CostReportHeader& h, const StepCounts& c, const CostModel& m) {
  std::ostringstream o;
  o << fmt::format("cost of {}: {}, batch of {}; model {}{}\n\n", h.recipe, h.model, h.batch, m.name,
                   m.source.empty() ? "" : " (" + m.source + ")");
  o << "one training step (forward, backward, optimizer update):\n";
  layer_rows(o, c.step, m, true);
  mac_kinds(o, c.step, m);
  o << "\none inference pass (forward, evaluation mode):\n";
  layer_rows(o, c.inference, m, false);
  if (!c.step.uncounted.empty()) {
    o << "\nops without a cost count (docs/cost.md):";
    for (const auto& [op, n] : c.step.uncounted) o << fmt::format(" {} x{};", op, n);
    o << "\n";
  }
  return o.str();
}

std::string cost_json(const CostReportHeader& h, const StepCounts& c, const CostModel& m) {
  return fmt::format(
      "{{\n  \"recipe\": {},\n  \"model\": {},\n  \"batch\": {},\n  \"cost_model\": {},\n  \"step\": {},\n  "
      "\"inference\": {}\n}}\n",
      json_quote(h.recipe), json_quote(h.model), h.batch, json_quote(m.name), pass_json(c.step, m),
      pass_json(c.inference, m));
}

std::string cost_csv(const StepCounts& c, const CostModel& m) {
  auto field = [](const std::string& s) {
    if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  };
  std::string s = "pass,layer,phase,category,a,b,c,mode,count,pj\n";
  for (const auto& [pass, counts] : {std::pair<const char*, const CostCounts*>{"step", &c.step},
                                     std::pair<const char*, const CostCounts*>{"inference", &c.inference}})
    for (const auto& [k, n] : counts->entries())
      s += fmt::format("{},{},{},{},{},{},{},{},{},{}\n", pass, field(k.layer), phase_name(k.phase),
                       category_name(k.category), field(k.a), field(k.b), field(k.c), field(k.mode), n,
                       pj_text(entry_pj(m, k, n)));
  return s;
}

const std::vector<std::string>& cost_column_names() {
  static const std::vector<std::string> names = {"step_macs",     "energy_step_pj",  "energy_mac_pj",
                                                 "energy_mem_pj", "energy_infer_pj", "area_um2",
                                                 "mac_area_um2"};
  return names;
}

CostColumns cost_columns(const StepCounts& c, const CostModel& m) {
  const Priced p = price(m, c.step);
  CostColumns col;
  col.step_macs = c.step.total(Category::Mac);
  col.step_pj = p.total();
  col.step_mac_pj = p.mac;
  col.step_memory_pj = p.memory;
  col.inference_pj = price(m, c.inference).total();
  col.area_um2 = p.area_um2;
  col.mac_area_um2 = p.mac_area_um2;
  return col;
}

std::vector<std::string> cost_column_values(const std::optional<CostColumns>& c) {
  if (!c) return std::vector<std::string>(cost_column_names().size());
  auto num = [](double v) { return fmt::format("{:.6g}", v); };
  return {std::to_string(c->step_macs), num(c->step_pj),  num(c->step_mac_pj), num(c->step_memory_pj),
          num(c->inference_pj),         num(c->area_um2), num(c->mac_area_um2)};
}

std::string mac_energy_table(const CostModel& m, const std::vector<std::string>& formats) {
  std::ostringstream o;
  const double ref = mac_cost(m, "fp32", "fp32", "fp32", "exact").pj;
  o << fmt::format("{:<14} {:>10} {:>10} {:>10} {:>10} {:>12}\n", "format", "mul pJ", "add pJ", "MAC pJ",
                   "vs fp32", "MAC um2");
  for (const std::string& f : formats) {
    const std::string name = format_name(parse_format(f));
    const UnitCost mul = mul_cost(m, name, name), add = add_cost(m, name);
    o << fmt::format("{:<14} {:>10.4f} {:>10.4f} {:>10.4f} {:>10.4f} {:>12.0f}\n", f, mul.pj, add.pj,
                     mul.pj + add.pj, (mul.pj + add.pj) / ref, mul.um2 + add.um2);
  }
  return o.str();
}

}  // namespace emu::train
