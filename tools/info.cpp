// `emutrain info`: what this build can do: backends and devices, CPU features
// it was compiled for, threads, the number-format families and named formats,
// and the recipe vocabulary (models, datasets, optimizers, schedules).
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <thread>
#include <vector>

#include "core/backend.h"
#include "data/registry.h"
#include "models/registry.h"
#include "numerics/format_info.h"
#include "numerics/format_spec.h"
#include "tools/commands.h"
#include "train/recipe.h"

#ifdef EMUTRAIN_HAVE_CUDA
#include "backends/cuda/device_query.h"
#endif

namespace emu::cli {
namespace {

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos)
      return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

std::string simd_features() {
  std::string s;
  auto add = [&](const char* f) { s += (s.empty() ? "" : " ") + std::string(f); };
#ifdef __SSE4_2__
  add("sse4.2");
#endif
#ifdef __AVX__
  add("avx");
#endif
#ifdef __AVX2__
  add("avx2");
#endif
#ifdef __AVX512F__
  add("avx512f");
#endif
#ifdef __AVX512BW__
  add("avx512bw");
#endif
#ifdef __AVX512VL__
  add("avx512vl");
#endif
#ifdef __ARM_NEON
  add("neon");
#endif
  return s.empty() ? "none beyond the baseline" : s;
}

int run_info(std::ostream& out) {
  out << "emutrain: training under emulated hardware numerics\n\n";
  out << "build\n";
#ifdef EMUTRAIN_HAVE_CUDA
  out << "  CUDA backend: compiled in\n";
#else
  out << "  CUDA backend: not compiled (no nvcc at configure time, or -DEMUTRAIN_CUDA=OFF)\n";
#endif
  out << fmt::format("  CPU code: compiled for {} (no FMA contraction, no fast-math)\n", simd_features());
  out << fmt::format("  CPU: {}, {} hardware threads\n\n", cpu_name(), std::thread::hardware_concurrency());

  out << "devices\n";
  out << "  cpu: the reference backend (every op, every format)\n";
#ifdef EMUTRAIN_HAVE_CUDA
  const std::vector<GpuInfo> gpus = cuda_devices();
  out << fmt::format("  cuda: {} device{} visible; this binary has code for CUDA architectures {}\n",
                     gpus.size(), gpus.size() == 1 ? "" : "s", cuda_architectures_built());
  for (const GpuInfo& g : gpus)
    out << fmt::format("    GPU {}: {}, compute capability {}.{}, {:.1f} GiB: {}\n", g.index, g.name, g.major,
                       g.minor, static_cast<double>(g.memory) / (1 << 30),
                       g.has_code ? "this binary runs on it" : missing_code_message(g));
#else
  out << "  cuda: unavailable in this build\n";
#endif
  out << "\nformats\n  " << format_grammar_help() << "\n";
  const char* named[] = {"fp32",     "tf32",      "bf16",      "fp16",     "fp8_e5m2",
                         "fp8_e4m3", "fp6_e3m2",  "fp6_e2m3",  "fp4_e2m1", "e6m6",
                         "posit8_0", "posit16_1", "fixed16_8", "int8",     "fp64"};
  for (const char* name : named) {
    try {
      FormatInfo i = describe_format(parse_format(name));
      out << fmt::format("  {:<10} {:<40} {:2} bits  max {:<12.6g} {}\n", name, i.family, i.width,
                         i.max_finite, i.accumulator_only ? "(accumulator only)" : "");
    } catch (const std::exception& e) {
      out << fmt::format("  {:<10} ({})\n", name, e.what());
    }
  }
  out << "\nrecipes (docs/recipes.md)\n";
  out << "  model.type:     " << config::join_names(models::model_types()) << "\n";
  out << "  data.type:      " << config::join_names(data::dataset_types()) << "\n";
  out << "  optimizer.type: " << config::join_names(train::optimizer_types()) << "\n";
  out << "  schedule.type:  " << config::join_names(train::schedule_types()) << "\n";
  out << "  numerics keys:  " << config::join_names(NumericsPolicy::keys()) << "\n";
  return 0;
}

Runner add_info_command(CLI::App& app) {
  app.add_subcommand("info", "Build features, devices, number formats and recipe vocabulary");
  return [] { return run_info(std::cout); };
}

}  // namespace

EMU_COMMAND("info", add_info_command);

}  // namespace emu::cli
