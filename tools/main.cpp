// emutrain: train neural networks under emulated hardware numerics.
#include <cstdio>
#include <exception>

#include "tools/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"emutrain: training under emulated hardware numerics (formats, accumulators, rounding)"};
  app.require_subcommand(1);
  emu::cli::Runner calc = emu::cli::add_calc_command(app);
  emu::cli::Runner bench = emu::cli::add_bench_command(app);
  CLI11_PARSE(app, argc, argv);
  try {
    if (app.got_subcommand("calc")) return calc();
    if (app.got_subcommand("bench")) return bench();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "emutrain: %s\n", e.what());
    return 2;
  }
  return 0;
}
