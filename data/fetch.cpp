#include "data/fetch.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

#include "data/archive.h"
#include "data/download.h"
#include "data/sha256.h"

namespace emu::data {
namespace fs = std::filesystem;
namespace {

const char* kRecordFile = ".emutrain-sha256";
const char* kStagingPrefix = ".fetch-";

std::string join(const std::string& a, const std::string& b) { return (fs::path(a) / b).string(); }

bool is_address(const std::string& s) { return s.find("://") != std::string::npos; }

// path -> checksum, from <folder>/.emutrain-sha256 (sha256sum's "<hex>  <path>").
std::map<std::string, std::string> read_records(const std::string& folder) {
  std::map<std::string, std::string> out;
  std::ifstream in(join(folder, kRecordFile));
  for (std::string line; std::getline(in, line);)
    if (line.size() > 66 && line.compare(64, 2, "  ") == 0) out[line.substr(66)] = line.substr(0, 64);
  return out;
}

void write_records(const std::string& folder, const std::map<std::string, std::string>& records) {
  const std::string path = join(folder, kRecordFile), tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const auto& [file, sha] : records) out << sha << "  " << file << "\n";
    if (!out) throw std::runtime_error(tmp + ": cannot write the record of checksums");
  }
  fs::rename(tmp, path);
}

// Lines as the loaders count them: a final newline ends the last line.
long long count_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  long long lines = 0;
  char last = '\n';
  std::vector<char> buf(1 << 16);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    for (std::streamsize i = 0; i < in.gcount(); ++i) {
      last = buf[static_cast<size_t>(i)];
      if (last == '\n') ++lines;
    }
  }
  return last == '\n' ? lines : lines + 1;
}

// How a recorded checksum was established, for `data list`.
std::string record_origin(const CatalogDownload& d) {
  return d.archive() && !d.sha256.empty() ? "recorded from the verified archive " + d.file_name()
                                          : "recorded at its first fetch (no checksum is published)";
}

std::string mismatch_advice(const CatalogEntry& entry) {
  return "move it away and run `emutrain data fetch " + entry.name + "` again";
}

// The private folder of one fetch, removed with everything in it on every
// way out (success included: its files have been renamed away by then).
class Staging {
 public:
  explicit Staging(const std::string& folder)
      : path_(join(folder, kStagingPrefix + std::to_string(getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(join(path_, "downloads"));
    fs::create_directories(join(path_, "files"));
  }
  ~Staging() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  std::string download(const std::string& name) const { return join(join(path_, "downloads"), name); }
  std::string file(const std::string& path) const { return join(join(path_, "files"), path); }

 private:
  std::string path_;
};

// Staging folders of fetches that died (killed, power lost): their pid is gone.
void remove_stale_staging(const std::string& folder) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(kStagingPrefix, 0) != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + std::strlen(kStagingPrefix), &end, 10);
    if (end == name.c_str() + std::strlen(kStagingPrefix) || *end != '\0') continue;
    if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) fs::remove_all(e.path(), ec);
  }
}

// A local mirror's copy of `file`: the dataset's own layout under `from`,
// directly or in the dataset's folder there (a data root such as
// ../shared/data). Empty when there is none.
std::string local_copy(const std::string& from, const CatalogEntry& entry, const CatalogFile& file) {
  for (const std::string& p : {join(from, file.path), join(join(from, entry.folder), file.path)})
    if (fs::is_regular_file(p)) return p;
  return "";
}

struct Staged {
  const CatalogFile* file;
  const CatalogDownload* download;
  std::string where;  // the address or copy it came from, for errors
  bool from_archive;  // came out of an archive whose checksum was verified
};

void say(const FetchOptions& o, const std::string& line) {
  if (o.say) o.say(line);
}

// Brings the missing files of one download into the staging folder.
void stage_download(const CatalogEntry& entry, const CatalogDownload& d,
                    const std::vector<const CatalogFile*>& missing, const FetchOptions& o,
                    const Staging& staging, std::vector<Staged>& staged) {
  const std::string name = d.file_name();
  std::string got = staging.download(name), where;
  if (!o.from.empty() && !is_address(o.from)) {
    const std::string whole = join(o.from, name);
    if (!fs::is_regular_file(whole) || !d.archive()) {
      // The files themselves (a plain download is found by its own name too).
      for (const CatalogFile* f : missing) {
        std::string copy = local_copy(o.from, entry, *f);
        if (copy.empty())
          throw std::runtime_error(o.from + ": holds neither " + name + " nor " + f->path + " (nor " +
                                   join(entry.folder, f->path) + ") for dataset " + entry.name);
        say(o, entry.name + ": copying " + copy);
        fs::create_directories(fs::path(staging.file(f->path)).parent_path());
        fs::copy_file(copy, staging.file(f->path), fs::copy_options::overwrite_existing);
        staged.push_back({f, &d, copy, false});
      }
      return;
    }
    say(o, entry.name + ": copying " + whole);
    fs::copy_file(whole, got, fs::copy_options::overwrite_existing);
    where = whole;
  } else {
    std::string base = o.from;
    while (!base.empty() && base.back() == '/') base.pop_back();
    where = base.empty() ? d.url : base + "/" + name;
    const std::string tool = o.downloader.empty() ? find_downloader() : o.downloader;
    say(o, entry.name + ": downloading " + where + " (" + tool + ")");
    download_file(where, got + ".part", tool);
    fs::rename(got + ".part", got);  // complete as far as the client knows; checked next
  }
  if (!d.sha256.empty()) {
    const std::string sha = sha256_file(got);
    if (sha != d.sha256)
      throw std::runtime_error(
          where + ": SHA-256 " + sha + " differs from the pinned " + d.sha256 +
          " (damaged in transit, or the publisher changed the file); nothing was kept: try "
          "again, or --from a copy of the original");
  }
  if (d.archive()) {
    std::vector<MemberTarget> targets;
    for (const CatalogFile* f : missing) {
      fs::create_directories(fs::path(staging.file(f->path)).parent_path());
      targets.push_back({f->member, staging.file(f->path)});
    }
    say(o, entry.name + ": unpacking " + std::to_string(targets.size()) + " file(s) from " + name);
    extract_members(got, archive_kind_for(name), targets);
    for (const CatalogFile* f : missing)
      staged.push_back({f, &d, where + " (" + f->member + ")", !d.sha256.empty()});
  } else {
    const CatalogFile* f = missing.front();
    fs::create_directories(fs::path(staging.file(f->path)).parent_path());
    fs::rename(got, staging.file(f->path));
    staged.push_back({f, &d, where, false});
  }
  fs::remove(got);  // an archive is not kept: only what the loaders read
}

}  // namespace

int DatasetCheck::count(FileState s) const {
  int n = 0;
  for (const FileCheck& f : files) n += f.state == s;
  return n;
}

std::string DatasetCheck::summary() const {
  const int n = static_cast<int>(files.size());
  auto names = [&](FileState s) {
    std::string out;
    for (const FileCheck& f : files)
      if (f.state == s) out += (out.empty() ? "" : ", ") + f.path;
    return out;
  };
  if (count(FileState::Mismatch) > 0) return "CHECKSUM MISMATCH: " + names(FileState::Mismatch);
  if (count(FileState::Missing) == n) return "missing";
  if (count(FileState::Missing) > 0)
    return std::to_string(count(FileState::Missing)) + " of " + std::to_string(n) +
           " files missing: " + names(FileState::Missing);
  std::string how;
  auto add = [&](FileState s, const char* what) {
    if (count(s) > 0) how += (how.empty() ? "" : ", ") + std::to_string(count(s)) + " " + what;
  };
  add(FileState::Pinned, "pinned SHA-256");
  add(FileState::Recorded, "SHA-256 recorded at fetch");
  add(FileState::Unknown, "unverified: no checksum known");
  return (count(FileState::Unknown) == n ? "present: " : "verified: ") + std::to_string(n) +
         (n == 1 ? " file (" : " files (") + how + ")";
}

DatasetCheck check_dataset(const CatalogEntry& entry, const std::string& folder) {
  DatasetCheck check;
  check.folder = folder;
  const std::map<std::string, std::string> records = read_records(folder);
  for (const CatalogDownload& d : entry.downloads) {
    for (const CatalogFile& f : d.files) {
      FileCheck c;
      c.path = f.path;
      const std::string p = join(folder, f.path);
      auto rec = records.find(f.path);
      if (!fs::is_regular_file(p)) {
        c.state = FileState::Missing;
      } else if (!f.sha256.empty() || rec != records.end()) {
        const bool pinned = !f.sha256.empty();
        const std::string want = pinned ? f.sha256 : rec->second, got = sha256_file(p);
        c.state = got == want ? (pinned ? FileState::Pinned : FileState::Recorded) : FileState::Mismatch;
        c.detail = got == want
                       ? (pinned ? "pinned SHA-256" : record_origin(d))
                       : "SHA-256 " + got + " differs from the " + (pinned ? "pinned " : "recorded ") + want;
      } else {
        c.state = FileState::Unknown;
        c.detail = "present, but no checksum is known (not fetched by emutrain)";
      }
      check.files.push_back(c);
    }
  }
  return check;
}

DatasetCheck fetch_dataset(const CatalogEntry& entry, const std::string& folder, const FetchOptions& o) {
  DatasetCheck before = check_dataset(entry, folder);
  for (const FileCheck& f : before.files)
    if (f.state == FileState::Mismatch)
      throw std::runtime_error(join(folder, f.path) + ": " + f.detail +
                               " (a damaged file or another version); " + mismatch_advice(entry));
  if (before.complete()) {
    say(o, entry.name + ": " + before.summary() + " in " + folder + " (nothing to fetch)");
    return before;
  }
  fs::create_directories(folder);
  remove_stale_staging(folder);
  std::vector<Staged> staged;
  {
    Staging staging(folder);
    for (const CatalogDownload& d : entry.downloads) {
      std::vector<const CatalogFile*> missing;
      for (const CatalogFile& f : d.files)
        for (const FileCheck& c : before.files)
          if (c.path == f.path && c.state == FileState::Missing) missing.push_back(&f);
      if (!missing.empty()) stage_download(entry, d, missing, o, staging, staged);
    }
    // Every file checked before any is moved, so a bad one leaves the folder as it was.
    std::map<std::string, std::string> records = read_records(folder);
    for (const Staged& s : staged) {
      const std::string p = staging.file(s.file->path), sha = sha256_file(p);
      if (!s.file->sha256.empty()) {
        if (sha != s.file->sha256)
          throw std::runtime_error(s.where + ": SHA-256 " + sha + " of " + s.file->path +
                                   " differs from the pinned " + s.file->sha256 +
                                   " (damaged, or another version of the dataset); nothing was kept: "
                                   "try again, or --from a copy of the original");
        continue;
      }
      if (!s.from_archive && s.file->lines >= 0) {
        const long long lines = count_lines(p);
        if (lines != s.file->lines)
          throw std::runtime_error(
              s.where + ": " + std::to_string(lines) + " lines, expected " + std::to_string(s.file->lines) +
              " for " + s.file->path +
              " (not the expected file); nothing was kept: check the address, or --from a copy");
      }
      records[s.file->path] = sha;
    }
    for (const Staged& s : staged) {
      const std::string dest = join(folder, s.file->path);
      fs::create_directories(fs::path(dest).parent_path());
      fs::rename(staging.file(s.file->path), dest);
    }
    if (records != read_records(folder)) write_records(folder, records);
  }
  DatasetCheck after = check_dataset(entry, folder);
  say(o, entry.name + ": " + after.summary() + " in " + folder);
  return after;
}

}  // namespace emu::data
