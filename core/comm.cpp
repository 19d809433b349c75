#include "core/comm.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace emu {
namespace {

std::shared_ptr<Communicator>& world_ptr() {
  static std::shared_ptr<Communicator> w = std::make_shared<LocalCommunicator>();
  return w;
}

std::string first_line_difference(const std::string& a, const std::string& b) {
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool ga = static_cast<bool>(std::getline(sa, la)), gb = static_cast<bool>(std::getline(sb, lb));
    if (!ga && !gb) return "(same lines, different bytes)";
    if (!ga || !gb || la != lb)
      return fmt::format("line {}: rank 0 has '{}', it has '{}'", line, ga ? la : "(end)", gb ? lb : "(end)");
  }
}

}  // namespace

std::vector<double> Communicator::allgather_doubles(const std::vector<double>& mine) {
  std::vector<uint8_t> bytes(mine.size() * sizeof(double));
  if (!mine.empty()) std::memcpy(bytes.data(), mine.data(), bytes.size());
  std::vector<std::vector<uint8_t>> parts = allgather_bytes(bytes);
  std::vector<double> out(mine.size() * parts.size());
  for (size_t r = 0; r < parts.size(); ++r) {
    if (parts[r].size() != bytes.size())
      throw std::runtime_error(fmt::format("allgather: rank {} sent {} values, rank {} (this one) {}", r,
                                           parts[r].size() / sizeof(double), rank(), mine.size()));
    if (!bytes.empty()) std::memcpy(out.data() + r * mine.size(), parts[r].data(), bytes.size());
  }
  return out;
}

void Communicator::agree(const std::string& what, const std::string& text) {
  std::vector<std::vector<uint8_t>> all = allgather_bytes(std::vector<uint8_t>(text.begin(), text.end()));
  const std::string first(all[0].begin(), all[0].end());
  for (size_t r = 1; r < all.size(); ++r) {
    const std::string other(all[r].begin(), all[r].end());
    if (other != first)
      throw std::runtime_error(fmt::format("the {} of rank {} differs from rank 0's: {}", what, r,
                                           first_line_difference(first, other)));
  }
}

void LocalCommunicator::abort(const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "emutrain: %s\n", message.c_str());
  std::exit(2);
}

Communicator& world() { return *world_ptr(); }
void set_world(std::shared_ptr<Communicator> c) {
  world_ptr() = c ? std::move(c) : std::make_shared<LocalCommunicator>();
}

}  // namespace emu
