#include "data/cora.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "data/draws.h"
#include "data/errors.h"
#include "data/file_io.h"
#include "numerics/fp32_ops.h"

namespace emu::data {
namespace {

const char* kContentWhat = "tab-separated lines: paper id, binary (0/1) word features, class label";
const char* kCitesWhat = "tab-separated lines: cited paper id, citing paper id";

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> f;
  size_t start = 0;
  for (;;) {
    size_t tab = line.find('\t', start);
    f.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) break;
    start = tab + 1;
  }
  return f;
}

std::shared_ptr<CsrMatrix> make_csr(int64_t rows, int64_t cols,
                                    const std::vector<std::vector<int32_t>>& row_cols,
                                    const std::vector<float>& row_value) {
  auto m = std::make_shared<CsrMatrix>();
  m->rows = rows;
  m->cols = cols;
  m->row_ptr.push_back(0);
  std::vector<float> values;
  for (int64_t r = 0; r < rows; ++r) {
    for (int32_t c : row_cols[static_cast<size_t>(r)]) {
      m->col_idx.push_back(c);
      values.push_back(row_value[static_cast<size_t>(r)]);
    }
    m->row_ptr.push_back(static_cast<int64_t>(m->col_idx.size()));
  }
  m->values = Tensor::from_vector({static_cast<int64_t>(values.size())}, values);
  return m;
}

}  // namespace

CoraDataset::CoraDataset(Graph graph, const CoraOptions& options)
    : graph_(std::move(graph)), options_(options) {}

Batch CoraDataset::get(const std::vector<int64_t>& indices, uint64_t, int64_t) const {
  for (int64_t i : indices)
    if (i != 0) throw std::out_of_range("Cora: the graph is example 0, got example " + std::to_string(i));
  const int64_t v = graph_.x->rows;
  auto mask_tensor = [&](const std::vector<uint8_t>& m) {
    std::vector<float> f(m.begin(), m.end());
    return Tensor::from_vector({v}, f);
  };
  std::vector<float> y(graph_.labels.begin(), graph_.labels.end());
  Batch b;
  b.sparse["x"] = graph_.x;
  b.sparse["adj"] = graph_.adj;
  b.tensors["y"] = Tensor::from_vector({v}, y);
  b.tensors["train_mask"] = mask_tensor(graph_.train);
  b.tensors["val_mask"] = mask_tensor(graph_.val);
  b.tensors["test_mask"] = mask_tensor(graph_.test);
  const std::vector<uint8_t>& m = options_.split == "train" ? graph_.train
                                  : options_.split == "val" ? graph_.val
                                                            : graph_.test;
  b.tensors["mask"] = mask_tensor(m);
  b.size = std::count(m.begin(), m.end(), uint8_t{1});
  return b;
}

std::map<std::string, int64_t> CoraDataset::meta() const {
  auto count = [](const std::vector<uint8_t>& m) {
    return static_cast<int64_t>(std::count(m.begin(), m.end(), 1));
  };
  return {{"nodes", graph_.x->rows},
          {"features", graph_.x->cols},
          {"classes", static_cast<int64_t>(graph_.class_names.size())},
          {"edges", graph_.adj->nnz() / 2},
          {"train_nodes", count(graph_.train)},
          {"val_nodes", count(graph_.val)},
          {"test_nodes", count(graph_.test)}};
}

std::string CoraDataset::describe() const {
  auto m = meta();
  return "Cora " + options_.split + ", " + std::to_string(m["nodes"]) + " nodes, " +
         std::to_string(m["features"]) + " features (" + (options_.row_normalize ? "row-normalised" : "raw") +
         "), " + std::to_string(m["edges"]) + " undirected edges, " + std::to_string(m["classes"]) +
         " classes; split seed " + std::to_string(options_.split_seed) + ": " +
         std::to_string(m["train_nodes"]) + " train / " + std::to_string(m["val_nodes"]) + " val / " +
         std::to_string(m["test_nodes"]) + " test nodes";
}

std::unique_ptr<CoraDataset> load_cora(const CoraOptions& o) {
  if (o.split != "train" && o.split != "val" && o.split != "test")
    throw std::invalid_argument("Cora: split must be train, val or test, got '" + o.split + "'");
  if (o.train_per_class < 0 || o.val_size < 0 || o.test_size < 0)
    throw std::invalid_argument("Cora: train_per_class, val_size and test_size must be >= 0");
  const std::string content_path = join_path(o.root, "cora.content");
  const std::string cites_path = join_path(o.root, "cora.cites");

  CoraDataset::Graph g;
  std::vector<std::string> label_text;
  std::vector<std::vector<int32_t>> feature_cols;
  std::unordered_map<std::string, int32_t> node_of;
  int64_t features = -1;
  std::vector<std::string> lines = read_lines(content_path, kContentWhat, kCoraUrl);
  for (size_t ln = 0; ln < lines.size(); ++ln) {
    if (lines[ln].empty()) continue;
    std::string where = "line " + std::to_string(ln + 1) + ": ";
    std::vector<std::string> f = split_fields(lines[ln]);
    if (f.size() < 3)
      file_error(content_path, where + "too few fields (expected " + kContentWhat + ")", kCoraUrl);
    int64_t nf = static_cast<int64_t>(f.size()) - 2;
    if (features < 0) features = nf;
    if (nf != features)
      file_error(content_path,
                 where + std::to_string(nf) + " features, earlier lines have " + std::to_string(features) +
                     " (expected " + kContentWhat + ")",
                 kCoraUrl);
    if (!node_of.emplace(f[0], static_cast<int32_t>(g.paper_ids.size())).second)
      file_error(content_path, where + "paper id " + f[0] + " appears twice", kCoraUrl);
    g.paper_ids.push_back(f[0]);
    std::vector<int32_t> cols;
    for (int64_t k = 0; k < nf; ++k) {
      const std::string& s = f[static_cast<size_t>(k + 1)];
      if (s == "1")
        cols.push_back(static_cast<int32_t>(k));
      else if (s != "0")
        file_error(content_path,
                   where + "feature " + std::to_string(k) + " is '" + s + "' (expected " + kContentWhat + ")",
                   kCoraUrl);
    }
    feature_cols.push_back(std::move(cols));
    label_text.push_back(f.back());
  }
  const int64_t v = static_cast<int64_t>(g.paper_ids.size());
  if (v == 0) file_error(content_path, "no papers (expected " + std::string(kContentWhat) + ")", kCoraUrl);

  g.class_names = label_text;
  std::sort(g.class_names.begin(), g.class_names.end());
  g.class_names.erase(std::unique(g.class_names.begin(), g.class_names.end()), g.class_names.end());
  for (const std::string& t : label_text)
    g.labels.push_back(std::lower_bound(g.class_names.begin(), g.class_names.end(), t) -
                       g.class_names.begin());

  std::vector<float> row_value(static_cast<size_t>(v), 1.0f);
  if (o.row_normalize)
    for (int64_t r = 0; r < v; ++r) {
      size_t nnz = feature_cols[static_cast<size_t>(r)].size();
      if (nnz > 0) row_value[static_cast<size_t>(r)] = fp32::div(1.0f, static_cast<float>(nnz));
    }
  g.x = make_csr(v, features, feature_cols, row_value);

  // Adjacency: both directions of every citation, sorted and merged.
  std::vector<std::vector<int32_t>> neighbours(static_cast<size_t>(v));
  std::vector<std::string> cites = read_lines(cites_path, kCitesWhat, kCoraUrl);
  for (size_t ln = 0; ln < cites.size(); ++ln) {
    if (cites[ln].empty()) continue;
    std::string where = "line " + std::to_string(ln + 1) + ": ";
    std::vector<std::string> f = split_fields(cites[ln]);
    if (f.size() != 2) file_error(cites_path, where + "expected 2 fields (" + kCitesWhat + ")", kCoraUrl);
    int32_t ends[2];
    for (int k = 0; k < 2; ++k) {
      auto it = node_of.find(f[static_cast<size_t>(k)]);
      if (it == node_of.end())
        file_error(cites_path, where + "paper id " + f[static_cast<size_t>(k)] + " is not in " + content_path,
                   kCoraUrl);
      ends[k] = it->second;
    }
    if (ends[0] == ends[1]) continue;
    neighbours[static_cast<size_t>(ends[0])].push_back(ends[1]);
    neighbours[static_cast<size_t>(ends[1])].push_back(ends[0]);
  }
  for (auto& n : neighbours) {
    std::sort(n.begin(), n.end());
    n.erase(std::unique(n.begin(), n.end()), n.end());
  }
  g.adj = make_csr(v, v, neighbours, std::vector<float>(static_cast<size_t>(v), 1.0f));

  // The split.
  std::vector<int64_t> perm = philox_permutation(v, o.split_seed, data_stream(DataDraw::Split, 0));
  g.train.assign(static_cast<size_t>(v), 0);
  g.val.assign(static_cast<size_t>(v), 0);
  g.test.assign(static_cast<size_t>(v), 0);
  std::vector<int64_t> per_class(g.class_names.size(), 0);
  std::vector<int64_t> rest;
  for (int64_t node : perm) {
    int64_t c = g.labels[static_cast<size_t>(node)];
    if (per_class[static_cast<size_t>(c)] < o.train_per_class) {
      ++per_class[static_cast<size_t>(c)];
      g.train[static_cast<size_t>(node)] = 1;
    } else {
      rest.push_back(node);
    }
  }
  if (static_cast<int64_t>(rest.size()) < o.val_size + o.test_size)
    // The file's size decides this as much as the options: a loader error naming
    // the file (found by tests/fuzz/fuzz_cora.cpp, which held invalid_argument for an option error).
    file_error(content_path,
               std::to_string(v) + " papers leave " + std::to_string(rest.size()) +
                   " after the training nodes (train_per_class " + std::to_string(o.train_per_class) +
                   "), fewer than val_size + test_size = " + std::to_string(o.val_size + o.test_size) +
                   " (expected " + kContentWhat + ")",
               kCoraUrl);
  for (int64_t i = 0; i < o.val_size; ++i) g.val[static_cast<size_t>(rest[static_cast<size_t>(i)])] = 1;
  for (int64_t i = 0; i < o.test_size; ++i)
    g.test[static_cast<size_t>(rest[static_cast<size_t>(o.val_size + i)])] = 1;
  return std::make_unique<CoraDataset>(std::move(g), o);
}

}  // namespace emu::data
