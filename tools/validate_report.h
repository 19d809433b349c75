// What `emutrain validate` prints: the policy legend, the op x policy matrix
// (one row as soon as its cells are done, so a slow device shows progress),
// the summary, the failures, and the --list of policies and cases.
#pragma once

#include <ostream>
#include <vector>

#include "tools/validate_runner.h"

namespace emu::validate {

// The policy legend and the matrix's column header.
void print_header(std::ostream& out, const std::vector<const Policy*>& policies);

// One matrix row: the op's name and one cell per policy (pass, FAIL, unsup, -).
void print_row(std::ostream& out, Op op, const std::vector<CellResult>& cells);

// Counts of each verdict and of the case runs, the ops the device does not
// support at all, the reasons of the other unsupported cells, then each failure
// (op, policy, case, output, first differing index and both values).
void print_summary(std::ostream& out, const std::vector<Op>& ops,
                   const std::vector<std::vector<CellResult>>& rows);

// --list: the policies with their keys, then each op's cases with their notes.
void print_list(std::ostream& out, const std::vector<const Policy*>& policies, const std::vector<Op>& ops,
                const std::vector<std::vector<const Case*>>& cases);

}  // namespace emu::validate
