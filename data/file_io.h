// Whole-file reads for the loaders. Datasets are small enough to read at once
// (CIFAR-10 is 150 MB); every failure goes through file_error, so it names the
// file and the download location.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace emu::data {

bool file_exists(const std::string& path);
bool dir_exists(const std::string& path);
// a/b, leaving b alone when it is absolute or a is empty.
std::string join_path(const std::string& a, const std::string& b);

// The bytes of `path`, gunzipped when the file is gzip-compressed (zlib's
// gzread passes a plain file through unchanged). A missing file, a read error
// or a damaged/truncated gzip stream is a file_error naming `what` (what the
// file should hold) and `url`.
std::vector<uint8_t> read_bytes(const std::string& path, const std::string& what, const std::string& url);

// The lines of a text file, without their "\n" or "\r\n"; a final empty line
// (file ending in a newline) is not returned.
std::vector<std::string> read_lines(const std::string& path, const std::string& what, const std::string& url);

// The entries of a folder, sorted by name (bytewise); `dirs` picks folders or
// regular files. Hidden entries (".name") are left out.
std::vector<std::string> list_dir(const std::string& path, bool dirs);

}  // namespace emu::data
