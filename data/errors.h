// Errors of the loaders. A missing or damaged dataset file is reported with the
// file, what was expected of it and where the dataset can be downloaded, so the
// user knows what to fetch without reading the loader.
#pragma once

#include <string>

namespace emu::data {

// Throws std::runtime_error "<file>: <problem> (<source>)", where source is one
// of the k*Url hints below; an empty one (user data such as image folders)
// leaves the hint out.
[[noreturn]] void file_error(const std::string& file, const std::string& problem, const std::string& url);

// Where each dataset comes from, appended to the loaders' errors: the fetch
// command first (it downloads and verifies, data/catalog.h), then the
// canonical address for those who fetch by hand.
inline constexpr const char* kCifar10Url =
    "get it with: emutrain data fetch cifar10; download: "
    "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz";
inline constexpr const char* kMnistUrl =
    "get it with: emutrain data fetch mnist; download: http://yann.lecun.com/exdb/mnist/ (mirror: "
    "https://ossci-datasets.s3.amazonaws.com/mnist/)";
inline constexpr const char* kUcrUrl =
    "FordA: emutrain data fetch forda; other series: download "
    "https://www.cs.ucr.edu/~eamonn/time_series_data_2018/ "
    "(UCRArchive_2018.zip; FordA also at https://timeseriesclassification.com/description.php?Dataset=FordA)";
inline constexpr const char* kCoraUrl =
    "get it with: emutrain data fetch cora; download: https://linqs-data.soe.ucsc.edu/public/lbc/cora.tgz "
    "(also "
    "https://github.com/tkipf/pygcn/tree/master/data/cora)";
inline constexpr const char* kFraEngUrl =
    "get it with: emutrain data fetch fra-eng; download: https://www.manythings.org/anki/fra-eng.zip";

}  // namespace emu::data
