// UCR time-series classification archive, 2018 format
// (https://www.cs.ucr.edu/~eamonn/time_series_data_2018/): <Name>_TRAIN.tsv and
// <Name>_TEST.tsv, one series per line, tab-separated: the class label, then
// the T values. Labels are mapped to class indices 0..K-1 in ascending numeric
// order of the training file's labels (FordA: -1 -> 0, 1 -> 1). Values are
// parsed with strtof (correctly rounded to binary32), not normalised (the
// archive's series are already z-normalised where the archive says so).
// Batch: "x" (N, T, 1), "y" (N).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace emu::data {

struct UcrOptions {
  std::string root;            // the folder holding the .tsv files, or its parent (holding <name>/)
  std::string name = "FordA";  // archive name, the file prefix
};

class UcrDataset : public Dataset {
 public:
  UcrDataset(std::string name, std::vector<float> values, std::vector<int64_t> labels, int64_t length,
             std::vector<std::string> class_labels);
  int64_t size() const override { return static_cast<int64_t>(labels_.size()); }
  // "x" (N, T, 1), "y" (N)
  Batch get(const std::vector<int64_t>& indices, uint64_t seed, int64_t epoch) const override;
  // classes, length, channels (1)
  std::map<std::string, int64_t> meta() const override;
  std::string describe() const override;
  // The label text of each class index (training file's labels, sorted).
  const std::vector<std::string>& class_labels() const { return class_labels_; }

 private:
  std::string name_;
  std::vector<float> values_;  // size() x length
  std::vector<int64_t> labels_;
  int64_t length_;
  std::vector<std::string> class_labels_;
};

std::unique_ptr<UcrDataset> load_ucr(const UcrOptions& options, bool train);

}  // namespace emu::data
