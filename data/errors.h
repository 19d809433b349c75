// Errors of the loaders. A missing or damaged dataset file is reported with the
// file, what was expected of it and where the dataset can be downloaded, so the
// user knows what to fetch without reading the loader.
#pragma once

#include <string>

namespace emu::data {

// Throws std::runtime_error "<file>: <problem> (download: <url>)"; an empty url
// (user data such as image folders) leaves the hint out.
[[noreturn]] void file_error(const std::string& file, const std::string& problem, const std::string& url);

// Canonical download locations, named in errors and in docs/data.md.
inline constexpr const char* kCifar10Url = "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz";
inline constexpr const char* kMnistUrl =
    "http://yann.lecun.com/exdb/mnist/ (mirror: https://ossci-datasets.s3.amazonaws.com/mnist/)";
inline constexpr const char* kUcrUrl =
    "https://www.cs.ucr.edu/~eamonn/time_series_data_2018/ (UCRArchive_2018.zip; FordA also at "
    "https://timeseriesclassification.com/description.php?Dataset=FordA)";
inline constexpr const char* kCoraUrl =
    "https://linqs-data.soe.ucsc.edu/public/lbc/cora.tgz (also https://github.com/tkipf/pygcn/tree/master/data/cora)";
inline constexpr const char* kFraEngUrl = "https://www.manythings.org/anki/fra-eng.zip";

}  // namespace emu::data
