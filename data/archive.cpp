#include "data/archive.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>

namespace emu::data {
namespace {

// Fixed buffer sizes: the only memory extraction needs besides zlib's window
// and the zip central directory.
constexpr size_t kChunk = 64 * 1024;
constexpr size_t kTarBlock = 512;
// Tar metadata read into memory (GNU long names, pax records) is capped so a
// damaged size field cannot ask for gigabytes.
constexpr uint64_t kMaxTarMeta = 1 << 20;
// A zip central directory larger than this is damage, not a dataset.
constexpr uint64_t kMaxCentralDirectory = uint64_t(256) << 20;

using File = std::unique_ptr<FILE, int (*)(FILE*)>;

[[noreturn]] void fail(const std::string& archive, const std::string& problem) {
  throw std::runtime_error(archive + ": " + problem);
}

std::string errno_text() { return std::strerror(errno); }

File open_read(const std::string& path) {
  File f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) fail(path, "cannot open (" + errno_text() + ")");
  return f;
}

// The wanted members: name -> every dest that should receive its bytes (the
// same member may be asked for twice).
using Wanted = std::map<std::string, std::vector<std::string>>;

Wanted wanted_of(const std::vector<MemberTarget>& targets) {
  Wanted wanted;
  for (const MemberTarget& t : targets) wanted[t.member].push_back(t.dest);
  return wanted;
}

// "no member 'x' (it holds: a, b, ...)": the first ten names are enough to
// show the user how the archive is laid out.
[[noreturn]] void missing_member(const std::string& archive, const std::string& name,
                                 const std::vector<std::string>& names) {
  std::string list;
  size_t shown = std::min<size_t>(names.size(), 10);
  for (size_t i = 0; i < shown; ++i) list += (i ? ", " : "") + names[i];
  if (names.size() > shown) list += ", ... (" + std::to_string(names.size()) + " in all)";
  if (names.empty()) list = "no files";
  fail(archive, "no member '" + name + "' (it holds: " + list + ")");
}

void check_all_found(const std::string& archive, const Wanted& wanted,
                     const std::vector<std::string>& names) {
  for (const auto& w : wanted)
    if (std::find(names.begin(), names.end(), w.first) == names.end())
      missing_member(archive, w.first, names);
}

// The dest files of one member, written in step.
class MemberSink {
 public:
  explicit MemberSink(const std::vector<std::string>& dests) : dests_(dests) {
    for (const std::string& d : dests_) {
      FILE* f = std::fopen(d.c_str(), "wb");
      if (f == nullptr) fail(d, "cannot write (" + errno_text() + ")");
      files_.emplace_back(f, &std::fclose);
    }
  }
  void write(const void* data, size_t n) {
    for (size_t i = 0; i < files_.size(); ++i)
      if (n > 0 && std::fwrite(data, 1, n, files_[i].get()) != n)
        fail(dests_[i], "cannot write (" + errno_text() + ")");
  }
  // fclose flushes, so a full disk shows up here rather than being lost.
  void close() {
    for (size_t i = 0; i < files_.size(); ++i)
      if (std::fclose(files_[i].release()) != 0) fail(dests_[i], "cannot write (" + errno_text() + ")");
  }

 private:
  std::vector<std::string> dests_;
  std::vector<File> files_;
};

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

// ---------------------------------------------------------------- tar.gz ---

// The decompressed bytes of a gzip file, in order. zlib's gzread would pass a
// non-gzip file through as is, so the magic is checked first.
class GzInput {
 public:
  explicit GzInput(const std::string& path) : path_(path) {
    File f = open_read(path);
    unsigned char magic[2];
    size_t n = std::fread(magic, 1, 2, f.get());
    if (std::ferror(f.get())) fail(path, "read error (" + errno_text() + ")");
    if (n == 0) fail(path, "empty file (expected a gzip-compressed tar archive)");
    if (n < 2 || magic[0] != 0x1f || magic[1] != 0x8b)
      fail(path, "not a gzip file (expected a .tar.gz archive)");
    gz_ = gzopen(path.c_str(), "rb");
    if (gz_ == nullptr) fail(path, "cannot open (" + errno_text() + ")");
    gzbuffer(gz_, kChunk);
  }
  ~GzInput() { gzclose(gz_); }
  GzInput(const GzInput&) = delete;
  GzInput& operator=(const GzInput&) = delete;

  // Up to n bytes; fewer only at the end of the gzip data. A stream cut short
  // or damaged reads as an early end in zlib, so gzerror is asked each time.
  size_t read_some(void* buf, size_t n) {
    size_t got = 0;
    while (got < n) {
      int r = gzread(gz_, static_cast<char*>(buf) + got, static_cast<unsigned>(std::min(n - got, kChunk)));
      if (r <= 0) {
        check_error();
        break;
      }
      got += static_cast<size_t>(r);
    }
    offset_ += got;
    return got;
  }
  void read_exact(void* buf, size_t n, const char* what) {
    if (read_some(buf, n) != n) fail(path_, std::string("truncated (the tar data ends inside ") + what + ")");
  }
  void skip(uint64_t n, const char* what) {
    char scratch[kChunk];
    while (n > 0) {
      size_t step = static_cast<size_t>(std::min<uint64_t>(n, sizeof scratch));
      read_exact(scratch, step, what);
      n -= step;
    }
  }
  // Reads what follows the end of the tar data (record padding) so the gzip
  // trailer's CRC and length are checked too.
  void drain() {
    char scratch[kChunk];
    while (read_some(scratch, sizeof scratch) == sizeof scratch) {
    }
  }
  uint64_t offset() const { return offset_; }

 private:
  void check_error() {
    int code = Z_OK;
    std::string msg = gzerror(gz_, &code);
    if (code == Z_OK || code == Z_STREAM_END) return;
    // zlib prefixes the path; the error already starts with it.
    if (msg.compare(0, path_.size() + 2, path_ + ": ") == 0) msg.erase(0, path_.size() + 2);
    if (code == Z_BUF_ERROR) fail(path_, "truncated gzip data (" + msg + ")");
    fail(path_, "damaged gzip data (" + msg + ")");
  }

  std::string path_;
  gzFile gz_ = nullptr;
  uint64_t offset_ = 0;
};

// A tar header field: NUL-terminated unless it fills its whole width.
std::string field_text(const unsigned char* h, size_t at, size_t width) {
  const char* p = reinterpret_cast<const char*>(h + at);
  return std::string(p, strnlen(p, width));
}

// A numeric field: octal digits (leading spaces, NUL/space terminated), or
// GNU base-256 (top bit of the first byte set) for values beyond octal's range.
bool parse_number(const unsigned char* h, size_t at, size_t width, uint64_t& out) {
  const unsigned char* p = h + at;
  out = 0;
  if (p[0] & 0x80) {
    if (p[0] != 0x80) return false;  // 0xff: negative, meaningless for sizes
    for (size_t i = 1; i < width; ++i) {
      if (out >> 56) return false;
      out = (out << 8) | p[i];
    }
    return true;
  }
  size_t i = 0;
  while (i < width && p[i] == ' ') ++i;
  bool digits = false;
  for (; i < width && p[i] >= '0' && p[i] <= '7'; ++i) {
    out = (out << 3) | uint64_t(p[i] - '0');
    digits = true;
  }
  for (; i < width; ++i)
    if (p[i] != ' ' && p[i] != '\0') return false;
  return digits;
}

// POSIX: the checksum is the byte sum of the header with the checksum field
// taken as spaces; some old tars summed signed chars, so either is accepted.
bool checksum_ok(const unsigned char* h) {
  uint64_t stored = 0;
  if (!parse_number(h, 148, 8, stored)) return false;
  int64_t unsigned_sum = 0, signed_sum = 0;
  for (size_t i = 0; i < kTarBlock; ++i) {
    unsigned char c = (i >= 148 && i < 156) ? ' ' : h[i];
    unsigned_sum += c;
    signed_sum += static_cast<signed char>(c);
  }
  return int64_t(stored) == unsigned_sum || int64_t(stored) == signed_sum;
}

bool all_zero(const unsigned char* h) {
  return std::all_of(h, h + kTarBlock, [](unsigned char c) { return c == 0; });
}

uint64_t padded(uint64_t size) { return (size + kTarBlock - 1) / kTarBlock * kTarBlock; }

struct PaxOverrides {
  std::string path;
  bool has_size = false;
  uint64_t size = 0;
};

// pax records are "<length> <key>=<value>\n", length counting the whole record.
void parse_pax(const std::string& archive, const std::string& data, PaxOverrides& pax) {
  size_t pos = 0;
  while (pos < data.size() && data[pos] != '\0') {
    size_t space = data.find(' ', pos);
    size_t len = 0;
    if (space == std::string::npos || space == pos) fail(archive, "bad pax header record");
    for (size_t i = pos; i < space; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(data[i])) || len > data.size())
        fail(archive, "bad pax header record");
      len = len * 10 + size_t(data[i] - '0');
    }
    if (len <= space - pos || pos + len > data.size() || data[pos + len - 1] != '\n')
      fail(archive, "bad pax header record");
    std::string record = data.substr(space + 1, pos + len - 1 - (space + 1));
    size_t eq = record.find('=');
    if (eq == std::string::npos) fail(archive, "bad pax header record");
    std::string key = record.substr(0, eq), value = record.substr(eq + 1);
    if (key == "path") pax.path = value;
    if (key == "size") {
      pax.has_size = !value.empty() && value.size() < 20 &&
                     std::all_of(value.begin(), value.end(),
                                 [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
      if (!pax.has_size) fail(archive, "bad pax size record '" + value + "'");
      pax.size = std::stoull(value);
    }
    pos += len;
  }
}

struct TarFile {
  std::string name;
  uint64_t size = 0;
};

// Walks a tar.gz, calling `on_file` for each regular file with the stream
// positioned at its data; `on_file` consumes any prefix of the data and
// returns how much it read, the walk skips the rest and the block padding.
class TarWalker {
 public:
  explicit TarWalker(const std::string& archive) : archive_(archive), in_(archive) {}

  void walk(const std::function<uint64_t(const TarFile&, GzInput&)>& on_file) {
    unsigned char h[kTarBlock];
    PaxOverrides pax;
    std::string long_name;
    int zero_blocks = 0;
    for (;;) {
      uint64_t at = in_.offset();
      size_t got = in_.read_some(h, kTarBlock);
      if (got == 0 && zero_blocks == 1) break;  // a lone end block: tolerated, as GNU tar does
      if (got == 0) fail(archive_, "truncated (the tar data ends without its end-of-archive blocks)");
      if (got < kTarBlock) fail(archive_, "truncated (the tar data ends inside a header)");
      if (all_zero(h)) {
        if (++zero_blocks == 2) break;
        continue;
      }
      zero_blocks = 0;
      if (!checksum_ok(h))
        fail(archive_,
             "bad tar header checksum at offset " + std::to_string(at) + " (not a tar archive, or damaged)");
      uint64_t size = 0;
      if (!parse_number(h, 124, 12, size))
        fail(archive_, "bad size field in the tar header at offset " + std::to_string(at));
      char type = static_cast<char>(h[156]);
      // Metadata entries describe the next header (GNU long name 'L' and long
      // link 'K', pax 'x'; pax global 'g' is skipped): read them, then go on.
      if (type == 'L' || type == 'K' || type == 'x' || type == 'g') {
        std::string data = read_meta(size, type);
        if (type == 'L') long_name = data.substr(0, data.find('\0'));
        if (type == 'x') parse_pax(archive_, data, pax);
        continue;
      }
      if (pax.has_size) size = pax.size;
      TarFile file{entry_name(h, long_name, pax), size};
      pax = PaxOverrides();
      long_name.clear();
      bool regular =
          (type == '0' || type == '\0' || type == '7') && !file.name.empty() && file.name.back() != '/';
      uint64_t used = regular ? on_file(file, in_) : 0;
      in_.skip(padded(size) - used, "a member's data");
    }
    in_.drain();
  }

 private:
  std::string read_meta(uint64_t size, char type) {
    if (size > kMaxTarMeta)
      fail(archive_,
           std::string("tar '") + type + "' header of " + std::to_string(size) + " bytes (damaged?)");
    std::string data(static_cast<size_t>(padded(size)), '\0');
    in_.read_exact(&data[0], data.size(), "an extended header");
    data.resize(static_cast<size_t>(size));
    return data;
  }

  // pax path beats a GNU long name beats the header's own name; only POSIX
  // ustar ("ustar\0") has the prefix field (GNU's "ustar  " uses those bytes
  // for other things).
  static std::string entry_name(const unsigned char* h, const std::string& long_name,
                                const PaxOverrides& pax) {
    if (!pax.path.empty()) return pax.path;
    if (!long_name.empty()) return long_name;
    std::string name = field_text(h, 0, 100);
    if (std::memcmp(h + 257, "ustar\0", 6) == 0) {
      std::string prefix = field_text(h, 345, 155);
      if (!prefix.empty()) name = prefix + "/" + name;
    }
    return name;
  }

  std::string archive_;
  GzInput in_;
};

std::vector<std::string> tar_members(const std::string& archive) {
  std::vector<std::string> names;
  TarWalker(archive).walk([&](const TarFile& f, GzInput&) {
    names.push_back(f.name);
    return uint64_t(0);
  });
  return names;
}

void tar_extract(const std::string& archive, const Wanted& wanted) {
  std::vector<std::string> names;
  std::vector<char> buf(kChunk);
  TarWalker(archive).walk([&](const TarFile& f, GzInput& in) {
    names.push_back(f.name);
    auto it = wanted.find(f.name);
    if (it == wanted.end()) return uint64_t(0);
    // A later copy of a name overwrites an earlier one, as tar itself does.
    MemberSink sink(it->second);
    for (uint64_t left = f.size; left > 0;) {
      size_t step = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
      in.read_exact(buf.data(), step, "a member's data");
      sink.write(buf.data(), step);
      left -= step;
    }
    sink.close();
    return f.size;
  });
  check_all_found(archive, wanted, names);
}

// ------------------------------------------------------------------- zip ---

uint16_t le16(const unsigned char* p) { return uint16_t(p[0] | (p[1] << 8)); }
uint32_t le32(const unsigned char* p) { return uint32_t(le16(p)) | (uint32_t(le16(p + 2)) << 16); }

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint32_t kZip64Marker = 0xffffffff;

struct ZipEntry {
  std::string name;
  uint16_t flags = 0;
  uint16_t method = 0;
  uint32_t crc = 0;
  uint64_t csize = 0, usize = 0, offset = 0;
  bool regular = true;
  bool zip64 = false;
};

struct ZipDirectory {
  uint64_t cd_offset = 0;  // member data lies before it
  std::vector<ZipEntry> entries;
};

void read_at(FILE* f, const std::string& archive, uint64_t at, void* buf, size_t n, const std::string& what) {
  if (fseeko(f, static_cast<off_t>(at), SEEK_SET) != 0 || std::fread(buf, 1, n, f) != n) {
    if (std::ferror(f)) fail(archive, "read error (" + errno_text() + ")");
    fail(archive, "truncated (" + what + " lies past the end of the file)");
  }
}

// The end-of-central-directory record sits in the last 22 + 65535 (comment)
// bytes; searching backwards finds it even with a comment.
uint64_t find_end_record(FILE* f, const std::string& archive, uint64_t file_size,
                         std::vector<unsigned char>& tail) {
  if (file_size == 0) fail(archive, "empty file (expected a zip archive)");
  size_t n = static_cast<size_t>(std::min<uint64_t>(file_size, 22 + 65535));
  tail.resize(n);
  read_at(f, archive, file_size - n, tail.data(), n, "the end record");
  for (size_t i = n >= 22 ? n - 22 + 1 : 0; i-- > 0;)
    if (le32(&tail[i]) == kEndSig && i + 22 + le16(&tail[i + 20]) <= n) return file_size - n + i;
  unsigned char head[4] = {0, 0, 0, 0};
  read_at(f, archive, 0, head, std::min<size_t>(4, n), "the start");
  if (le32(head) == kLocalSig) fail(archive, "truncated zip archive (no end-of-central-directory record)");
  fail(archive, "not a zip archive (no end-of-central-directory record)");
}

ZipEntry parse_central_entry(const std::string& archive, const unsigned char* p, size_t left, size_t& used) {
  if (left < 46 || le32(p) != kCentralSig) fail(archive, "damaged zip central directory");
  size_t name_len = le16(p + 28), extra_len = le16(p + 30), comment_len = le16(p + 32);
  used = 46 + name_len + extra_len + comment_len;
  if (used > left) fail(archive, "damaged zip central directory");
  ZipEntry e;
  uint16_t made_by = le16(p + 4);
  e.flags = le16(p + 8);
  e.method = le16(p + 10);
  e.crc = le32(p + 16);
  e.csize = le32(p + 20);
  e.usize = le32(p + 24);
  e.offset = le32(p + 42);
  e.name.assign(reinterpret_cast<const char*>(p + 46), name_len);
  e.zip64 = e.csize == kZip64Marker || e.usize == kZip64Marker || e.offset == kZip64Marker;
  // Unix-made entries carry st_mode in the top half of the external
  // attributes: symlinks and directories are not files to extract.
  uint32_t mode = le32(p + 38) >> 16;
  bool unix_made = (made_by >> 8) == 3;
  bool not_file = unix_made && (mode & 0170000) != 0 && (mode & 0170000) != 0100000;
  e.regular = !e.name.empty() && e.name.back() != '/' && !not_file;
  return e;
}

ZipDirectory read_directory(FILE* f, const std::string& archive) {
  if (fseeko(f, 0, SEEK_END) != 0) fail(archive, "cannot seek (" + errno_text() + ")");
  uint64_t file_size = static_cast<uint64_t>(ftello(f));
  std::vector<unsigned char> tail;
  uint64_t end_at = find_end_record(f, archive, file_size, tail);
  const unsigned char* end = &tail[end_at - (file_size - tail.size())];
  if (end_at >= 20) {
    unsigned char loc[4];
    read_at(f, archive, end_at - 20, loc, 4, "the ZIP64 locator");
    if (le32(loc) == kZip64LocatorSig) fail(archive, "ZIP64 archive (unsupported)");
  }
  if (le16(end + 4) != 0 || le16(end + 6) != 0) fail(archive, "multi-part (split) zip archive (unsupported)");
  uint64_t count = le16(end + 10), cd_size = le32(end + 12), cd_offset = le32(end + 16);
  if (count == 0xffff || cd_size == kZip64Marker || cd_offset == kZip64Marker)
    fail(archive, "ZIP64 archive (unsupported)");
  if (cd_offset + cd_size > end_at || cd_size > kMaxCentralDirectory)
    fail(archive, "truncated or damaged zip archive (the central directory lies outside the file)");
  std::vector<unsigned char> cd(static_cast<size_t>(cd_size));
  if (cd_size > 0) read_at(f, archive, cd_offset, cd.data(), cd.size(), "the central directory");
  ZipDirectory dir;
  dir.cd_offset = cd_offset;
  size_t pos = 0;
  for (uint64_t i = 0; i < count; ++i) {
    size_t used = 0;
    dir.entries.push_back(parse_central_entry(archive, cd.data() + pos, cd.size() - pos, used));
    pos += used;
  }
  return dir;
}

// Where the member's data starts: after its local header, whose name and
// extra field lengths may differ from the central directory's.
uint64_t data_start(FILE* f, const std::string& archive, const ZipEntry& e, uint64_t cd_offset) {
  unsigned char h[30];
  read_at(f, archive, e.offset, h, sizeof h, "member '" + e.name + "'");
  if (le32(h) != kLocalSig)
    fail(archive, "damaged zip archive (no local header for member '" + e.name + "')");
  uint64_t start = e.offset + 30 + le16(h + 26) + le16(h + 28);
  if (start + e.csize > cd_offset)
    fail(archive,
         "truncated or damaged zip archive (member '" + e.name + "' runs into the central directory)");
  return start;
}

// Copies or inflates one member from `f` (positioned at its data) into the
// sink, chunk by chunk; returns the CRC-32 and size of what came out.
void unpack_zip_member(FILE* f, const std::string& archive, const ZipEntry& e, MemberSink& sink) {
  std::vector<unsigned char> in(kChunk), out(kChunk);
  uint32_t crc = crc32(0L, Z_NULL, 0);
  uint64_t produced = 0, left = e.csize;
  auto emit = [&](const unsigned char* p, size_t n) {
    produced += n;
    if (produced > e.usize) fail(archive, "member '" + e.name + "' is longer than its stated size (damaged)");
    crc = crc32(crc, p, static_cast<uInt>(n));
    sink.write(p, n);
  };
  auto read_chunk = [&]() {
    size_t step = static_cast<size_t>(std::min<uint64_t>(left, in.size()));
    if (std::fread(in.data(), 1, step, f) != step) fail(archive, "truncated (member '" + e.name + "' data)");
    left -= step;
    return step;
  };
  if (e.method == 0) {
    if (e.csize != e.usize) fail(archive, "member '" + e.name + "': stored sizes disagree (damaged)");
    while (left > 0) {
      size_t n = read_chunk();
      emit(in.data(), n);
    }
  } else {
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) fail(archive, "zlib inflateInit2 failed");
    std::unique_ptr<z_stream, int (*)(z_streamp)> guard(&z, &inflateEnd);
    int ret = Z_OK;
    while (ret != Z_STREAM_END) {
      if (z.avail_in == 0) {
        if (left == 0)
          fail(archive, "member '" + e.name + "': deflate data ends early (truncated or damaged)");
        z.avail_in = static_cast<uInt>(read_chunk());
        z.next_in = in.data();
      }
      z.next_out = out.data();
      z.avail_out = static_cast<uInt>(out.size());
      ret = inflate(&z, Z_NO_FLUSH);
      if (ret == Z_DATA_ERROR || ret == Z_NEED_DICT)
        fail(archive, "member '" + e.name + "': damaged deflate data (" + (z.msg ? z.msg : "invalid") + ")");
      if (ret == Z_MEM_ERROR) fail(archive, "out of memory inflating member '" + e.name + "'");
      emit(out.data(), out.size() - z.avail_out);
    }
  }
  if (produced != e.usize)
    fail(archive, "member '" + e.name + "': " + std::to_string(produced) + " bytes instead of " +
                      std::to_string(e.usize) + " (damaged)");
  if (crc != e.crc)
    fail(archive, "member '" + e.name + "': CRC-32 mismatch (stored " + hex32(e.crc) + ", computed " +
                      hex32(crc) + "; damaged)");
}

void check_supported(const std::string& archive, const ZipEntry& e) {
  // Bit 0: traditional encryption; bit 6: strong encryption.
  if (e.flags & 0x41) fail(archive, "member '" + e.name + "' is encrypted (unsupported)");
  if (e.zip64) fail(archive, "member '" + e.name + "' is a ZIP64 entry (unsupported)");
  if (e.method != 0 && e.method != 8)
    fail(archive, "member '" + e.name + "' uses compression method " + std::to_string(e.method) +
                      " (unsupported: only stored and deflate)");
}

std::vector<std::string> regular_names(const ZipDirectory& dir) {
  std::vector<std::string> names;
  for (const ZipEntry& e : dir.entries)
    if (e.regular) names.push_back(e.name);
  return names;
}

void zip_extract(const std::string& archive, const Wanted& wanted) {
  File f = open_read(archive);
  ZipDirectory dir = read_directory(f.get(), archive);
  std::vector<std::string> names = regular_names(dir);
  // The directory lists everything up front, so a missing or unsupported
  // member fails before any dest is touched.
  check_all_found(archive, wanted, names);
  for (const ZipEntry& e : dir.entries)
    if (e.regular && wanted.count(e.name)) check_supported(archive, e);
  for (const ZipEntry& e : dir.entries) {
    auto it = wanted.find(e.name);
    if (!e.regular || it == wanted.end()) continue;
    uint64_t start = data_start(f.get(), archive, e, dir.cd_offset);
    if (fseeko(f.get(), static_cast<off_t>(start), SEEK_SET) != 0)
      fail(archive, "cannot seek (" + errno_text() + ")");
    MemberSink sink(it->second);
    unpack_zip_member(f.get(), archive, e, sink);
    sink.close();
  }
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

ArchiveKind archive_kind_for(const std::string& file_name) {
  std::string lower = file_name;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ends_with(lower, ".tar.gz") || ends_with(lower, ".tgz")) return ArchiveKind::TarGz;
  if (ends_with(lower, ".zip")) return ArchiveKind::Zip;
  throw std::invalid_argument(file_name + ": not a known archive type (expected .tar.gz, .tgz or .zip)");
}

std::vector<std::string> archive_members(const std::string& archive, ArchiveKind kind) {
  if (kind == ArchiveKind::TarGz) return tar_members(archive);
  File f = open_read(archive);
  return regular_names(read_directory(f.get(), archive));
}

void extract_members(const std::string& archive, ArchiveKind kind, const std::vector<MemberTarget>& targets) {
  Wanted wanted = wanted_of(targets);
  if (kind == ArchiveKind::TarGz)
    tar_extract(archive, wanted);
  else
    zip_extract(archive, wanted);
}

}  // namespace emu::data
