// `emutrain validate`: the backend-equality harness (docs/validate.md). For
// every op of the op list x every policy of the set x the op's named cases, the
// CPU reference and the device backend run from the same inputs and draw key,
// and every byte of every result must agree (NaN payloads and signed zeros
// included). Prints the op x policy matrix (pass / FAIL / unsup), then each
// failure; exit code 1 on any failure, 0 otherwise.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <stdexcept>

#include "core/device_select.h"
#include "tools/commands.h"
#include "tools/validate_inject.h"
#include "tools/validate_report.h"

#if EMUTRAIN_HAVE_CUDA_HOST
#include "backends/cuda/register.h"
#endif

namespace emu::cli {
namespace {

using namespace emu::validate;

struct ValidateOptions {
  std::string device = "cuda";
  std::vector<std::string> ops, skip_ops, policies, cases;
  bool list = false;
  std::string inject;  // tools/validate_inject.h: testing the harness itself
};

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& e : v) s += (s.empty() ? "" : ", ") + e;
  return s;
}

Op op_named(const std::string& name, const char* option) {
  Op op;
  if (!op_from_name(name, &op))
    throw std::invalid_argument(fmt::format("validate {}: no op named '{}'; the op list: {}", option, name,
                                            join(backend_op_names())));
  return op;
}

// The ops selected by --op (all when empty) less those of --skip-op, in op-list
// order. --skip-op lets ctest split the harness into shards that together cover
// every op, including ops added later (tests/validate.cmake).
std::vector<Op> select_ops(const std::vector<std::string>& names, const std::vector<std::string>& skipped) {
  std::vector<Op> ops, skip;
  for (const std::string& n : skipped) skip.push_back(op_named(n, "--skip-op"));
  for (const std::string& n : names) ops.push_back(op_named(n, "--op"));
  if (names.empty())
    for (int i = 0; i < kOpCount; ++i) ops.push_back(static_cast<Op>(i));
  std::sort(ops.begin(), ops.end());
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  ops.erase(std::remove_if(ops.begin(), ops.end(),
                           [&](Op op) { return std::find(skip.begin(), skip.end(), op) != skip.end(); }),
            ops.end());
  if (ops.empty()) throw std::invalid_argument("validate: --op and --skip-op leave no op to run");
  return ops;
}

std::vector<const Policy*> select_policies(const std::vector<std::string>& names) {
  std::vector<const Policy*> out;
  for (const Policy& p : policies())
    if (names.empty() || std::find(names.begin(), names.end(), p.name) != names.end()) out.push_back(&p);
  for (const std::string& n : names) {
    bool known = false;
    for (const Policy& p : policies()) known = known || p.name == n;
    if (!known) {
      std::vector<std::string> all;
      for (const Policy& p : policies()) all.push_back(p.name);
      throw std::invalid_argument(
          fmt::format("validate --policy: no policy named '{}'; the set: {}", n, join(all)));
    }
  }
  return out;
}

// Each selected op's cases, filtered by --case; an op left without cases drops
// out when --case was given. A --case name that no selected op has is an error.
std::vector<std::vector<const Case*>> select_cases(std::vector<Op>& ops,
                                                   const std::vector<std::string>& names) {
  std::vector<std::vector<const Case*>> per_op;
  std::vector<Op> kept;
  std::vector<bool> used(names.size(), false);
  for (Op op : ops) {
    std::vector<const Case*> v;
    for (const Case& c : all_cases()) {
      if (c.op != op) continue;
      auto it = std::find(names.begin(), names.end(), c.name);
      if (!names.empty() && it == names.end()) continue;
      if (it != names.end()) used[static_cast<size_t>(it - names.begin())] = true;
      v.push_back(&c);
    }
    if (!names.empty() && v.empty()) continue;
    kept.push_back(op);
    per_op.push_back(std::move(v));
  }
  for (size_t i = 0; i < names.size(); ++i)
    if (!used[i])
      throw std::invalid_argument(fmt::format(
          "validate --case: no selected op has a case named '{}' (see validate --list)", names[i]));
  ops = kept;
  return per_op;
}

int run_validate(const ValidateOptions& o, std::ostream& out) {
  std::vector<Op> ops = select_ops(o.ops, o.skip_ops);
  const std::vector<const Policy*> pols = select_policies(o.policies);
  const std::vector<std::vector<const Case*>> cases = select_cases(ops, o.cases);
  if (o.list) {
    print_list(out, pols, ops, cases);
    return 0;
  }
#if EMUTRAIN_HAVE_CUDA_HOST
  register_cuda_devices();
#endif
  const Device device = activate_device(o.device);
  Backend& reference = default_cpu_backend();
  std::unique_ptr<Backend> injecting;
  if (!o.inject.empty()) {
    if (device != Device::Cpu) throw std::invalid_argument("validate --inject needs --device cpu");
    injecting = make_injecting_backend(reference, parse_injection(o.inject));
  }
  Backend& dev = injecting ? *injecting : backend_for(device);
  out << fmt::format("emutrain validate: reference {}\n", device_description("cpu"));
  out << fmt::format("device under test: {}{}\n\n", device_description(o.device),
                     injecting               ? " with the injected fault " + o.inject
                     : device == Device::Cpu ? " (compared with itself: checks the cases and determinism)"
                                             : "");
  print_header(out, pols);
  const Sides sides{reference, dev, device};
  std::vector<std::vector<CellResult>> rows;
  bool failed = false;
  for (size_t i = 0; i < ops.size(); ++i) {
    std::vector<CellResult> row;
    for (const Policy* p : pols) {
      row.push_back(run_cell(sides, ops[i], *p, cases[i]));
      failed = failed || row.back().verdict == Verdict::Fail;
    }
    print_row(out, ops[i], row);
    rows.push_back(std::move(row));
  }
  print_summary(out, ops, rows);
  return failed ? 1 : 0;
}

Runner add_validate_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "validate",
      "Backend equality: every op x policy x case on the CPU and on a device, compared byte for byte");
  auto o = std::make_shared<ValidateOptions>();
  cmd->add_option(
         "--device", o->device,
         "The device under test: cuda (a GPU), cuda-host (the CUDA kernels on the CPU host executor) or cpu "
         "(the CPU backend against itself)")
      ->capture_default_str();
  cmd->add_option("--op", o->ops, "Only these ops (comma-separated names of the op list)")->delimiter(',');
  cmd->add_option("--skip-op", o->skip_ops,
                  "All selected ops but these (comma-separated names of the op list)")
      ->delimiter(',');
  cmd->add_option("--policy", o->policies, "Only these policies (comma-separated; see --list)")
      ->delimiter(',');
  cmd->add_option("--case", o->cases, "Only cases of these names (comma-separated; see --list)")
      ->delimiter(',');
  cmd->add_flag("--list", o->list, "List the selected policies, ops and cases instead of running them");
  cmd->add_option(
      "--inject", o->inject,
      "Test the harness: with --device cpu, flip:OP (flip a bit of each result), throw:OP or unsup:OP");
  return [o]() { return run_validate(*o, std::cout); };
}

}  // namespace

EMU_COMMAND("validate", add_validate_command);

}  // namespace emu::cli
