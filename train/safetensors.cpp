#include "train/safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "train/atomic_file.h"
#include "train/json.h"

namespace emu::train {
namespace {

bool little_endian_host() {
  const uint32_t one = 1;
  unsigned char b;
  std::memcpy(&b, &one, 1);
  return b == 1;
}

[[noreturn]] void corrupt(const std::string& path, const std::string& problem) {
  throw CheckpointError(fmt::format("corrupt checkpoint {}: {}", path, problem));
}

}  // namespace

void write_safetensors(const std::string& path, const TensorFile& file) {
  if (!little_endian_host()) throw CheckpointError("safetensors: big-endian hosts are not supported");
  std::string header = "{";
  uint64_t offset = 0;
  std::vector<Tensor> order;
  for (const auto& [name, t] : file.tensors) {
    if (name == "__metadata__") throw CheckpointError("safetensors: '__metadata__' cannot name a tensor");
    std::string shape;
    for (int64_t d : t.shape()) shape += (shape.empty() ? "" : ",") + std::to_string(d);
    const uint64_t bytes = static_cast<uint64_t>(t.numel()) * sizeof(float);
    header += fmt::format("{}{}:{{\"dtype\":\"F32\",\"shape\":[{}],\"data_offsets\":[{},{}]}}",
                          header.size() > 1 ? "," : "", json_quote(name), shape, offset, offset + bytes);
    offset += bytes;
    order.push_back(t.to(Device::Cpu).contiguous());  // a device tensor is downloaded
  }
  if (!file.metadata.empty()) {
    header += std::string(header.size() > 1 ? "," : "") + "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : file.metadata) {
      header += (first ? "" : ",") + json_quote(k) + ":" + json_quote(v);
      first = false;
    }
    header += "}";
  }
  header += "}";
  while ((8 + header.size()) % 8 != 0) header += ' ';

  try {
    AtomicFile out(path);
    unsigned char len[8];
    uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
    out.write(len, 8);
    out.write(header);
    for (const Tensor& t : order) out.write(t.data(), static_cast<size_t>(t.numel()) * sizeof(float));
    out.commit();
  } catch (const FileWriteError& e) {
    throw CheckpointError(fmt::format("checkpoint: {}", e.what()));
  }
}

TensorFile read_safetensors(const std::string& path) {
  if (!little_endian_host()) throw CheckpointError("safetensors: big-endian hosts are not supported");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError(fmt::format("cannot open checkpoint {}: {}", path, std::strerror(errno)));
  in.seekg(0, std::ios::end);
  const uint64_t size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  if (size < 8) corrupt(path, fmt::format("file is {} bytes, too short for the 8-byte header length", size));
  unsigned char len[8];
  in.read(reinterpret_cast<char*>(len), 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  if (n > size - 8) corrupt(path, fmt::format("header length {} exceeds file size {}", n, size));
  if (n > kMaxSafetensorsHeader) corrupt(path, fmt::format("header length {} exceeds the 100 MB limit", n));
  std::string header(n, '\0');
  in.read(header.data(), static_cast<std::streamsize>(n));
  if (!in) corrupt(path, "cannot read the header");

  Json doc;
  try {
    doc = parse_json(header);
  } catch (const JsonError& e) {
    corrupt(path, fmt::format("header is not valid JSON ({})", e.what()));
  }
  if (!doc.is_object()) corrupt(path, "header is not a JSON object");

  const uint64_t data_size = size - 8 - n;
  struct Span {
    uint64_t begin, end;
    std::string name;
  };
  std::vector<Span> spans;
  TensorFile out;
  for (const auto& [name, entry] : doc.members) {
    if (name == "__metadata__") {
      if (!entry.is_object()) corrupt(path, "__metadata__ is not an object of strings");
      for (const auto& [k, v] : entry.members) {
        if (!v.is_string()) corrupt(path, fmt::format("__metadata__ value of '{}' is not a string", k));
        out.metadata[k] = v.text;
      }
      continue;
    }
    if (!entry.is_object()) corrupt(path, fmt::format("entry of tensor '{}' is not an object", name));
    for (const auto& [k, _] : entry.members)
      if (k != "dtype" && k != "shape" && k != "data_offsets")
        corrupt(path,
                fmt::format("tensor '{}' has an unknown field '{}' (fields: dtype, shape, data_offsets)",
                            name, k));
    const Json* dtype = entry.find("dtype");
    const Json* shape = entry.find("shape");
    const Json* offsets = entry.find("data_offsets");
    if (!dtype || !dtype->is_string()) corrupt(path, fmt::format("tensor '{}' has no dtype", name));
    if (dtype->text != "F32")
      corrupt(path, fmt::format("tensor '{}' has dtype {}; emutrain reads F32 only", name, dtype->text));
    if (!shape || !shape->is_array()) corrupt(path, fmt::format("tensor '{}' has no shape list", name));
    if (!offsets || !offsets->is_array() || offsets->items.size() != 2)
      corrupt(path, fmt::format("tensor '{}' has no data_offsets [begin, end]", name));
    Shape dims;
    uint64_t numel = 1;
    try {
      for (const Json& d : shape->items) {
        uint64_t v = d.as_u64();
        if (v > (uint64_t{1} << 40) || (v != 0 && numel > (uint64_t{1} << 40) / v))
          corrupt(path, fmt::format("tensor '{}' has an absurd shape", name));
        numel *= v;
        dims.push_back(static_cast<int64_t>(v));
      }
    } catch (const JsonError& e) {
      corrupt(path, fmt::format("tensor '{}' shape: {}", name, e.what()));
    }
    uint64_t begin = 0, end = 0;
    try {
      begin = offsets->items[0].as_u64();
      end = offsets->items[1].as_u64();
    } catch (const JsonError& e) {
      corrupt(path, fmt::format("tensor '{}' data_offsets: {}", name, e.what()));
    }
    if (begin > end || end > data_size)
      corrupt(path, fmt::format("tensor '{}' data_offsets [{}, {}] lie outside the {} data bytes", name,
                                begin, end, data_size));
    if (end - begin != numel * sizeof(float))
      corrupt(path, fmt::format("tensor '{}' has {} data bytes but shape {} needs {}", name, end - begin,
                                shape_string(dims), numel * sizeof(float)));
    spans.push_back({begin, end, name});
    out.tensors[name] = Tensor::zeros(dims);
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  uint64_t covered = 0;
  for (const Span& s : spans) {
    if (s.begin != covered)
      corrupt(path, s.begin < covered ? fmt::format("tensor '{}' overlaps the tensor before it", s.name)
                                      : fmt::format("{} data bytes before tensor '{}' belong to no tensor",
                                                    s.begin - covered, s.name));
    covered = s.end;
  }
  if (covered != data_size)
    corrupt(path, fmt::format("file has {} data bytes but the tensors cover {}", data_size, covered));
  for (const Span& s : spans) {
    Tensor& t = out.tensors[s.name];
    in.seekg(static_cast<std::streamoff>(8 + n + s.begin));
    in.read(reinterpret_cast<char*>(t.data()), static_cast<std::streamsize>(s.end - s.begin));
    if (!in) corrupt(path, fmt::format("cannot read the data of tensor '{}'", s.name));
  }
  return out;
}

}  // namespace emu::train
