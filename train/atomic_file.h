// The one way emutrain replaces a whole file (checkpoints, sweep tables and
// markers, summary.json, recipe.yaml, CSV tables of the tools): write
// "<path>.tmp" in the same directory, fsync it, rename it over `path`, fsync
// the directory. A reader, or a run killed at any moment, sees either the old
// file or the complete new one, and after a crash the new name survives with
// the new bytes. Files that grow line by line during a run (metrics.jsonl,
// metrics.csv, log.txt, fault_events.csv) are appended instead; only their
// rewrites go through here.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace emu::train {

// A file that could not be written; what() names the file and the OS error.
class FileWriteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A replacement of `path` written piece by piece (for files too large to
// build in memory first). Nothing is visible at `path` until commit();
// destroyed without commit() (an exception), the temporary file is removed
// and the old file stays as it was.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t n);
  void write(std::string_view text) { write(text.data(), text.size()); }
  // fsync, rename over the target, fsync of the directory.
  void commit();

  const std::string& path() const { return path_; }

 private:
  std::string path_, tmp_;
  int fd_ = -1;
};

// `text` as the whole new content of `path`, atomically (as above).
void write_file_atomic(const std::string& path, std::string_view text);

}  // namespace emu::train
