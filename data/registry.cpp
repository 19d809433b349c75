#include "data/registry.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <stdexcept>

#include "config/names.h"
#include "config/section.h"
#include "data/cifar10.h"
#include "data/cora.h"
#include "data/data_root.h"
#include "data/draws.h"
#include "data/file_io.h"
#include "data/fra_eng.h"
#include "data/image_folder.h"
#include "data/mnist.h"
#include "data/subset.h"
#include "data/ucr.h"

namespace emu::data {

using config::ConfigSection;
using config::join_names;

namespace {

// Types whose splits are sets of independent examples share the split keys:
// train_range/test_range pick examples [begin, end) of the training/test
// files, val_size holds examples of the (ranged) training set out as the
// validation split, chosen by split_seed.
const std::vector<std::string> kExampleSplitKeys = {"train_range", "test_range", "val_size", "split_seed"};
const std::vector<std::string> kAugmentKeys = {"crop_padding", "hflip"};

// A loader of one set of examples: the training files (train_set) or the test
// files, augmented or not.
using ExampleSource = std::function<std::unique_ptr<Dataset>(const ConfigSection&, const std::string& root,
                                                             bool train_set, bool augment)>;
using WholeFactory = std::function<std::unique_ptr<Dataset>(const ConfigSection&, const std::string& root,
                                                            const std::string& split)>;

struct TypeEntry {
  std::string name;
  std::string default_subfolder;  // under the data root (data/data_root.h); empty: data.root required
  std::string expected;           // what root must hold, for the error when it is unset
  std::vector<std::string> keys;  // type-specific keys
  ExampleSource source;           // example-set types
  WholeFactory whole;             // types that split themselves (cora, fra_eng)
};

ImageAugment read_augment(const ConfigSection& cfg) {
  ConfigSection a = cfg.section("augment");
  a.check_keys(kAugmentKeys);
  ImageAugment aug;
  aug.crop_padding = a.get_int("crop_padding", 0);
  if (aug.crop_padding < 0) a.fail("crop_padding", "must be >= 0, got " + std::to_string(aug.crop_padding));
  aug.hflip = a.get_bool("hflip", false);
  return aug;
}

// normalize: false drops the dataset's default statistics; mean/std replace them.
PixelNormalize read_normalize(const ConfigSection& cfg, PixelNormalize fallback, int64_t channels) {
  PixelNormalize n = cfg.get_bool("normalize", true) ? std::move(fallback) : PixelNormalize{};
  if (cfg.has("mean") || cfg.has("std")) {
    if (!cfg.has("mean") || !cfg.has("std"))
      cfg.fail(cfg.has("mean") ? "std" : "mean", "mean and std go together");
    n.mean = cfg.get_float_list("mean");
    n.std = cfg.get_float_list("std");
  }
  n.check(channels, cfg.path() + ".mean/std");
  return n;
}

std::unique_ptr<Dataset> cifar10_source(const ConfigSection& cfg, const std::string& root, bool train_set,
                                        bool augment) {
  Cifar10Options o;
  o.root = root;
  o.normalize = read_normalize(cfg, cifar10_normalize(), 3);
  ImageAugment aug = read_augment(cfg);  // checked even where unused
  if (augment) o.augment = aug;
  return load_cifar10(o, train_set);
}

std::unique_ptr<Dataset> mnist_source(const ConfigSection& cfg, const std::string& root, bool train_set,
                                      bool augment) {
  MnistOptions o;
  o.root = root;
  o.set = train_set ? cfg.get_choice("train_source", "train", {"train", "t10k"})
                    : cfg.get_choice("test_source", "t10k", {"train", "t10k"});
  o.pad = cfg.get_int("pad", 0);
  if (o.pad < 0) cfg.fail("pad", "must be >= 0");
  o.normalize = read_normalize(cfg, mnist_normalize(), 1);
  ImageAugment aug = read_augment(cfg);  // checked even where unused
  if (augment) o.augment = aug;
  return load_mnist(o);
}

std::unique_ptr<Dataset> image_folder_source(const ConfigSection& cfg, const std::string& root,
                                             bool train_set, bool augment) {
  ImageFolderOptions o;
  o.root = root;
  o.split = train_set ? "train" : "test";
  o.channels = cfg.get_int("channels", 3);
  if (o.channels != 1 && o.channels != 3)
    cfg.fail("channels", "must be 1 or 3, got " + std::to_string(o.channels));
  o.normalize = read_normalize(cfg, PixelNormalize{}, o.channels);
  ImageAugment aug = read_augment(cfg);  // checked even where unused
  if (augment) o.augment = aug;
  return load_image_folder(o);
}

std::unique_ptr<Dataset> ucr_source(const ConfigSection& cfg, const std::string& root, bool train_set, bool) {
  UcrOptions o;
  o.root = root;
  o.name = cfg.get_string("name", "FordA");
  return load_ucr(o, train_set);
}

std::unique_ptr<Dataset> cora_whole(const ConfigSection& cfg, const std::string& root,
                                    const std::string& split) {
  CoraOptions o;
  o.root = root;
  o.row_normalize =
      cfg.get_choice("features", "row_normalized", {"row_normalized", "raw"}) == "row_normalized";
  o.split_seed = static_cast<uint64_t>(cfg.get_int("split_seed", 0));
  o.train_per_class = cfg.get_int("train_per_class", 20);
  o.val_size = cfg.get_int("val_size", 500);
  o.test_size = cfg.get_int("test_size", 1000);
  for (const char* k : {"train_per_class", "val_size", "test_size"})
    if (cfg.get_int(k, 0) < 0) cfg.fail(k, "must be >= 0");
  o.split = split;
  return load_cora(o);
}

std::unique_ptr<Dataset> fra_eng_whole(const ConfigSection& cfg, const std::string& root,
                                       const std::string& split) {
  FraEngOptions o;
  o.root = root;
  o.tokens = cfg.get_choice("tokens", "word", {"word", "char"}) == "word" ? TokenKind::Word : TokenKind::Char;
  o.reverse = cfg.get_bool("reverse", false);
  o.max_tokens = cfg.get_int("max_tokens", 0);
  o.max_pairs = cfg.get_int("max_pairs", 0);
  o.test_fraction = cfg.get_double("test_fraction", 0.1);
  o.val_fraction = cfg.get_double("val_fraction", 0.0);
  o.split_seed = static_cast<uint64_t>(cfg.get_int("split_seed", 0));
  o.min_freq = cfg.get_int("min_freq", 1);
  o.max_vocab = cfg.get_int("max_vocab", 0);
  for (const char* k : {"max_tokens", "max_pairs", "min_freq", "max_vocab"})
    if (cfg.get_int(k, 0) < 0) cfg.fail(k, "must be >= 0");
  if (o.max_vocab != 0 && o.max_vocab < 5)
    cfg.fail("max_vocab", "must be 0 (no limit) or >= 5 (4 special tokens + 1)");
  for (const char* k : {"test_fraction", "val_fraction"}) {
    double f = cfg.get_double(k, 0);
    if (!(f >= 0 && f < 1)) cfg.fail(k, "must be in [0, 1)");
  }
  if (!(o.test_fraction + o.val_fraction < 1))
    cfg.fail("val_fraction", "test_fraction + val_fraction must be below 1");
  if (split == "val" && o.val_fraction == 0) return nullptr;
  o.split = split;
  return load_fra_eng(o);
}

const std::vector<TypeEntry>& type_table() {
  static const std::vector<TypeEntry> table = [] {
    auto with_split_keys = [](std::vector<std::string> keys) {
      keys.insert(keys.end(), kExampleSplitKeys.begin(), kExampleSplitKeys.end());
      return keys;
    };
    std::vector<TypeEntry> t;
    t.push_back({"cifar10", "cifar10", "cifar-10-batches-bin/ (data_batch_1..5.bin, test_batch.bin)",
                 with_split_keys({"augment", "normalize", "mean", "std"}), cifar10_source, nullptr});
    t.push_back({"image_folder", "", "train/<class>/*.png|jpg and test/<class>/*.png|jpg",
                 with_split_keys({"channels", "augment", "mean", "std"}), image_folder_source, nullptr});
    t.push_back(
        {"mnist", "mnist", "<train|t10k>-images-idx3-ubyte[.gz] and -labels-idx1-ubyte[.gz]",
         with_split_keys({"train_source", "test_source", "pad", "augment", "normalize", "mean", "std"}),
         mnist_source, nullptr});
    t.push_back({"ucr", "ucr", "<name>_TRAIN.tsv and <name>_TEST.tsv (or <name>/ holding them)",
                 with_split_keys({"name"}), ucr_source, nullptr});
    t.push_back({"cora",
                 "cora",
                 "cora.content and cora.cites",
                 {"features", "split_seed", "train_per_class", "val_size", "test_size"},
                 nullptr,
                 cora_whole});
    t.push_back({"fra_eng",
                 "fra-eng",
                 "fra.txt",
                 {"tokens", "reverse", "max_tokens", "max_pairs", "test_fraction", "val_fraction",
                  "split_seed", "min_freq", "max_vocab"},
                 nullptr,
                 fra_eng_whole});
    return t;
  }();
  return table;
}

const TypeEntry& find_type(const ConfigSection& cfg) {
  if (!cfg.has("type")) cfg.fail("type", "missing (allowed: " + join_names(dataset_types()) + ")");
  std::string type = cfg.get_string("type", "");
  for (const auto& e : type_table())
    if (e.name == type) return e;
  cfg.fail("type", "unknown type '" + type + "' (allowed: " + join_names(dataset_types()) + ")");
}

std::string resolve_root(const ConfigSection& cfg, const TypeEntry& e) {
  if (cfg.has("root")) return cfg.get_string("root", "");
  if (e.default_subfolder.empty())
    cfg.fail("root", "required for type " + e.name + " (expected a folder holding " + e.expected + ")");
  return join_path(data_root(), e.default_subfolder);
}

// [begin, end) of `key`, checked against the set's size.
std::vector<int64_t> read_range(const ConfigSection& cfg, const std::string& key, int64_t size) {
  std::vector<int64_t> r = cfg.get_int_list(key);
  if (r.empty()) {
    std::vector<int64_t> all(static_cast<size_t>(size));
    for (int64_t i = 0; i < size; ++i) all[static_cast<size_t>(i)] = i;
    return all;
  }
  if (r.size() != 2 || r[0] < 0 || r[0] > r[1] || r[1] > size)
    cfg.fail(key, "expected [begin, end] with 0 <= begin <= end <= " + std::to_string(size) +
                      " (the set's size), examples begin..end-1");
  std::vector<int64_t> idx;
  for (int64_t i = r[0]; i < r[1]; ++i) idx.push_back(i);
  return idx;
}

std::unique_ptr<Dataset> example_split(const ConfigSection& cfg, const TypeEntry& e, const std::string& root,
                                       const std::string& split) {
  const int64_t val_size = cfg.get_int("val_size", 0);
  if (val_size < 0) cfg.fail("val_size", "must be >= 0");
  const uint64_t split_seed = static_cast<uint64_t>(cfg.get_int("split_seed", 0));
  if (split == "val" && val_size == 0) return nullptr;
  const bool train_set = split != "test";
  std::unique_ptr<Dataset> base = e.source(cfg, root, train_set, split == "train");
  std::string range_key = train_set ? "train_range" : "test_range";
  std::vector<int64_t> idx = read_range(cfg, range_key, base->size());
  std::string what = split + " split";
  if (cfg.has(range_key)) {
    std::vector<int64_t> r = cfg.get_int_list(range_key);
    what += " (" + range_key + " [" + std::to_string(r[0]) + ", " + std::to_string(r[1]) + "))";
  }
  if (train_set && val_size > 0) {
    const int64_t m = static_cast<int64_t>(idx.size());
    if (val_size >= m)
      cfg.fail("val_size", std::to_string(val_size) + " leaves no training examples (the training set has " +
                               std::to_string(m) + ")");
    std::vector<int64_t> perm = philox_permutation(m, split_seed, data_stream(DataDraw::Split, 0));
    std::vector<int64_t> chosen = split == "val" ? std::vector<int64_t>(perm.begin(), perm.begin() + val_size)
                                                 : std::vector<int64_t>(perm.begin() + val_size, perm.end());
    std::sort(chosen.begin(), chosen.end());
    for (int64_t& c : chosen) c = idx[static_cast<size_t>(c)];
    idx = std::move(chosen);
    what += split == "val" ? ", held out by val_size" : ", without the val_size held out";
  }
  if (static_cast<int64_t>(idx.size()) == base->size()) return base;  // the whole set
  return std::make_unique<SubsetDataset>(std::shared_ptr<const Dataset>(std::move(base)), std::move(idx),
                                         what);
}

std::vector<std::string> all_keys(const TypeEntry& e) {
  std::vector<std::string> keys = {"type", "root"};
  for (const auto& k : trainer_data_keys()) keys.push_back(k);
  keys.insert(keys.end(), e.keys.begin(), e.keys.end());
  return keys;
}

}  // namespace

std::vector<std::string> dataset_types() {
  std::vector<std::string> names;
  for (const auto& e : type_table()) names.push_back(e.name);
  return names;
}

std::vector<std::string> trainer_data_keys() {
  return {"batch_size", "eval_batch_size", "workers", "shuffle", "drop_last"};
}

std::vector<std::string> dataset_keys(const std::string& type) {
  for (const auto& e : type_table())
    if (e.name == type) return all_keys(e);
  throw std::invalid_argument("unknown dataset type '" + type + "' (allowed: " + join_names(dataset_types()) +
                              ")");
}

std::unique_ptr<Dataset> make_dataset(const YAML::Node& data_section, const std::string& split,
                                      const std::string& path) {
  if (split != "train" && split != "val" && split != "test")
    throw std::invalid_argument("make_dataset: split must be train, val or test, got '" + split + "'");
  ConfigSection cfg(data_section, path);
  if (!data_section.IsDefined() || data_section.IsNull())
    cfg.fail("", "missing (a data section with a type: " + join_names(dataset_types()) + ")");
  if (!data_section.IsMap()) cfg.fail("", "expected a mapping of keys");
  const TypeEntry& e = find_type(cfg);
  cfg.check_keys(all_keys(e));
  std::string root = resolve_root(cfg, e);
  if (e.whole) return e.whole(cfg, root, split);
  return example_split(cfg, e, root, split);
}

}  // namespace emu::data
