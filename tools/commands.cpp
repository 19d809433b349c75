// The command registry behind EMU_COMMAND / EMU_BENCH_COMMAND.
#include "tools/commands.h"

#include <algorithm>
#include <map>
#include <memory>

namespace emu::cli {
namespace {

// Function-local so registration from any translation unit's static
// initialisers finds it constructed.
std::map<std::string, std::vector<CommandEntry>>& registry() {
  static std::map<std::string, std::vector<CommandEntry>> r;
  return r;
}

}  // namespace

CommandRegistrar::CommandRegistrar(const char* group, const char* name, AddCommand add) {
  registry()[group].push_back({name, add});
}

std::vector<CommandEntry> registered_commands(const std::string& group) {
  std::vector<CommandEntry> out = registry()[group];
  std::sort(out.begin(), out.end(),
            [](const CommandEntry& a, const CommandEntry& b) { return a.name < b.name; });
  return out;
}

Runner add_registered_commands(CLI::App& parent, const std::string& group) {
  auto runners = std::make_shared<std::vector<std::pair<std::string, Runner>>>();
  for (const CommandEntry& c : registered_commands(group)) runners->push_back({c.name, c.add(parent)});
  CLI::App* p = &parent;
  return [p, runners] {
    for (const auto& [name, run] : *runners)
      if (p->got_subcommand(name)) return run();
    return 2;
  };
}

}  // namespace emu::cli
