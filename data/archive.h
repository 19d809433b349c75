// Extraction of named files from the dataset archives (.tar.gz/.tgz and .zip)
// with zlib only, so `emutrain data fetch` needs no tar or unzip on the
// user's machine. Everything streams in fixed chunks: memory is bounded by the
// chunk sizes (and a zip's central directory), never by a member's size, so a
// multi-GB archive unpacks on a small machine.
//
// Member names are only compared, never turned into paths: bytes go to the
// dest paths the caller gives, so a hostile name ("../x", "/etc/x") cannot
// write outside them.
#pragma once

#include <string>
#include <vector>

namespace emu::data {

enum class ArchiveKind { TarGz, Zip };

// By file name: ".tar.gz"/".tgz" -> TarGz, ".zip" -> Zip (any letter case);
// anything else throws std::invalid_argument naming the file.
ArchiveKind archive_kind_for(const std::string& file_name);

// The names of the regular-file members, as stored and in archive order
// (directories, links and tar metadata entries are left out).
std::vector<std::string> archive_members(const std::string& archive, ArchiveKind kind);

struct MemberTarget {
  std::string member;  // name as stored in the archive
  std::string dest;    // output file, created or overwritten
};

// Writes each wanted member's bytes to its dest; other members are skipped.
// The caller creates the directories and handles temporary names and renames
// (a failure can leave dest files partly written).
// Errors are std::runtime_error, one line starting "<archive>: ":
//   a wanted member absent -> "no member '<name>' (it holds: a, b, ...)";
//   not gzip / not zip, empty, truncated, bad tar header checksum, damaged
//   deflate data, zip CRC-32 or size mismatch, a zip method other than stored
//   or deflate, ZIP64 or encrypted entries (unsupported: said so).
// A dest that cannot be written is "<dest>: cannot write (<strerror>)".
// Tar: ustar (prefix field), GNU (long names 'L', base-256 sizes) and pax
// ('path' and 'size' records honoured; global headers skipped).
void extract_members(const std::string& archive, ArchiveKind kind, const std::vector<MemberTarget>& targets);

}  // namespace emu::data
