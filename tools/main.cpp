// emutrain: train neural networks under emulated hardware numerics.
#include <cstdio>
#include <exception>

#include "tools/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"emutrain: training under emulated hardware numerics (formats, accumulators, rounding)"};
  app.require_subcommand(1);
  emu::cli::Runner calc = emu::cli::add_calc_command(app);
  emu::cli::Runner bench = emu::cli::add_bench_command(app);
  emu::cli::Runner function_error = emu::cli::add_function_error_command(app);
  CLI11_PARSE(app, argc, argv);
  try {
    if (app.got_subcommand("calc")) return calc();
    if (app.got_subcommand("bench")) return bench();
    if (app.got_subcommand("function-error")) return function_error();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "emutrain: %s\n", e.what());
    return 2;
  }
  return 0;
}
