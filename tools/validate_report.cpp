#include "tools/validate_report.h"

#include <fmt/format.h>

#include <map>

namespace emu::validate {
namespace {

constexpr int kOpWidth = 30;   // the longest op name is 28 characters
constexpr int kCellWidth = 6;  // "unsup" and a space

const char* cell_text(const CellResult& c) {
  switch (c.verdict) {
    case Verdict::NotRun:
      return "-";
    case Verdict::Pass:
      return "pass";
    case Verdict::Fail:
      return "FAIL";
    case Verdict::Unsupported:
      return "unsup";
  }
  return "?";
}

}  // namespace

void print_header(std::ostream& out, const std::vector<const Policy*>& policies) {
  out << "policies (columns):\n";
  for (size_t i = 0; i < policies.size(); ++i)
    out << fmt::format("  {:>2} {:<18} {}\n", i + 1, policies[i]->name, policies[i]->keys);
  out << "\n" << fmt::format("{:<{}}", "op", kOpWidth);
  for (size_t i = 0; i < policies.size(); ++i) out << fmt::format("{:>{}}", i + 1, kCellWidth);
  out << "\n";
  out.flush();
}

void print_row(std::ostream& out, Op op, const std::vector<CellResult>& cells) {
  out << fmt::format("{:<{}}", op_name(op), kOpWidth);
  for (const CellResult& c : cells) out << fmt::format("{:>{}}", cell_text(c), kCellWidth);
  out << "\n";
  out.flush();
}

void print_summary(std::ostream& out, const std::vector<Op>& ops,
                   const std::vector<std::vector<CellResult>>& rows) {
  int pass = 0, fail = 0, unsup = 0, cases = 0;
  std::vector<const Failure*> failures;
  std::vector<std::string> whole_rows;  // ops unsupported under every selected policy
  std::vector<std::string> partial;     // "op: reason (n cells)" for the others
  for (size_t r = 0; r < rows.size(); ++r) {
    std::map<std::string, int> reasons;
    int row_unsup = 0, row_run = 0;
    for (const CellResult& c : rows[r]) {
      cases += c.cases;
      if (c.verdict != Verdict::NotRun) ++row_run;
      if (c.verdict == Verdict::Pass) ++pass;
      if (c.verdict == Verdict::Fail) ++fail;
      if (c.verdict == Verdict::Unsupported) {
        ++unsup;
        ++row_unsup;
        ++reasons[c.unsupported];
      }
      for (const Failure& f : c.failures) failures.push_back(&f);
    }
    if (row_unsup > 0 && row_unsup == row_run) {
      whole_rows.push_back(op_name(ops[r]));
    } else {
      for (const auto& [reason, count] : reasons)
        partial.push_back(fmt::format("{} ({} cell{})", reason, count, count == 1 ? "" : "s"));
    }
  }
  out << fmt::format("\n{} cells: {} pass, {} FAIL, {} unsup; {} case runs compared\n", pass + fail + unsup,
                     pass, fail, unsup, cases);
  if (!whole_rows.empty()) {
    out << "unsupported on the device for every selected policy:";
    for (size_t i = 0; i < whole_rows.size(); ++i) out << (i % 6 == 0 ? "\n  " : " ") << whole_rows[i];
    out << "\n";
  }
  for (const std::string& p : partial) out << "unsupported on the device: " << p << "\n";
  if (!failures.empty()) {
    out << "failures:\n";
    for (const Failure* f : failures)
      out << fmt::format("  {} x {}, case {}, output {}: {}\n", f->op, f->policy, f->kase, f->output,
                         f->detail);
  }
}

void print_list(std::ostream& out, const std::vector<const Policy*>& policies, const std::vector<Op>& ops,
                const std::vector<std::vector<const Case*>>& cases) {
  out << "policies:\n";
  for (const Policy* p : policies)
    out << fmt::format("  {:<18} {}\n  {:<18} ({})\n", p->name, p->what, "", p->keys);
  out << "\nops and cases:\n";
  size_t total = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    out << fmt::format("  {} ({} case{})\n", op_name(ops[i]), cases[i].size(),
                       cases[i].size() == 1 ? "" : "s");
    for (const Case* c : cases[i]) out << fmt::format("    {:<28} {}\n", c->name, c->note);
    total += cases[i].size();
  }
  out << fmt::format("\n{} ops, {} cases, {} policies\n", ops.size(), total, policies.size());
}

}  // namespace emu::validate
