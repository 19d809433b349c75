// The runner of `emutrain validate` (docs/validate.md): one cell of the matrix
// is one op under one policy; each of the op's cases runs on the CPU reference
// and on the device backend from the same inputs and draw key, and every byte
// of every result is compared.
#pragma once

#include <string>
#include <vector>

#include "tools/validate_case.h"

namespace emu::validate {

enum class Verdict : uint8_t {
  NotRun,       // no case of the op selected
  Pass,         // every case gave equal bytes
  Fail,         // some case differed or threw
  Unsupported,  // the device backend does not support the op for the policy's families
};

// One difference or error of one case.
struct Failure {
  std::string op, policy, kase;
  std::string output;  // the result that differs ("-" for an exception)
  std::string detail;  // first differing index and both values, or the exception's message
};

struct CellResult {
  Verdict verdict = Verdict::NotRun;
  int cases = 0;            // cases run
  std::string unsupported;  // why, for Unsupported
  std::vector<Failure> failures;
};

// The two backends compared: the CPU reference (CPU tensors) and the device
// under test (tensors of `device`; the CPU backend itself for --device cpu).
struct Sides {
  Backend& reference;
  Backend& device;
  Device device_kind;
};

// Why `device` cannot run `op` under `p` ("" when it can): the op for one of the
// policy's families, or quantize for the layer-level rounding.
std::string unsupported_reason(const Backend& device, Op op, const Policy& p);

// Runs `cases` (all of one op) under `p`; never throws for a case's error.
CellResult run_cell(const Sides& sides, Op op, const Policy& p, const std::vector<const Case*>& cases);

}  // namespace emu::validate
