// `emutrain search`: the accuracy-preserving recursive binary search over
// exponent and mantissa widths (train/format_search.h, docs/studies.md), each
// visited format trained as a sweep run (cached: a format trained before in the
// same --out is not trained again).
//
//   emutrain search RECIPE [--threshold 1.0] [--metric final_test_acc] [--start e8m23] [--out DIR]
//                   [--jobs J] [--threads T] [--set K=V]... [--key numerics.default.format]
//                   [--template e{exp}m{man}] [--baseline fp32] [--min-exp 2] [--min-man 1]
//                   [--minimize bits|energy] [--candidates fp16,bf16,e5m2,fixed16_8] [--cost-model FILE]
//
// --minimize energy: the cheapest candidate (energy of one training step,
// docs/cost.md) within the threshold, candidates trained in ascending energy
// (train/format_search.h search_min_energy); the candidates are --candidates or
// every eXmY of the template between the minimum and the start widths.
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include "numerics/format_spec.h"
#include "tools/commands.h"
#include "train/atomic_file.h"
#include "train/cost_report.h"
#include "train/cost_step.h"
#include "train/format_search.h"
#include "train/recipe.h"
#include "train/sweep_runner.h"

namespace emu::cli {
namespace {
namespace fs = std::filesystem;

struct SearchArgs {
  std::string recipe, out, metric = "final_test_acc", start = "e8m23", key = "numerics.default.format",
                           tmpl = "e{exp}m{man}", baseline = "fp32";
  double threshold = 1.0;
  int jobs = 2, threads = 0, min_exp = 2, min_man = 1;
  std::vector<std::string> sets;
  std::string minimize = "bits", candidates, cost_model;
};

std::string safe(const std::string& s) {
  std::string out;
  for (char c : s)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+') ? c : '_';
  return out;
}

class Search {
 public:
  explicit Search(const SearchArgs& a) : a_(a) {
    bool known = false;
    for (const std::string& m : train::metric_names()) known = known || m == a.metric;
    if (!known || a.metric == "final_train_loss")
      throw std::runtime_error(fmt::format(
          "--metric {}: want one of final_test_acc, final_val_acc, best_test_acc, best_val_acc", a.metric));
    recipe_ = train::load_recipe(a.recipe, with_format(a.baseline));  // checks recipe, sets and key
    out_ = a.out.empty() ? (fs::path("sweeps") / ("search-" + fs::path(a.recipe).stem().string())).string()
                         : a.out;
    ro_.recipe = fs::absolute(a.recipe).lexically_normal().string();
    ro_.runs_dir = (fs::path(out_) / "runs").string();
    ro_.start_log = (fs::path(out_) / "search_log.txt").string();
    ro_.jobs = a.jobs;
    fs::create_directories(ro_.runs_dir);
    spec_.source = a.recipe;
    for (const char* n : {"format", "exp", "man"}) spec_.axes.push_back({n, "", {}, 0});
    seed_ = recipe_.root["seed"] ? std::stoull(recipe_.root["seed"].Scalar()) : 0;
  }

  std::vector<std::string> with_format(const std::string& format) const {
    std::vector<std::string> s = a_.sets;
    s.push_back(a_.key + "=" + format);
    if (a_.threads >= 0) s.insert(s.begin(), "threads=" + std::to_string(a_.threads));
    return s;
  }

  std::string format_of(int e, int m) const {
    return train::expand_template(a_.tmpl, {{"exp", std::to_string(e)}, {"man", std::to_string(m)}});
  }

  // The metric of each format (NaN: diverged or failed), training the ones not trained before.
  std::vector<double> evaluate(const std::vector<std::string>& formats) {
    std::vector<train::RunJob> jobs;
    std::vector<std::optional<train::RunRecord>> records;
    std::vector<size_t> index;
    for (const std::string& f : formats) {
      const Format parsed = parse_format(f);
      const std::string id = "format=" + safe(format_name(parsed));
      auto it = std::find_if(jobs.begin(), jobs.end(), [&](const train::RunJob& j) { return j.id == id; });
      index.push_back(static_cast<size_t>(it - jobs.begin()));
      if (it != jobs.end()) continue;
      jobs.push_back({id, f, with_format(f)});
      records.push_back(train::read_run((fs::path(ro_.runs_dir) / id).string()));
      cached_[id] = records.back().has_value();
      widths_[id] = {format_name(parsed), parsed.exp_bits, parsed.man_bits};
    }
    if (!train::run_jobs(ro_, jobs, &records, [](size_t) {})) {
      std::cout << fmt::format("search interrupted (signal {}); run the same command again to continue\n",
                               train::interrupting_signal());
      std::exit(128 + train::interrupting_signal());
    }
    std::vector<double> out;
    for (size_t k = 0; k < formats.size(); ++k) {
      const train::RunJob& j = jobs[index[k]];
      const train::RunRecord& r = *records[index[k]];
      if (!seen_.count(j.id)) {
        seen_[j.id] = order_.size();
        order_.push_back({j.id, r});
      }
      last_id_ = j.id;
      out.push_back(train::metric_value(r, a_.metric).value_or(NAN));
    }
    write_results();
    return out;
  }

  void write_results() {
    std::vector<train::SweepPoint> points;
    std::vector<train::SweepRun> runs;
    std::vector<std::optional<train::RunRecord>> records;
    for (const auto& [id, r] : order_) {
      const Width& w = widths_[id];
      train::SweepPoint p;
      p.id = id;
      p.values = {w.name, std::to_string(w.exp), std::to_string(w.man)};
      train::SweepRun run;
      run.point = points.size();
      run.seed = seed_;
      run.id = id;
      points.push_back(p);
      runs.push_back(run);
      records.push_back(r);
    }
    std::vector<std::optional<train::CostColumns>> costs;
    for (const auto& [id, r] : order_) {
      auto it = costs_.find(id);
      costs.push_back(it == costs_.end() ? std::nullopt : std::optional<train::CostColumns>(it->second));
    }
    train::write_file_atomic(
        (fs::path(out_) / "results.csv").string(),
        train::results_csv(spec_, points, runs, records, ro_.runs_dir, costs_.empty() ? nullptr : &costs));
  }

  // --minimize energy: count every candidate's step, then train in ascending energy.
  int run_energy() {
    const train::CostModel model =
        a_.cost_model.empty() ? train::default_cost_model() : train::load_cost_model(a_.cost_model);
    std::vector<std::string> formats;
    if (!a_.candidates.empty()) {
      std::string item;
      for (size_t i = 0; i <= a_.candidates.size(); ++i) {
        if (i == a_.candidates.size() || a_.candidates[i] == ',') {
          if (!item.empty()) formats.push_back(item);
          item.clear();
        } else {
          item += a_.candidates[i];
        }
      }
    } else {
      const Format start = parse_format(a_.start);
      for (int e = a_.min_exp; e <= start.exp_bits; ++e)
        for (int m = a_.min_man; m <= start.man_bits; ++m) formats.push_back(format_of(e, m));
    }
    std::cout << fmt::format(
                     "search: the cheapest of {} candidates (energy of one training step, {}) with {} "
                     "within {} of the {} baseline; out {}\n",
                     formats.size(), model.name, a_.metric, a_.threshold, a_.baseline, out_)
              << std::flush;
    std::vector<train::EnergyCandidate> cands;
    for (const std::string& f : formats) {
      const Format parsed = parse_format(f);  // an unknown format is an error naming it
      train::EnergyCandidate c;
      c.format = f;
      if (parsed.family == Family::Ieee && !is_block(parsed))
        c.family = "ieee", c.width1 = parsed.exp_bits, c.width2 = parsed.man_bits;
      else if (parsed.family == Family::Fixed)
        c.family = "fixed", c.width1 = parsed.nbits, c.width2 = parsed.frac_bits;
      else
        c.family = format_name(parsed);
      const train::StepCounts counts = train::count_recipe(train::load_recipe(a_.recipe, with_format(f)));
      const train::CostColumns col = train::cost_columns(counts, model);
      c.energy = col.step_pj;
      costs_["format=" + safe(format_name(parsed))] = col;
      cands.push_back(c);
    }
    {
      const Format b = parse_format(a_.baseline);
      costs_["format=" + safe(format_name(b))] = train::cost_columns(
          train::count_recipe(train::load_recipe(a_.recipe, with_format(a_.baseline))), model);
    }
    const double baseline = evaluate({a_.baseline})[0];
    const double base_pj = costs_["format=" + safe(format_name(parse_format(a_.baseline)))].step_pj;
    std::cout << fmt::format("  {:<14} {:>8}  {:>12.4g} pJ  baseline\n", a_.baseline, show(baseline), base_pj)
              << std::flush;
    if (std::isnan(baseline))
      throw std::runtime_error("the baseline run did not finish (see its output.log)");
    train::EnergySearchResult res = train::search_min_energy(
        cands, baseline, a_.threshold, [&](size_t i) { return evaluate({cands[i].format})[0]; },
        [&](const train::EnergyVisit& v) {
          const train::EnergyCandidate& c = cands[v.candidate];
          std::cout << fmt::format("  {:<14} {:>8}  {:>12.4g} pJ  {}\n", c.format,
                                   v.skipped ? "-" : show(v.metric), c.energy,
                                   v.skipped ? "skipped (a wider one failed)"
                                   : v.pass  ? "pass"
                                             : "FAIL")
                    << std::flush;
        });
    if (!res.found) {
      std::cout << "no candidate passes\n";
      return 0;
    }
    const train::EnergyCandidate& best = cands[res.best];
    std::cout << fmt::format(
        "cheapest passing format: {} ({:.4g} pJ per training step, {:.1f}% of {}'s); results in "
        "{}\n",
        best.format, best.energy, 100 * best.energy / base_pj, a_.baseline,
        (fs::path(out_) / "results.csv").string());
    return 0;
  }

  int run() {
    if (a_.minimize == "energy") return run_energy();
    if (a_.minimize != "bits")
      throw std::runtime_error("--minimize " + a_.minimize + ": want bits or energy");
    const Format start = parse_format(a_.start);
    if (start.family != Family::Ieee || is_block(start))
      throw std::runtime_error(fmt::format("--start {}: want a floating-point format eXmY", a_.start));
    train::FormatSearchOptions o;
    o.start_exp = start.exp_bits;
    o.start_man = start.man_bits;
    o.min_exp = a_.min_exp;
    o.min_man = a_.min_man;
    o.threshold = a_.threshold;
    for (int e = o.min_exp; e <= o.start_exp; ++e)
      parse_format(format_of(e, o.min_man));  // the template parses
    std::cout << fmt::format(
                     "search over {} = {} from {} (exponent {}..{}, mantissa {}..{}); {} within {} of the "
                     "{} baseline; out {}\n",
                     a_.key, a_.tmpl, a_.start, o.min_exp, o.start_exp, o.min_man, o.start_man, a_.metric,
                     a_.threshold, a_.baseline, out_)
              << std::flush;
    // The baseline and the start are independent: trained together.
    std::vector<double> first = evaluate({a_.baseline, format_of(o.start_exp, o.start_man)});
    const double baseline = first[0];
    std::cout << fmt::format("  {:<14} {:>8}  baseline{}\n", a_.baseline, show(baseline),
                             cached_[last_baseline_id()] ? " (trained before)" : "")
              << std::flush;
    if (std::isnan(baseline))
      throw std::runtime_error("the baseline run did not finish (see its output.log)");
    auto metric = [&](int e, int m) { return evaluate({format_of(e, m)})[0]; };
    train::FormatSearchResult res =
        train::search_formats(o, baseline, metric, [&](const train::SearchVisit& v) {
          std::cout << fmt::format(
                           "  {:<14} {:>8}  {}  {}{}\n", format_of(v.exp, v.man), show(v.metric),
                           v.pass ? "pass" : "FAIL", v.phase,
                           v.cached ? " (visited before)" : (cached_[last_id_] ? " (trained before)" : ""))
                    << std::flush;
        });
    if (!res.found) {
      std::cout << fmt::format("the start format {} does not pass: no format found\n", a_.start);
      return 0;
    }
    std::cout << fmt::format("search ended at {} ({} bits)\n", format_of(res.exp, res.man),
                             1 + res.exp + res.man);
    std::string smallest;
    for (const auto& [e, m] : res.smallest) smallest += (smallest.empty() ? "" : ", ") + format_of(e, m);
    std::cout << fmt::format(
        "smallest passing format(s) visited: {} ({} bits); {} visits, {} formats evaluated; "
        "results in {}\n",
        smallest, res.smallest.empty() ? 0 : 1 + res.smallest[0].first + res.smallest[0].second,
        res.visits.size() + 1, order_.size(), (fs::path(out_) / "results.csv").string());
    return 0;
  }

 private:
  struct Width {
    std::string name;
    int exp = 0, man = 0;
  };
  static std::string show(double v) { return std::isnan(v) ? "diverged" : fmt::format("{:.2f}", v); }
  std::string last_baseline_id() const { return "format=" + safe(format_name(parse_format(a_.baseline))); }

  SearchArgs a_;
  train::Recipe recipe_;
  std::string out_;
  train::RunnerOptions ro_;
  train::SweepSpec spec_;
  uint64_t seed_ = 0;
  std::map<std::string, bool> cached_;
  std::map<std::string, Width> widths_;
  std::map<std::string, size_t> seen_;
  std::vector<std::pair<std::string, train::RunRecord>> order_;
  std::string last_id_;
  std::map<std::string, train::CostColumns> costs_;  // by run id (--minimize energy)
};

Runner add_search_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "search", "Shrink exponent and mantissa widths while accuracy stays near fp32 (docs/studies.md)");
  auto a = std::make_shared<SearchArgs>();
  cmd->add_option("recipe", a->recipe, "The recipe (YAML)")->required();
  cmd->add_option("--threshold", a->threshold,
                  "Metric points below the baseline that still pass (default 1.0)");
  cmd->add_option("--metric", a->metric,
                  "final_test_acc (default), final_val_acc, best_test_acc or best_val_acc");
  cmd->add_option("--start", a->start, "The widest format, where the search starts (default e8m23)");
  cmd->add_option("--out", a->out,
                  "Output folder (default sweeps/search-<recipe name>); trained formats are reused");
  cmd->add_option("--jobs", a->jobs, "Runs at once (the baseline and the start train together; default 2)");
  cmd->add_option("--threads", a->threads, "CPU threads per run (default 0: all)");
  cmd->add_option("--set", a->sets, "Set a recipe key in every run (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--key", a->key, "The recipe key the format goes to (default numerics.default.format)");
  cmd->add_option("--template", a->tmpl, "The format of widths {exp}, {man} (default e{exp}m{man})");
  cmd->add_option("--baseline", a->baseline, "The baseline format (default fp32)");
  cmd->add_option("--min-exp", a->min_exp, "The narrowest exponent width (default 2)");
  cmd->add_option("--min-man", a->min_man, "The narrowest mantissa width (default 1)");
  cmd->add_option("--minimize", a->minimize,
                  "bits (default: the width search) or energy (the cheapest passing format, docs/cost.md)");
  cmd->add_option(
      "--candidates", a->candidates,
      "With --minimize energy: the formats to consider, comma-separated (default: the eXmY grid)");
  cmd->add_option("--cost-model", a->cost_model, "With --minimize energy: the energy table (docs/cost.md)");
  return [a]() -> int { return Search(*a).run(); };
}

}  // namespace

EMU_COMMAND("search", add_search_command);

}  // namespace emu::cli
