// make_dataset: types, keys, roots, splits (ranges, held-out validation), errors.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>

#include "data/draws.h"
#include "data/image_dataset.h"
#include "data/registry.h"
#include "data/subset.h"
#include "test_data_util.h"
#include "test_util.h"

using namespace emu;
using emu::test::TempDir;
namespace fs = std::filesystem;

namespace {

YAML::Node yaml(const std::string& text) { return YAML::Load(text); }

void put32(std::vector<uint8_t>& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(v >> s));
}

// t10k IDX files of n 2x2 images; image i has every pixel i, label i % 10.
void write_mnist(const std::string& dir, uint32_t n) {
  std::vector<uint8_t> images, labels;
  put32(images, 0x803), put32(images, n), put32(images, 2), put32(images, 2);
  put32(labels, 0x801), put32(labels, n);
  for (uint32_t i = 0; i < n; ++i) {
    for (int k = 0; k < 4; ++k) images.push_back(static_cast<uint8_t>(i));
    labels.push_back(static_cast<uint8_t>(i % 10));
  }
  emu::test::write_gzip(dir + "/t10k-images-idx3-ubyte.gz", images);
  emu::test::write_gzip(dir + "/t10k-labels-idx1-ubyte.gz", labels);
}

// The example ids of a whole split (pixel value = example id in the file).
std::vector<int> ids(const data::Dataset& ds) {
  std::vector<int64_t> all(static_cast<size_t>(ds.size()));
  for (int64_t i = 0; i < ds.size(); ++i) all[i] = i;
  std::vector<float> x = ds.get(all, 0, 0).at("x").to_vector();
  std::vector<int> out;
  for (size_t i = 0; i < x.size(); i += 4) out.push_back(static_cast<int>(x[i] * 255.0f + 0.5f));
  return out;
}

struct EnvGuard {
  explicit EnvGuard(const char* value) {
    const char* old = std::getenv("EMUTRAIN_DATA_ROOT");
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value)
      setenv("EMUTRAIN_DATA_ROOT", value, 1);
    else
      unsetenv("EMUTRAIN_DATA_ROOT");
  }
  ~EnvGuard() {
    if (had_)
      setenv("EMUTRAIN_DATA_ROOT", old_.c_str(), 1);
    else
      unsetenv("EMUTRAIN_DATA_ROOT");
  }
  bool had_;
  std::string old_;
};

}  // namespace

TEST_CASE("registry: types and keys", "[data][registry]") {
  CHECK(data::dataset_types() ==
        std::vector<std::string>{"cifar10", "image_folder", "mnist", "ucr", "cora", "fra_eng"});
  auto keys = data::dataset_keys("cifar10");
  for (const char* k :
       {"type", "root", "batch_size", "eval_batch_size", "workers", "shuffle", "drop_last", "augment"})
    CHECK(std::find(keys.begin(), keys.end(), k) != keys.end());
  CHECK_THROWS_WITH(data::dataset_keys("imagenet"), Catch::Contains("unknown dataset type 'imagenet'"));

  CHECK_THROWS_WITH(
      data::make_dataset(yaml("{type: cifar10, augmnt: {hflip: true}}"), "train"),
      Catch::Equals("data.augmnt: unknown key (allowed: type, root, batch_size, eval_batch_size, "
                    "workers, shuffle, drop_last, augment, normalize, mean, std, train_range, "
                    "test_range, val_size, split_seed)"));
  CHECK_THROWS_WITH(data::make_dataset(yaml("{type: cifar10, root: /x, augment: {flip: true}}"), "train"),
                    Catch::StartsWith("data.augment.flip: unknown key (allowed: crop_padding, hflip)"));
  CHECK_THROWS_WITH(
      data::make_dataset(yaml("{type: cifar100}"), "train"),
      Catch::Equals("data.type: unknown type 'cifar100' (allowed: cifar10, image_folder, mnist, ucr, "
                    "cora, fra_eng)"));
  CHECK_THROWS_WITH(data::make_dataset(yaml("{root: /x}"), "train"), Catch::StartsWith("data.type: missing"));
  CHECK_THROWS_WITH(data::make_dataset(yaml("{type: mnist}"), "dev"), Catch::Contains("train, val or test"));
  CHECK_THROWS_WITH(data::make_dataset(yaml("{type: image_folder}"), "train"),
                    Catch::StartsWith("data.root: required for type image_folder"));
}

TEST_CASE(
    "registry: root from EMUTRAIN_DATA_ROOT, else ./data; missing files name the fetch command and the URL",
    "[data][registry]") {
  TempDir dir;
  write_mnist(dir / "mnist", 12);
  {
    EnvGuard env(dir.path().c_str());
    auto ds = data::make_dataset(
        yaml("{type: mnist, batch_size: 4, workers: 2, shuffle: true, eval_batch_size: 8}"), "test");
    CHECK(ds->size() == 12);
    CHECK_THROWS_WITH(data::make_dataset(yaml("{type: cora}"), "train"),
                      Catch::Contains(dir / "cora/cora.content") && Catch::Contains("not found") &&
                          Catch::Contains("linqs-data.soe.ucsc.edu"));
    CHECK_THROWS_WITH(
        data::make_dataset(yaml("{type: cifar10}"), "test"),
        Catch::Contains(dir / "cifar10/test_batch.bin") && Catch::Contains("cifar-10-binary.tar.gz"));
    CHECK_THROWS_WITH(data::make_dataset(yaml("{type: ucr, name: Wafer}"), "train"),
                      Catch::Contains("Wafer_TRAIN.tsv") && Catch::Contains("time_series_data_2018"));
    CHECK_THROWS_WITH(data::make_dataset(yaml("{type: fra_eng}"), "train"),
                      Catch::Contains(dir / "fra-eng/fra.txt") && Catch::Contains("fra-eng.zip"));
  }
  {
    // Neither set: ./data/<folder>, and the error names the command that fetches it.
    EnvGuard env(nullptr);
    CHECK_THROWS_WITH(data::make_dataset(yaml("{type: cora}"), "train"),
                      Catch::StartsWith("data/cora/cora.content: file not found") &&
                          Catch::Contains("get it with: emutrain data fetch cora"));
    CHECK_THROWS_WITH(data::make_dataset(yaml("{type: ucr, name: FordA}"), "train"),
                      Catch::StartsWith("data/ucr/FordA_TRAIN.tsv: file not found") &&
                          Catch::Contains("emutrain data fetch forda"));
    // ... which finds what ./data holds, relative to the working directory.
    const fs::path here = fs::current_path();
    fs::current_path(dir.path());
    write_mnist(dir / "data/mnist", 6);
    auto ds = data::make_dataset(yaml("{type: mnist}"), "test");
    fs::current_path(here);
    CHECK(ds->size() == 6);
  }
}

TEST_CASE("registry: ranges of one file and a held-out validation split", "[data][registry]") {
  TempDir dir;
  write_mnist(dir.path(), 20);
  std::string base = "{type: mnist, root: '" + dir.path() + "', normalize: false, train_source: t10k, ";
  // The recipe shape of the offline MNIST runs: train on the first 16, test on the last 4.
  auto train = data::make_dataset(yaml(base + "train_range: [0, 16], test_range: [16, 20]}"), "train");
  auto test = data::make_dataset(yaml(base + "train_range: [0, 16], test_range: [16, 20]}"), "test");
  CHECK(data::make_dataset(yaml(base + "train_range: [0, 16]}"), "val") == nullptr);
  std::vector<int> want_train(16), want_test = {16, 17, 18, 19};
  for (int i = 0; i < 16; ++i) want_train[i] = i;
  CHECK(ids(*train) == want_train);
  CHECK(ids(*test) == want_test);
  CHECK(emu::test::field(test->get({0}, 0, 0), "y") == std::vector<float>{6});
  CHECK(train->meta()["height"] == 2);
  CHECK_THAT(test->describe(), Catch::Contains("test_range [16, 20)"));

  // val_size: 5 of the ranged training examples, chosen by split_seed; disjoint, covering.
  std::string v = base + "train_range: [0, 16], val_size: 5, split_seed: 3}";
  std::vector<int> tr = ids(*data::make_dataset(yaml(v), "train"));
  std::vector<int> va = ids(*data::make_dataset(yaml(v), "val"));
  CHECK(tr.size() == 11);
  CHECK(va.size() == 5);
  std::vector<int> both = tr;
  both.insert(both.end(), va.begin(), va.end());
  std::sort(both.begin(), both.end());
  CHECK(both == want_train);
  CHECK(std::is_sorted(va.begin(), va.end()));
  std::vector<int64_t> perm = data::philox_permutation(16, 3, data::data_stream(data::DataDraw::Split, 0));
  std::vector<int> want_va(perm.begin(), perm.begin() + 5);
  std::sort(want_va.begin(), want_va.end());
  CHECK(va == want_va);
  std::string v4 = base + "train_range: [0, 16], val_size: 5, split_seed: 4}";
  CHECK(ids(*data::make_dataset(yaml(v4), "val")) != va);

  CHECK_THROWS_WITH(
      data::make_dataset(yaml(base + "train_range: [0, 21]}"), "train"),
      Catch::StartsWith("data.train_range: expected [begin, end] with 0 <= begin <= end <= 20"));
  CHECK_THROWS_WITH(data::make_dataset(yaml(base + "val_size: 20}"), "val"),
                    Catch::StartsWith("data.val_size: 20 leaves no training examples"));
  CHECK_THROWS_WITH(data::make_dataset(yaml(base + "pad: x}"), "train"),
                    Catch::Equals("data.pad: expected an integer, got 'x'"));
  CHECK_THROWS_WITH(data::make_dataset(yaml(base + "test_source: t20k}"), "test"),
                    Catch::Equals("data.test_source: unknown value 't20k' (allowed: train, t10k)"));
  CHECK_THROWS_WITH(data::make_dataset(yaml(base + "mean: [0.5, 0.5], std: [1, 1]}"), "train"),
                    Catch::Contains("one value per channel (1)"));
}

TEST_CASE("registry: augmentation only on the train split", "[data][registry]") {
  TempDir dir;
  std::vector<uint8_t> rec;
  emu::test::ByteSource bytes(1);
  for (int r = 0; r < 3; ++r) {
    rec.push_back(static_cast<uint8_t>(r));
    for (int k = 0; k < 3072; ++k) rec.push_back(bytes.next());
  }
  for (int i = 1; i <= 5; ++i) emu::test::write_file(dir / ("data_batch_" + std::to_string(i) + ".bin"), rec);
  emu::test::write_file(dir / "test_batch.bin", rec);
  std::string y =
      "{type: cifar10, root: '" + dir.path() + "', augment: {crop_padding: 4, hflip: true}, val_size: 3}";
  auto train = data::make_dataset(yaml(y), "train");
  auto val = data::make_dataset(yaml(y), "val");
  auto test = data::make_dataset(yaml(y), "test");
  CHECK(train->size() == 12);
  CHECK(val->size() == 3);
  CHECK(test->size() == 3);
  CHECK_THAT(train->describe(), Catch::Contains("random crop (padding 4) + horizontal flip"));
  CHECK_THAT(val->describe(), Catch::Contains("no augmentation"));
  CHECK_THAT(test->describe(), Catch::Contains("no augmentation"));
  // Val/test batches do not depend on the epoch; train batches do.
  CHECK(emu::test::field(test->get({0, 1, 2}, 1, 0), "x") ==
        emu::test::field(test->get({0, 1, 2}, 1, 5), "x"));
  CHECK(emu::test::field(train->get({0, 1, 2}, 1, 0), "x") !=
        emu::test::field(train->get({0, 1, 2}, 1, 5), "x"));
}
