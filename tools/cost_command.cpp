// `emutrain cost`: what one training step and one inference pass of a recipe
// do, per layer and in total, and what that costs in energy and area under a
// hardware model (docs/cost.md).
//
//   emutrain cost RECIPE [--set K=V]... [--cost-model FILE] [--json FILE] [--csv FILE]
//   emutrain cost --mac-table fp32,fp16,bf16,e5m2,fixed16_8 [--cost-model FILE]
//   emutrain cost --print-model            # the default table, to copy and edit
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <memory>

#include "config/args.h"
#include "tools/commands.h"
#include "train/atomic_file.h"
#include "train/cost_report.h"
#include "train/recipe.h"

namespace emu::cli {
namespace {

struct CostArgs {
  std::string recipe, model_file, json, csv, mac_table;
  std::vector<std::string> sets;
  bool print_model = false;
};

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = s.find(',', start);
    const std::string item = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!item.empty()) out.push_back(item);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

int run_cost(const CostArgs& a) {
  if (a.print_model) {
    std::cout << train::default_cost_model_yaml();
    return 0;
  }
  const train::CostModel model =
      a.model_file.empty() ? train::default_cost_model() : train::load_cost_model(a.model_file);
  if (!a.mac_table.empty()) {
    std::cout << train::mac_energy_table(model, split_commas(a.mac_table));
    return 0;
  }
  if (a.recipe.empty())
    throw std::runtime_error("cost: a RECIPE is required (or --mac-table / --print-model)");
  const train::Recipe recipe = train::load_recipe(a.recipe, a.sets);
  const train::StepCounts counts = train::count_recipe(recipe);
  const train::CostReportHeader h{a.recipe, counts.model, counts.batch_examples};
  std::cout << train::cost_table(h, counts, model);
  if (!a.json.empty()) train::write_file_atomic(a.json, train::cost_json(h, counts, model));
  if (!a.csv.empty()) train::write_file_atomic(a.csv, train::cost_csv(counts, model));
  return 0;
}

Runner add_cost_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "cost",
      "Count a recipe's training step and inference pass and price them in energy and area (docs/cost.md)");
  auto a = std::make_shared<CostArgs>();
  cmd->add_option("recipe", a->recipe, "The recipe (YAML)");
  cmd->add_option("--set", a->sets, "Set a recipe key (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--cost-model", a->model_file,
                  "Energy/area table (YAML; default: Horowitz ISSCC 2014, 45 nm)");
  cmd->add_option("--json", a->json, "Also write every count and its energy as JSON");
  cmd->add_option("--csv", a->csv, "Also write every count and its energy as CSV");
  cmd->add_option("--mac-table", a->mac_table,
                  "Price one MAC in each of these formats (comma-separated) and stop");
  cmd->add_flag("--print-model", a->print_model, "Print the default cost model (YAML) and stop");
  return [a]() -> int { return run_cost(*a); };
}

}  // namespace

EMU_COMMAND("cost", add_cost_command);

}  // namespace emu::cli
