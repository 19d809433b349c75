// emutrain: train neural networks under emulated hardware numerics.
#include <cstdio>
#include <exception>

#include "backends/cuda/register.h"
#include "core/malloc_tuning.h"
#include "tools/commands.h"

int main(int argc, char** argv) {
  emu::keep_freed_memory_for_reuse();  // core/malloc_tuning.h: no page faults per step
  CLI::App app{"emutrain: training under emulated hardware numerics (formats, accumulators, rounding)"};
  app.require_subcommand(1);
  emu::register_cuda_devices();  // device names cuda-host and cuda (core/device_select.h)
  emu::cli::Runner run = emu::cli::add_registered_commands(app, "");
  CLI11_PARSE(app, argc, argv);
  try {
    return run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "emutrain: %s\n", e.what());
    return 2;
  }
}
