// The emutrain subcommands. Each adds itself to the CLI11 app and runs when
// selected; main.cpp only wires them together.
#pragma once

#include <CLI/CLI.hpp>

namespace emu::cli {

// Each returns a function that runs the parsed subcommand and gives the exit code.
using Runner = std::function<int()>;

Runner add_calc_command(CLI::App& app);   // tools/calc.cpp
Runner add_bench_command(CLI::App& app);  // tools/bench.cpp
Runner add_function_error_command(CLI::App& app);  // tools/function_error.cpp

}  // namespace emu::cli
