#include "data/dataset.h"

#include <stdexcept>

namespace emu::data {
namespace {

std::string field_list(const Batch& b) {
  std::string s;
  for (const auto& [name, t] : b.tensors) s += (s.empty() ? "" : ", ") + name;
  for (const auto& [name, m] : b.sparse) s += (s.empty() ? "" : ", ") + name;
  return s.empty() ? "none" : s;
}

}  // namespace

const Tensor& Batch::at(const std::string& name) const {
  auto it = tensors.find(name);
  if (it == tensors.end())
    throw std::invalid_argument("batch has no tensor field '" + name + "' (fields: " + field_list(*this) +
                                ")");
  return it->second;
}

const CsrMatrix& Batch::sparse_at(const std::string& name) const {
  auto it = sparse.find(name);
  if (it == sparse.end())
    throw std::invalid_argument("batch has no sparse field '" + name + "' (fields: " + field_list(*this) +
                                ")");
  return *it->second;
}

}  // namespace emu::data
