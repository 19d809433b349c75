// What every libFuzzer target of tests/fuzz shares (docs/sanitize.md):
//   - the checks on an error: one non-empty line, of the type the parser documents;
//   - a scratch folder, for the loaders that read files by path;
//   - an allocation meter, for "a loader never allocates more than a bound
//     derived from the file size";
//   - splitting one input into several files (MNIST images + labels, Cora
//     content + cites, UCR train + test).
// A violated check aborts with a message: libFuzzer reports it as a crash and
// saves the input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

namespace emu::fuzz {

// Aborts the process after printing "fuzz check failed: <what>: <detail>".
[[noreturn]] void fail(std::string_view what, std::string_view detail);

// A parser's or loader's error message is one line, not empty, and (when
// `prefix` is given) starts with it.
void require_one_line(const std::exception& e, std::string_view prefix = {});

// This process's own folder under $TMPDIR (or /tmp), made on first use and
// removed at exit; every target writes its files there.
const std::string& scratch_dir();
// Writes `bytes` to scratch_dir()/name, replacing what was there; returns the path.
std::string write_scratch(const std::string& name, std::string_view bytes);
// Removes scratch_dir()/name if it exists.
void remove_scratch(const std::string& name);

// Splits `input` at every occurrence of kFileSeparator into at most `parts`
// pieces (the last piece keeps any further separators); missing pieces are empty.
inline constexpr std::string_view kFileSeparator = "\n==EMUFUZZ-NEXT-FILE==\n";
std::vector<std::string_view> split_files(std::string_view input, size_t parts);

// How many bytes `bytes` stand for once read through zlib's gzread, as the
// loaders read every file: the inflated length of a gzip stream (counted up to
// `cap`), the plain length otherwise.
size_t inflated_size(std::string_view bytes, size_t cap);

// Peak bytes allocated (malloc and operator new, all threads) since start(),
// above what was live at start(); through the sanitizer allocator's hooks.
class AllocMeter {
 public:
  void start();
  size_t peak() const;
};

// A loader read files holding `input_bytes` bytes (inflated): its allocation
// peak must stay within kAllocPerByte * input_bytes + kAllocSlack. The slack
// covers zlib's and the reader's fixed 1 MiB buffers and per-dataset tables;
// the factor covers decoding bytes into floats and int64 indices and the copies
// a loader keeps. A file whose header announces more than the file holds must be
// rejected before that much is allocated.
inline constexpr size_t kAllocPerByte = 64;
inline constexpr size_t kAllocSlack = size_t{16} << 20;
void require_alloc_bound(const AllocMeter& meter, size_t input_bytes, std::string_view what);

}  // namespace emu::fuzz
