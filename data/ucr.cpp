#include "data/ucr.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "data/errors.h"
#include "data/file_io.h"
#include "data/image_dataset.h"

namespace emu::data {
namespace {

const char* kUcrWhat = "one series per line: class label, then the values, tab-separated (UCR 2018 .tsv)";

struct Parsed {
  std::vector<std::string> labels;
  std::vector<float> values;
  int64_t length = -1;
};

Parsed parse_tsv(const std::string& path) {
  Parsed p;
  std::vector<std::string> lines = read_lines(path, kUcrWhat, kUcrUrl);
  for (size_t ln = 0; ln < lines.size(); ++ln) {
    const std::string& line = lines[ln];
    if (line.empty()) continue;
    std::string where = "line " + std::to_string(ln + 1);
    size_t tab = line.find('\t');
    if (tab == std::string::npos) file_error(path, where + ": no tab (expected " + kUcrWhat + ")", kUcrUrl);
    std::string label = line.substr(0, tab);
    char* end = nullptr;
    std::strtod(label.c_str(), &end);
    if (label.empty() || *end != '\0')
      file_error(path, where + ": label '" + label + "' is not a number (expected " + kUcrWhat + ")",
                 kUcrUrl);
    int64_t count = 0;
    const char* s = line.c_str() + tab + 1;
    for (;;) {
      const char* field_end = std::strchr(s, '\t');
      std::string field = field_end ? std::string(s, field_end) : std::string(s);
      errno = 0;
      float v = std::strtof(field.c_str(), &end);
      if (field.empty() || *end != '\0')
        file_error(path,
                   where + ": value " + std::to_string(count + 1) + " '" + field +
                       "' is not a number (expected " + kUcrWhat + ")",
                   kUcrUrl);
      p.values.push_back(v);
      ++count;
      if (!field_end) break;
      s = field_end + 1;
    }
    if (p.length < 0) p.length = count;
    if (count != p.length)
      file_error(path,
                 where + ": " + std::to_string(count) + " values, earlier lines have " +
                     std::to_string(p.length) + " (series must all be one length)",
                 kUcrUrl);
    p.labels.push_back(label);
  }
  if (p.labels.empty()) file_error(path, "no series (expected " + std::string(kUcrWhat) + ")", kUcrUrl);
  return p;
}

std::string ucr_folder(const UcrOptions& o) {
  std::string sub = join_path(o.root, o.name);
  if (file_exists(join_path(sub, o.name + "_TRAIN.tsv"))) return sub;
  return o.root;
}

}  // namespace

UcrDataset::UcrDataset(std::string name, std::vector<float> values, std::vector<int64_t> labels,
                       int64_t length, std::vector<std::string> class_labels)
    : name_(std::move(name)),
      values_(std::move(values)),
      labels_(std::move(labels)),
      length_(length),
      class_labels_(std::move(class_labels)) {}

Batch UcrDataset::get(const std::vector<int64_t>& indices, uint64_t, int64_t) const {
  const int64_t n = static_cast<int64_t>(indices.size());
  Tensor x = Tensor::zeros({n, length_, 1});
  Tensor y = Tensor::zeros({n});
  for (int64_t i = 0; i < n; ++i) {
    int64_t index = indices[static_cast<size_t>(i)];
    check_index(index, size(), name_);
    std::memcpy(x.data() + i * length_, values_.data() + index * length_,
                sizeof(float) * static_cast<size_t>(length_));
    y.data()[i] = static_cast<float>(labels_[static_cast<size_t>(index)]);
  }
  Batch b;
  b.tensors["x"] = x;
  b.tensors["y"] = y;
  b.size = n;
  return b;
}

std::map<std::string, int64_t> UcrDataset::meta() const {
  return {{"classes", static_cast<int64_t>(class_labels_.size())}, {"length", length_}, {"channels", 1}};
}

std::string UcrDataset::describe() const {
  return name_ + ", " + std::to_string(size()) + " series of length " + std::to_string(length_) + ", " +
         std::to_string(class_labels_.size()) + " classes";
}

std::unique_ptr<UcrDataset> load_ucr(const UcrOptions& options, bool train) {
  std::string folder = ucr_folder(options);
  std::string train_path = join_path(folder, options.name + "_TRAIN.tsv");
  std::string test_path = join_path(folder, options.name + "_TEST.tsv");
  if (!file_exists(train_path))
    file_error(train_path,
               "file not found (nor " +
                   join_path(join_path(options.root, options.name), options.name + "_TRAIN.tsv") +
                   "; expected " + kUcrWhat + ")",
               kUcrUrl);
  Parsed train_set = parse_tsv(train_path);
  // Classes: the training labels in ascending numeric order.
  std::vector<std::string> classes = train_set.labels;
  std::sort(classes.begin(), classes.end(), [](const std::string& a, const std::string& b) {
    double da = std::strtod(a.c_str(), nullptr), db = std::strtod(b.c_str(), nullptr);
    return da != db ? da < db : a < b;
  });
  classes.erase(std::unique(classes.begin(), classes.end(),
                            [](const std::string& a, const std::string& b) {
                              return std::strtod(a.c_str(), nullptr) == std::strtod(b.c_str(), nullptr);
                            }),
                classes.end());

  Parsed set = train ? std::move(train_set) : parse_tsv(test_path);
  const std::string& path = train ? train_path : test_path;
  if (!train && set.length != train_set.length)
    file_error(path,
               "series have length " + std::to_string(set.length) + ", the training series " +
                   std::to_string(train_set.length),
               kUcrUrl);
  std::vector<int64_t> labels;
  for (size_t i = 0; i < set.labels.size(); ++i) {
    double v = std::strtod(set.labels[i].c_str(), nullptr);
    int64_t k = -1;
    for (size_t c = 0; c < classes.size(); ++c)
      if (std::strtod(classes[c].c_str(), nullptr) == v) k = static_cast<int64_t>(c);
    if (k < 0)
      file_error(path,
                 "series " + std::to_string(i + 1) + " has label '" + set.labels[i] +
                     "', which the training file does not have",
                 kUcrUrl);
    labels.push_back(k);
  }
  return std::make_unique<UcrDataset>(options.name + (train ? " train" : " test"), std::move(set.values),
                                      std::move(labels), set.length, std::move(classes));
}

}  // namespace emu::data
