// The datasets `emutrain data fetch` knows: where each is published, which
// files a loader needs, and their SHA-256 checksums, pinned here so that a
// download (or a copy found on disk) is checked against the bytes the
// project was developed on, not against whatever a server sends today.
//
// A file's checksum is pinned when it could be computed from the canonical
// file when this table was written. Where only the archive's checksum is
// published (CIFAR-10), the archive is pinned and its members are trusted
// because the archive verified; `fetch` then records their checksums beside
// them (see data/fetch.h) so later checks need no archive. A file with neither
// pin (FordA, whose files could not be obtained offline) is recorded at its
// first fetch and checked for its expected line count; `data list` says which
// kind of check each dataset gets.
#pragma once

#include <string>
#include <vector>

namespace emu::data {

// One file a loader reads, at `path` under the dataset's folder.
struct CatalogFile {
  std::string path;      // e.g. "cora.content", "cifar-10-batches-bin/test_batch.bin"
  std::string sha256;    // pinned checksum; empty where none is known (see above)
  std::string member;    // its name inside the download's archive; empty when the download is the file
  long long lines = -1;  // expected number of lines, checked where no checksum is pinned; -1: none
};

// One download: a file, or an archive holding several of the files.
struct CatalogDownload {
  std::string url;     // canonical address; its last path component names the download
  std::string sha256;  // pinned checksum of the archive; empty for plain files or unknown
  std::vector<CatalogFile> files;
  bool archive() const { return !files.empty() && !files.front().member.empty(); }
  std::string file_name() const;  // the url's last component, e.g. "cifar-10-binary.tar.gz"
};

struct CatalogEntry {
  std::string name;       // what `data fetch` takes: cora, mnist, cifar10, fra-eng, forda
  std::string folder;     // under the data root; the recipe data type's default folder
  std::string data_type;  // the recipe's data.type that reads it
  std::string description;
  std::string source;  // publisher and licence, for `data list` and docs/data.md
  std::vector<CatalogDownload> downloads;
};

// The built-in datasets, in the order `data list` shows them.
const std::vector<CatalogEntry>& dataset_catalog();

// The entry named `name` (case-insensitive); throws std::invalid_argument
// naming the known datasets otherwise.
const CatalogEntry& catalog_entry(const std::string& name);

// The entry whose folder and data type are these, or nullptr (used by the
// loaders' errors to name the fetch command).
const CatalogEntry* catalog_entry_for_folder(const std::string& folder);

}  // namespace emu::data
