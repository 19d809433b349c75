#include "train/cost_model.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "numerics/format_spec.h"

namespace emu::train {

const char* default_cost_model_yaml() {
  return R"yaml(# Energy and area of arithmetic and memory at 45 nm, 0.9 V, from
# M. Horowitz, "Computing's energy problem (and what we can do about it)",
# ISSCC 2014 (the table of the keynote). docs/cost.md explains every rule.
name: horowitz45
source: "Horowitz, ISSCC 2014, 45 nm"
integer:                 # two's complement adders and multipliers, by width in bits
  add:
    8: {pj: 0.03, um2: 36}
    16: {pj: 0.05, um2: 67}
    32: {pj: 0.1, um2: 137}
  mul:
    8: {pj: 0.2, um2: 282}
    32: {pj: 3.1, um2: 3495}
float:                   # IEEE adders and multipliers, by format
  add:
    fp16: {pj: 0.4, um2: 1360}
    fp32: {pj: 0.9, um2: 4184}
  mul:
    fp16: {pj: 1.1, um2: 1640}
    fp32: {pj: 3.7, um2: 7700}
memory:                  # pJ per 64-bit access
  sram_8kb: 10
  sram_32kb: 20
  sram_1mb: 100
  dram: 1300             # Horowitz: 1.3 to 2.6 nJ; the low end
operands: sram_32kb      # where operands, results and metadata are read and written
rules:                   # modelling choices (docs/cost.md)
  posit_decode_adds: 1   # decoding a posit operand costs this many integer additions of its width
  posit_encode_adds: 1   # encoding a posit result likewise
  function_exact: {muls: 5, adds: 5}   # an exact exp/tanh/...: a degree-5 polynomial in its format
  approx_mul_factor: 0.5 # an approximate (table) multiplier costs this share of the exact one
  div_muls: 1            # a division costs this many multiplications of its format
  sqrt_muls: 1
)yaml";
}

namespace {

[[noreturn]] void fail(const std::string& source, const std::string& key, const std::string& what) {
  throw std::runtime_error(fmt::format("cost model {}: {}: {}", source, key, what));
}

void check_keys(const YAML::Node& n, const std::string& source, const std::string& where,
                const std::vector<std::string>& allowed) {
  if (!n.IsMap()) fail(source, where, "expected a map");
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
      std::string names;
      for (const auto& a : allowed) names += (names.empty() ? "" : ", ") + a;
      fail(source, where.empty() ? k : where + "." + k, "unknown key (allowed: " + names + ")");
    }
  }
}

double number(const YAML::Node& n, const std::string& source, const std::string& key) {
  if (!n.IsScalar()) fail(source, key, "expected a number");
  double v = 0;
  try {
    size_t used = 0;
    v = std::stod(n.Scalar(), &used);
    if (used != n.Scalar().size()) throw std::invalid_argument("trailing text");
  } catch (const std::exception&) {
    fail(source, key, "'" + n.Scalar() + "' is not a number");
  }
  if (!(v >= 0) || !std::isfinite(v)) fail(source, key, "'" + n.Scalar() + "' must be a finite number >= 0");
  return v;
}

UnitCost unit(const YAML::Node& n, const std::string& source, const std::string& key) {
  check_keys(n, source, key, {"pj", "um2"});
  if (!n["pj"]) fail(source, key + ".pj", "missing");
  UnitCost u;
  u.pj = number(n["pj"], source, key + ".pj");
  if (n["um2"]) u.um2 = number(n["um2"], source, key + ".um2");
  return u;
}

// How an operand or accumulator format is built, for the scaling rules.
struct Shape {
  bool integer = false;  // fixed point / integer elements: an integer unit of `width`
  int width = 0;
  int p = 0, e = 0;    // otherwise: significand bits (with the hidden one) and exponent bits
  int posit_bits = 0;  // > 0 for posits: decode / encode overhead of this width
};

Shape shape_of(const std::string& name) {
  const Format f = parse_format(name);
  Shape s;
  if (is_block(f)) {  // the element format's unit; the shared scales are metadata
    if (f.block.elem_family == Family::Fixed) {
      s.integer = true;
      s.width = f.block.elem_nbits;
    } else {
      s.p = f.block.elem_man_bits + 1;
      s.e = f.block.elem_exp_bits;
    }
    return s;
  }
  switch (f.family) {
    case Family::Fixed:
      s.integer = true;
      s.width = f.nbits;
      break;
    case Family::Ieee:
      s.p = f.man_bits + 1;
      s.e = f.exp_bits;
      break;
    case Family::Posit: {
      // Most significand bits a posit<n,es> value has (n - 2 - es with the hidden
      // one), and the scale range of regime and exponent: es + log2(2(n - 1)) bits.
      s.p = std::max(1, f.nbits - 2 - f.es);
      int regime = 0;
      while ((1 << regime) < 2 * (f.nbits - 1)) ++regime;
      s.e = f.es + regime;
      s.posit_bits = f.nbits;
      break;
    }
  }
  return s;
}

// An integer unit of width w from the table: linear interpolation between the
// listed widths, proportional to w beyond them (adders); `quadratic` scales the
// nearest listed width below (else the smallest) by (wa wb) / w_ref^2 (multipliers).
UnitCost int_add(const CostModel& m, double w) {
  const auto& t = m.int_add;
  if (t.empty()) throw std::runtime_error("cost model " + m.name + ": integer.add is empty");
  auto hi = t.lower_bound(static_cast<int>(std::ceil(w)));
  if (hi != t.end() && hi->first == w) return hi->second;
  if (hi == t.begin()) return hi->second * (w / hi->first);
  if (hi == t.end()) {
    auto last = std::prev(t.end());
    return last->second * (w / last->first);
  }
  auto lo = std::prev(hi);
  const double a = (w - lo->first) / (hi->first - lo->first);
  return lo->second * (1 - a) + hi->second * a;
}

UnitCost int_mul(const CostModel& m, int wa, int wb) {
  const auto& t = m.int_mul;
  if (t.empty()) throw std::runtime_error("cost model " + m.name + ": integer.mul is empty");
  const int w = std::max(wa, wb);
  auto it = t.upper_bound(w);
  const auto& ref = it == t.begin() ? *it : *std::prev(it);
  return ref.second * (static_cast<double>(wa) * wb / (static_cast<double>(ref.first) * ref.first));
}

const CostModel::FloatEntry& float_ref(const std::vector<CostModel::FloatEntry>& t, int p, const char* what) {
  if (t.empty()) throw std::runtime_error(std::string("cost model: float.") + what + " is empty");
  const CostModel::FloatEntry* best = nullptr;
  for (const auto& e : t)
    if (e.man_bits + 1 <= p && (!best || e.man_bits > best->man_bits)) best = &e;
  if (!best)
    for (const auto& e : t)
      if (!best || e.man_bits < best->man_bits) best = &e;
  return *best;
}

UnitCost posit_overhead(const CostModel& m, const Shape& s, double decode, double encode) {
  if (!s.posit_bits) return {};
  return int_add(m, s.posit_bits) * (decode * m.posit_decode_adds + encode * m.posit_encode_adds);
}

}  // namespace

CostModel parse_cost_model(const std::string& yaml, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    fail(source, "(file)", std::string("not valid YAML: ") + e.what());
  }
  check_keys(root, source, "", {"name", "source", "integer", "float", "memory", "operands", "rules"});
  CostModel m;
  m.name = root["name"] ? root["name"].as<std::string>() : source;
  m.source = root["source"] ? root["source"].as<std::string>() : "";
  if (const YAML::Node i = root["integer"]) {
    check_keys(i, source, "integer", {"add", "mul"});
  }
  // integer.add / integer.mul: width -> {pj, um2}
  for (const char* op : {"add", "mul"}) {
    const YAML::Node t = root["integer"] ? root["integer"][op] : YAML::Node();
    if (!t) fail(source, std::string("integer.") + op, "missing");
    for (const auto& kv : t) {
      const std::string key = std::string("integer.") + op + "." + kv.first.as<std::string>();
      int w = 0;
      try {
        w = std::stoi(kv.first.as<std::string>());
      } catch (const std::exception&) {
        fail(source, key, "a width in bits (an integer >= 1) is expected");
      }
      if (w < 1) fail(source, key, "a width in bits (an integer >= 1) is expected");
      (op[0] == 'a' ? m.int_add : m.int_mul)[w] = unit(kv.second, source, key);
    }
  }
  if (!root["float"]) fail(source, "float", "missing");
  check_keys(root["float"], source, "float", {"add", "mul"});
  for (const char* op : {"add", "mul"}) {
    const YAML::Node t = root["float"][op];
    if (!t) fail(source, std::string("float.") + op, "missing");
    for (const auto& kv : t) {
      const std::string name = kv.first.as<std::string>();
      const std::string key = std::string("float.") + op + "." + name;
      Format f;
      try {
        f = parse_format(name);
      } catch (const std::exception& e) {
        fail(source, key, e.what());
      }
      if (f.family != Family::Ieee || is_block(f))
        fail(source, key, "an IEEE-like format (eXmY, fp16, ...) is expected");
      (op[0] == 'a' ? m.float_add : m.float_mul)
          .push_back({name, f.exp_bits, f.man_bits, unit(kv.second, source, key)});
    }
  }
  if (!root["memory"]) fail(source, "memory", "missing");
  if (!root["memory"].IsMap()) fail(source, "memory", "expected a map of level: pJ per 64-bit access");
  for (const auto& kv : root["memory"]) {
    const std::string k = kv.first.as<std::string>();
    m.memory_pj[k] = number(kv.second, source, "memory." + k);
  }
  if (root["operands"]) m.operands = root["operands"].as<std::string>();
  if (!m.memory_pj.count(m.operands)) {
    std::string names;
    for (const auto& [k, v] : m.memory_pj) names += (names.empty() ? "" : ", ") + k;
    fail(source, "operands", "'" + m.operands + "' is not a level of memory (levels: " + names + ")");
  }
  if (const YAML::Node r = root["rules"]) {
    check_keys(r, source, "rules",
               {"posit_decode_adds", "posit_encode_adds", "function_exact", "approx_mul_factor", "div_muls",
                "sqrt_muls"});
    if (r["posit_decode_adds"])
      m.posit_decode_adds = number(r["posit_decode_adds"], source, "rules.posit_decode_adds");
    if (r["posit_encode_adds"])
      m.posit_encode_adds = number(r["posit_encode_adds"], source, "rules.posit_encode_adds");
    if (r["approx_mul_factor"])
      m.approx_mul_factor = number(r["approx_mul_factor"], source, "rules.approx_mul_factor");
    if (r["div_muls"]) m.div_muls = number(r["div_muls"], source, "rules.div_muls");
    if (r["sqrt_muls"]) m.sqrt_muls = number(r["sqrt_muls"], source, "rules.sqrt_muls");
    if (const YAML::Node f = r["function_exact"]) {
      check_keys(f, source, "rules.function_exact", {"muls", "adds"});
      if (f["muls"]) m.function_muls = number(f["muls"], source, "rules.function_exact.muls");
      if (f["adds"]) m.function_adds = number(f["adds"], source, "rules.function_exact.adds");
    }
  }
  return m;
}

CostModel default_cost_model() { return parse_cost_model(default_cost_model_yaml(), "(default)"); }

CostModel load_cost_model(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("cost model {}: cannot read the file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_cost_model(ss.str(), path);
}

UnitCost add_cost(const CostModel& m, const std::string& format) {
  const Shape s = shape_of(format);
  if (s.integer) return int_add(m, s.width);
  // Significand adder and alignment shifter scale with the significand width;
  // the exponent compare is an integer addition of the exponent width.
  const auto& ref = float_ref(m.float_add, s.p, "add");
  const UnitCost sig = ref.cost + int_add(m, ref.exp_bits) * -1.0;
  return sig * (static_cast<double>(s.p) / (ref.man_bits + 1)) + int_add(m, s.e) + posit_overhead(m, s, 1, 1);
}

UnitCost mul_cost(const CostModel& m, const std::string& a, const std::string& b) {
  const Shape sa = shape_of(a), sb = shape_of(b);
  if (sa.integer && sb.integer) return int_mul(m, sa.width, sb.width);
  // A float (or mixed) product: the significand array grows with pa * pb, the
  // exponent adder with the wider exponent; an integer operand is a significand of its width.
  const int pa = sa.integer ? sa.width : sa.p, pb = sb.integer ? sb.width : sb.p;
  const int e = std::max(sa.integer ? 0 : sa.e, sb.integer ? 0 : sb.e);
  const auto& ref = float_ref(m.float_mul, std::max(pa, pb), "mul");
  const double pr = ref.man_bits + 1;
  const UnitCost sig = ref.cost + int_add(m, ref.exp_bits) * -1.0;
  UnitCost u = sig * (static_cast<double>(pa) * pb / (pr * pr));
  if (e > 0) u = u + int_add(m, e);
  return u + posit_overhead(m, sa, 1, 0) + posit_overhead(m, sb, 1, 0);
}

UnitCost approx_mul_cost(const CostModel& m, const std::string& spec) {
  const std::string format = spec.substr(spec.rfind(':') + 1);  // "lut:<model>:<format>"
  return mul_cost(m, format, format) * m.approx_mul_factor;
}

SplitCost split_cost_shape(const std::string& mode) {
  // Per term, as docs/contract.md section 5.6 defines the schemes: fp32b adds six
  // bf16 products (hi*hi, hi*mi, mi*hi, hi*lo, mi*mi, lo*hi), fp32f and fp32t
  // three, int16 forms the exact product from four int8 byte products (three
  // int32 additions) and adds it once. Splitting the operands is per operand,
  // not per term (a GEMM reuses each split N times), and is not counted.
  if (mode == "split:fp32b") return {6, "bf16", 6, 0};
  if (mode == "split:fp32f") return {3, "fp16", 3, 0};
  if (mode == "split:fp32t") return {3, "tf32", 3, 0};
  if (mode == "split:int16") return {4, "int8", 1, 3};
  // split:auto picks fp32f or fp32b per block from the data, which a static count
  // cannot know: it is priced at its upper bound, fp32b; the training log's
  // split:auto lines give the measured shares (docs/split_mul.md).
  if (mode == "split:auto") return {6, "bf16", 6, 0};
  throw std::invalid_argument("cost model: unknown split scheme '" + mode + "'");
}

UnitCost mac_cost(const CostModel& m, const std::string& a, const std::string& b, const std::string& acc,
                  const std::string& mode) {
  if (mode.rfind("split:", 0) == 0) {
    const SplitCost s = split_cost_shape(mode);
    return mul_cost(m, s.unit, s.unit) * s.unit_muls + add_cost(m, acc) * s.acc_adds +
           add_cost(m, "int32") * s.combine_adds;
  }
  UnitCost mul = mode.rfind("lut:", 0) == 0 ? approx_mul_cost(m, mode) : mul_cost(m, a, b);
  return mul + add_cost(m, acc);
}

UnitCost op_cost(const CostModel& m, const std::string& kind, const std::string& format) {
  if (kind == "add" || kind == "cmp") return add_cost(m, format);
  if (kind == "mul") return mul_cost(m, format, format);
  if (kind == "div") return mul_cost(m, format, format) * m.div_muls;
  if (kind == "sqrt") return mul_cost(m, format, format) * m.sqrt_muls;
  throw std::logic_error("cost model: unknown operation kind " + kind);
}

UnitCost function_cost(const CostModel& m, const std::string& fn, const std::string& mode,
                       const std::string& format) {
  if (mode.rfind("pwl:", 0) == 0) {
    const int pieces = std::stoi(mode.substr(4));
    int compares = 0;
    while ((1 << compares) < pieces) ++compares;
    UnitCost u = add_cost(m, format) * compares;
    const bool slope_only = fn.size() > 6 && fn.compare(fn.size() - 6, 6, "_slope") == 0;
    if (!slope_only) u = u + mul_cost(m, format, format) + add_cost(m, format);
    return u;
  }
  return mul_cost(m, format, format) * m.function_muls + add_cost(m, format) * m.function_adds;
}

double bit_cost(const CostModel& m) { return m.memory_pj.at(m.operands) / 64.0; }

double entry_pj(const CostModel& m, const CountKey& k, int64_t n) {
  const double count = static_cast<double>(n);
  switch (k.category) {
    case Category::Mac:
      return count * mac_cost(m, k.a, k.b, k.c, k.mode).pj;
    case Category::MacMasked:
      return 0;  // not performed
    case Category::Add:
      return count * add_cost(m, k.c).pj;
    case Category::Op:
      return count * op_cost(m, k.mode, k.c).pj;
    case Category::Function:
      return count * function_cost(m, k.mode, k.a, k.c).pj;
    case Category::Read:
    case Category::Write:
    case Category::Meta:
      return count * bit_cost(m);
  }
  return 0;
}

Priced price(const CostModel& m, const CostCounts& c, const std::function<bool(const CountKey&)>& keep) {
  Priced p;
  std::set<std::string> units, mac_units;
  auto unit_area = [&](const std::string& id, const UnitCost& u) {
    if (units.insert(id).second) p.area_um2 += u.um2;
  };
  auto mac_unit_area = [&](const std::string& id, const UnitCost& u) {
    if (mac_units.insert(id).second) p.mac_area_um2 += u.um2;
    unit_area(id, u);
  };
  for (const auto& [k, n] : c.entries()) {
    if (keep && !keep(k)) continue;
    const double e = entry_pj(m, k, n);
    switch (k.category) {
      case Category::Mac:
        p.mac += e;
        mac_unit_area("mul " + k.a + "*" + k.b + " " + k.mode,
                      k.mode.rfind("lut:", 0) == 0 ? approx_mul_cost(m, k.mode) : mul_cost(m, k.a, k.b));
        mac_unit_area("add " + k.c, add_cost(m, k.c));
        break;
      case Category::MacMasked:
        break;
      case Category::Add:
        p.add += e;
        unit_area("add " + k.c, add_cost(m, k.c));
        break;
      case Category::Op:
        p.op += e;
        if (k.mode == "add" || k.mode == "cmp")
          unit_area("add " + k.c, add_cost(m, k.c));
        else
          unit_area("mul " + k.c + "*" + k.c + " exact", mul_cost(m, k.c, k.c));
        break;
      case Category::Function:
        p.function += e;
        break;
      case Category::Read:
      case Category::Write:
      case Category::Meta:
        p.memory += e;
        break;
    }
  }
  return p;
}

}  // namespace emu::train
