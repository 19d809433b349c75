// Bit-for-bit comparison of implementation results against the reference, for
// the tests: NaN equals NaN (any payload), everything else compares bit
// patterns, so signed zeros count. Mismatches are counted and the first few
// are kept, with the format, the inputs (hex float and bits) and got/expected.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "numerics/format.h"
#include "numerics/format_spec.h"

namespace emu::ref {

inline bool same_value(double got, double expected) {
  if (std::isnan(got) || std::isnan(expected)) return std::isnan(got) && std::isnan(expected);
  return std::memcmp(&got, &expected, sizeof got) == 0;
}

inline std::string show(double v) {
  uint64_t u;
  std::memcpy(&u, &v, sizeof u);
  char buf[80];
  std::snprintf(buf, sizeof buf, "%a [0x%016llx]", v, static_cast<unsigned long long>(u));
  return buf;
}

inline std::string show_code(uint64_t c) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(c));
  return buf;
}

class Mismatches {
 public:
  explicit Mismatches(size_t keep = 8) : keep_(keep) {}

  // Records one comparison; returns whether it matched. `what()` describes
  // the case (called only for a mismatch that is kept).
  template <class What>
  bool check(const Format& f, double got, double expected, What&& what) {
    ++cases_;
    if (same_value(got, expected)) return true;
    ++count_;
    ++by_format_[format_name(f)];
    if (first_.size() < keep_)
      first_.push_back(format_name(f) + " " + what() + ": got " + show(got) + ", expected " + show(expected));
    return false;
  }
  // Records a failure that is not a value comparison.
  void fail(const Format& f, const std::string& what) {
    ++cases_;
    ++count_;
    ++by_format_[format_name(f)];
    if (first_.size() < keep_) first_.push_back(format_name(f) + " " + what);
  }
  void pass() { ++cases_; }

  uint64_t count() const { return count_; }
  uint64_t cases() const { return cases_; }
  std::string report() const {
    std::string r = std::to_string(count_) + " mismatches in " + std::to_string(cases_) + " cases";
    if (count_ > 0) {
      r += "; by format:";
      for (const auto& [name, n] : by_format_) r += " " + name + " " + std::to_string(n);
    }
    for (const auto& s : first_) r += "\n  " + s;
    return r;
  }

 private:
  size_t keep_;
  uint64_t count_ = 0, cases_ = 0;
  std::vector<std::string> first_;
  std::map<std::string, uint64_t> by_format_;
};

// "op(a, b)" with each operand shown as hex float and bits.
inline std::string describe(const char* op, std::initializer_list<double> args, const char* extra = "") {
  std::string s = std::string(op) + "(";
  bool first = true;
  for (double a : args) {
    if (!first) s += ", ";
    s += show(a);
    first = false;
  }
  return s + ")" + extra;
}

}  // namespace emu::ref
