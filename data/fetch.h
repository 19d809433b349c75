// `emutrain data fetch` and `data list`: a catalog dataset (data/catalog.h)
// made present and verified in its folder under the data root.
//
// Fetching never leaves a half-written file where a loader would read it:
// each download goes into a private folder `<folder>/.fetch-<pid>/`, is checked
// there (the archive's pinned checksum, then every file's), and only then
// renamed into place; any failure, an interrupted transfer or Ctrl-C removes
// the private folder. Checksums that are not pinned in the catalog but were
// established by a fetch (members of a verified archive; files with no known
// checksum at their first fetch) are recorded in `<folder>/.emutrain-sha256`
// (sha256sum's format), so later checks compare against them.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "data/catalog.h"

namespace emu::data {

enum class FileState {
  Pinned,    // matches the checksum pinned in the catalog
  Recorded,  // matches the checksum recorded when it was fetched
  Unknown,   // present, but no checksum is known (not fetched by emutrain)
  Missing,
  Mismatch,  // present, and differs from the pinned or recorded checksum
};

struct FileCheck {
  std::string path;  // under the dataset folder
  FileState state = FileState::Missing;
  std::string detail;  // for Mismatch: the checksums; for Recorded: how it was established
};

struct DatasetCheck {
  std::string folder;  // the dataset's folder
  std::vector<FileCheck> files;
  int count(FileState s) const;
  // Every file present and none mismatched.
  bool complete() const { return count(FileState::Missing) == 0 && count(FileState::Mismatch) == 0; }
  // One line: "verified: 2 files (2 pinned SHA-256)", "missing", "2 of 4 files missing: a, b", ...
  std::string summary() const;
};

// Reads and checks `entry`'s files in `folder`; writes nothing.
DatasetCheck check_dataset(const CatalogEntry& entry, const std::string& folder);

struct FetchOptions {
  // A mirror: an address (http://, https://, file://) replacing each download's
  // directory, or a local folder holding the downloads (archives or files by
  // their published names) or the dataset's files themselves. Empty: the
  // catalog's addresses.
  std::string from;
  // curl or wget; empty: find_downloader().
  std::string downloader;
  // Progress and result lines; nullptr: quiet.
  std::function<void(const std::string&)> say;
};

// Makes every file of `entry` present and verified in `folder` (created when
// needed) and returns the final check. Files already present are verified,
// not fetched again. Throws std::runtime_error, one line naming the file or
// address and what to do: a present file that mismatches (it is left alone),
// a failed download, a checksum mismatch of what was fetched, a damaged
// archive. Nothing is written into `folder` except verified files and the
// record of established checksums.
DatasetCheck fetch_dataset(const CatalogEntry& entry, const std::string& folder, const FetchOptions& options);

}  // namespace emu::data
