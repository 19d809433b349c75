#include "data/catalog.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "config/names.h"

namespace emu::data {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Checksums below were computed from the canonical files: Cora and the
// 2019-04-07 fra.txt from the copies in the project's shared data folder
// (the same bytes as tkipf/pygcn and manythings.org's release of that date),
// MNIST as published by many independent projects (TensorFlow Datasets,
// torchvision mirrors), the CIFAR-10 archive from TensorFlow Datasets'
// checksum registry.
std::vector<CatalogEntry> build() {
  std::vector<CatalogEntry> t;

  const std::string pygcn = "https://raw.githubusercontent.com/tkipf/pygcn/master/data/cora/";
  t.push_back(
      {"cora",
       "cora",
       "cora",
       "Cora citation graph: 2708 papers, 1433 binary word features, 7 classes",
       "LINQS (Sen et al. 2008), as shipped by tkipf/pygcn (MIT)",
       {{pygcn + "cora.content",
         "",
         {{"cora.content", "b8ebed0fd45e53995abafd1b70cf6a9fcc8f86abc5826d69b97fe6ca46e9c8ee", "", -1}}},
        {pygcn + "cora.cites",
         "",
         {{"cora.cites", "ec1a372391b7f0f60a6aff0084e8abd8f19f0faa7e1f2441a41c492042d5945e", "", -1}}}}});

  // yann.lecun.com refuses most automated downloads; the S3 mirror is the one
  // torchvision uses and serves the identical files.
  const std::string mnist = "https://ossci-datasets.s3.amazonaws.com/mnist/";
  auto mnist_file = [&](const std::string& name, const std::string& sha) {
    return CatalogDownload{mnist + name, "", {{name, sha, "", -1}}};
  };
  t.push_back({"mnist",
               "mnist",
               "mnist",
               "MNIST handwritten digits: 60,000 training and 10,000 test images, 28x28",
               "LeCun, Cortes and Burges; mirror of yann.lecun.com/exdb/mnist",
               {mnist_file("train-images-idx3-ubyte.gz",
                           "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"),
                mnist_file("train-labels-idx1-ubyte.gz",
                           "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c"),
                mnist_file("t10k-images-idx3-ubyte.gz",
                           "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6"),
                mnist_file("t10k-labels-idx1-ubyte.gz",
                           "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6")}});

  CatalogDownload cifar{"https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz",
                        "c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd",
                        {}};
  for (const char* f : {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
                        "data_batch_5.bin", "test_batch.bin", "batches.meta.txt"}) {
    const std::string p = std::string("cifar-10-batches-bin/") + f;
    cifar.files.push_back({p, "", p, -1});
  }
  t.push_back({"cifar10",
               "cifar10",
               "cifar10",
               "CIFAR-10: 50,000 training and 10,000 test colour images, 32x32, 10 classes",
               "Krizhevsky, 2009 (binary version)",
               {cifar}});

  // manythings.org republishes fra-eng.zip as Tatoeba grows, so the archive
  // has no stable checksum; the pinned fra.txt is the 2019-04-07 release the
  // recipes were tuned on (167,130 pairs).
  t.push_back(
      {"fra-eng",
       "fra-eng",
       "fra_eng",
       "English-French sentence pairs (Tatoeba), the 2019-04-07 release",
       "manythings.org/anki, CC-BY 2.0 (Tatoeba)",
       {{"https://www.manythings.org/anki/fra-eng.zip",
         "",
         {{"fra.txt", "0bb85dbaa1c896844649094d7eaf2e34bee34e84fe362b26ce7e8f2e12aae104", "fra.txt", -1}}}}});

  // The UCR 2018 archive is one password-protected zip of every series; the
  // copy of FordA's two .tsv files that Keras' time-series examples read is
  // the practical source. No checksum of them could be computed offline.
  const std::string forda = "https://raw.githubusercontent.com/hfawaz/cd-diagram/master/FordA/";
  t.push_back({"forda",
               "ucr",
               "ucr",
               "FordA engine-noise series (UCR 2018): 3601 training and 1320 test series of 500 values",
               "UCR time-series archive 2018 (Dau et al.), copy in hfawaz/cd-diagram",
               {{forda + "FordA_TRAIN.tsv", "", {{"FordA_TRAIN.tsv", "", "", 3601}}},
                {forda + "FordA_TEST.tsv", "", {{"FordA_TEST.tsv", "", "", 1320}}}}});
  return t;
}

}  // namespace

std::string CatalogDownload::file_name() const {
  const size_t slash = url.find_last_of('/');
  return slash == std::string::npos ? url : url.substr(slash + 1);
}

const std::vector<CatalogEntry>& dataset_catalog() {
  static const std::vector<CatalogEntry> table = build();
  return table;
}

const CatalogEntry& catalog_entry(const std::string& name) {
  std::vector<std::string> names;
  for (const CatalogEntry& e : dataset_catalog()) {
    if (e.name == lower(name)) return e;
    names.push_back(e.name);
  }
  throw std::invalid_argument("unknown dataset '" + name + "' (known: " + config::join_names(names) + ")");
}

const CatalogEntry* catalog_entry_for_folder(const std::string& folder) {
  for (const CatalogEntry& e : dataset_catalog())
    if (e.folder == folder) return &e;
  return nullptr;
}

}  // namespace emu::data
