// The emutrain subcommands. Each file under tools/ that defines a command
// registers it with EMU_COMMAND (a top-level command such as `train`) or
// EMU_BENCH_COMMAND (a `bench <name>` benchmark); main.cpp only wires the
// registry into CLI11, so adding a command never touches another file.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace emu::cli {

// Runs the parsed subcommand and gives the process exit code.
using Runner = std::function<int()>;

// Adds one subcommand named `name` to `parent` and returns its runner.
using AddCommand = Runner (*)(CLI::App& parent);

struct CommandEntry {
  std::string name;
  AddCommand add;
};

// The commands of a group ("" for top-level, "bench" for benchmarks), sorted by name.
std::vector<CommandEntry> registered_commands(const std::string& group);

struct CommandRegistrar {
  CommandRegistrar(const char* group, const char* name, AddCommand add);
};

// Adds every command of `group` to `parent` (each as parent.add_subcommand(name, ...)
// inside its AddCommand) and returns a runner that runs the one that was parsed.
Runner add_registered_commands(CLI::App& parent, const std::string& group);

}  // namespace emu::cli

#define EMU_CLI_CONCAT2(a, b) a##b
#define EMU_CLI_CONCAT(a, b) EMU_CLI_CONCAT2(a, b)
// EMU_COMMAND("train", add_train_command): `emutrain train`.
#define EMU_COMMAND(name, add) \
  static const ::emu::cli::CommandRegistrar EMU_CLI_CONCAT(emu_command_, __COUNTER__)("", name, add)
// EMU_BENCH_COMMAND("gemm", add_bench_gemm_command): `emutrain bench gemm`.
#define EMU_BENCH_COMMAND(name, add)                                                                       \
  static const ::emu::cli::CommandRegistrar EMU_CLI_CONCAT(emu_bench_command_, __COUNTER__)("bench", name, \
                                                                                            add)
