// `emutrain data fetch NAME... [--from DIR_OR_URL] [--root DIR]` and
// `emutrain data list [--root DIR]`: the catalog datasets (data/catalog.h)
// found, verified or downloaded under the data root ($EMUTRAIN_DATA_ROOT,
// else ./data), each in the folder its recipe data type reads by default.
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "data/catalog.h"
#include "data/data_root.h"
#include "data/fetch.h"
#include "data/file_io.h"
#include "tools/commands.h"

namespace emu::cli {
namespace {

struct DataArgs {
  std::vector<std::string> names;
  std::string from, root;
};

std::string root_of(const DataArgs& a) { return a.root.empty() ? data::data_root() : a.root; }

std::string root_line(const DataArgs& a) {
  return a.root.empty() ? fmt::format("data root: {} ({})", data::data_root(), data::data_root_origin())
                        : fmt::format("data root: {} (--root)", a.root);
}

int run_fetch(const DataArgs& a) {
  std::vector<const data::CatalogEntry*> entries;
  for (const std::string& n : a.names) {
    if (n == "all") {
      for (const data::CatalogEntry& e : data::dataset_catalog()) entries.push_back(&e);
    } else {
      entries.push_back(&data::catalog_entry(n));  // all names checked before anything is fetched
    }
  }
  std::cout << root_line(a) << "\n";
  data::FetchOptions o;
  o.from = a.from;
  o.say = [](const std::string& line) { std::cout << line << std::endl; };
  int failed = 0;
  for (const data::CatalogEntry* e : entries) {
    try {
      data::DatasetCheck c = data::fetch_dataset(*e, data::join_path(root_of(a), e->folder), o);
      for (const data::FileCheck& f : c.files)
        if (f.state == data::FileState::Unknown) std::cout << fmt::format("  {}: {}\n", f.path, f.detail);
    } catch (const std::exception& ex) {
      // One dataset's failure does not stop the others; the exit status says it.
      std::cerr << "emutrain: data fetch " << e->name << ": " << ex.what() << "\n";
      ++failed;
    }
  }
  return failed == 0 ? 0 : 1;
}

int run_list(const DataArgs& a) {
  std::cout << root_line(a) << "\n\n";
  std::cout << fmt::format("{:<9} {:<28} {}\n", "dataset", "folder", "state");
  bool all_good = true;
  for (const data::CatalogEntry& e : data::dataset_catalog()) {
    const std::string folder = data::join_path(root_of(a), e.folder);
    data::DatasetCheck c = data::check_dataset(e, folder);
    std::string state = c.summary();
    if (!c.complete()) state += fmt::format("  (get it: emutrain data fetch {})", e.name);
    all_good = all_good && c.count(data::FileState::Mismatch) == 0;
    std::cout << fmt::format("{:<9} {:<28} {}\n", e.name, folder, state);
  }
  std::cout << "\nsources:\n";
  for (const data::CatalogEntry& e : data::dataset_catalog())
    std::cout << fmt::format("  {:<9} {}; {}\n", e.name, e.description, e.source);
  return all_good ? 0 : 1;  // a mismatch is worth a failing status; a missing dataset is not
}

Runner add_data_command(CLI::App& app) {
  auto args = std::make_shared<DataArgs>();
  CLI::App* data = app.add_subcommand("data", "Find, verify and download the catalog datasets");
  data->require_subcommand(1);
  CLI::App* fetch = data->add_subcommand(
      "fetch", "Verify a dataset in the data root, or download, verify and unpack it there");
  fetch->add_option("names", args->names, "datasets: cora, mnist, cifar10, fra-eng, forda, or all")
      ->required();
  fetch->add_option(
      "--from", args->from,
      "a mirror address (replaces each download's directory) or a local folder holding the downloads "
      "or the dataset files");
  fetch->add_option("--root", args->root, "the data root (default: $EMUTRAIN_DATA_ROOT, else ./data)");
  CLI::App* list = data->add_subcommand("list", "Each dataset, where it is, and whether its files verify");
  list->add_option("--root", args->root, "the data root (default: $EMUTRAIN_DATA_ROOT, else ./data)");
  return [args, fetch, list] {
    if (fetch->parsed()) return run_fetch(*args);
    if (list->parsed()) return run_list(*args);
    return 2;
  };
}

}  // namespace

EMU_COMMAND("data", add_data_command);

}  // namespace emu::cli
