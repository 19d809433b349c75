// `emutrain data fetch` against a local HTTP server (tests/fetch/serve.py, on
// 127.0.0.1): downloads verify and unpack; corrupted, truncated, missing and
// interrupted downloads are one-line errors that leave nothing behind; a
// second fetch only verifies. The catalog used here is built by the test, so
// every case runs without the real datasets; the expected checksums come from
// coreutils' sha256sum and the archives from Python's tarfile/zipfile, both
// independent of the code under test.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "data/catalog.h"
#include "data/download.h"
#include "data/fetch.h"
#include "tests/test_data_util.h"
#include "tests/test_http_server.h"

namespace fs = std::filesystem;
using emu::test::TempDir;
using namespace emu::data;

namespace {

std::string shell(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  INFO(cmd);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  return out;
}

std::string q(const std::string& s) { return "'" + s + "'"; }

std::string sha256sum(const std::string& path) { return shell("sha256sum " + q(path)).substr(0, 64); }

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<std::string> downloaders() {
  std::vector<std::string> out;
  for (const char* tool : {"curl", "wget"})
    if (std::system(("command -v " + std::string(tool) + " >/dev/null 2>&1").c_str()) == 0)
      out.push_back(tool);
  return out;
}

const std::string kServe = std::string(EMUTRAIN_SOURCE_DIR) + "/tests/fetch/serve.py";

// The served files and a catalog entry describing them:
//   a.txt        plain, pinned
//   b.bin        plain, no checksum known (recorded at the first fetch)
//   pkg.tar.gz   archive with a pinned checksum, members recorded from it
//   z.zip        archive without a checksum, its member pinned
struct Demo {
  TempDir tmp;
  std::string served = tmp / "served", src = tmp / "src";

  Demo() {
    emu::test::write_text(served + "/a.txt", "alpha\nbeta\n");
    std::vector<uint8_t> b(100000);
    emu::test::Lcg lcg(7);
    for (uint8_t& v : b) v = static_cast<uint8_t>(lcg.next() >> 24);
    emu::test::write_file(served + "/b.bin", b);
    std::vector<uint8_t> x(5000);
    for (uint8_t& v : x) v = static_cast<uint8_t>(lcg.next() >> 24);
    emu::test::write_file(src + "/pkg/x.bin", x);
    emu::test::write_text(src + "/pkg/y.txt", "why\n");
    emu::test::write_text(src + "/inner/z.txt", std::string(3000, 'z') + "\n");
    shell("cd " + q(src) + " && python3 -c \"import tarfile; t = tarfile.open('" + served +
          "/pkg.tar.gz', 'w:gz'); t.add('pkg/x.bin'); t.add('pkg/y.txt'); t.close()\"");
    shell("cd " + q(src) + " && python3 -c \"import zipfile; z = zipfile.ZipFile('" + served +
          "/z.zip', 'w', zipfile.ZIP_DEFLATED); z.write('inner/z.txt'); z.close()\"");
  }
  // The catalog entry of these files published under `base`.
  CatalogEntry entry(const std::string& base) const {
    CatalogEntry e;
    e.name = "demo";
    e.folder = "demo";
    e.downloads = {
        {base + "/a.txt", "", {{"a.txt", sha256sum(served + "/a.txt"), "", -1}}},
        {base + "/b.bin", "", {{"b.bin", "", "", -1}}},
        {base + "/pkg.tar.gz",
         sha256sum(served + "/pkg.tar.gz"),
         {{"x.bin", "", "pkg/x.bin", -1}, {"sub/y.txt", "", "pkg/y.txt", -1}}},
        {base + "/z.zip", "", {{"z.txt", sha256sum(src + "/inner/z.txt"), "inner/z.txt", -1}}},
    };
    return e;
  }
  // The entry restricted to download i (for the single-file cases).
  CatalogEntry only(const std::string& base, size_t i) const {
    CatalogEntry e = entry(base);
    e.downloads = {e.downloads[i]};
    return e;
  }
};

FileState state_of(const DatasetCheck& c, const std::string& path) {
  for (const FileCheck& f : c.files)
    if (f.path == path) return f.state;
  FAIL("no file " << path << " in the check");
  return FileState::Missing;
}

std::string error_of(const CatalogEntry& e, const std::string& folder, const FetchOptions& o) {
  try {
    fetch_dataset(e, folder, o);
  } catch (const std::runtime_error& ex) {
    std::string msg = ex.what();
    CHECK(msg.find('\n') == std::string::npos);  // one line
    return msg;
  }
  FAIL("fetch did not fail");
  return "";
}

}  // namespace

TEST_CASE("fetch: a download verifies and unpacks; a second fetch only verifies", "[fetch]") {
  for (const std::string& tool : downloaders()) {
    SECTION(tool) {
      TempDir logdir;
      Demo demo;
      emu::test::LocalHttpServer server(kServe, demo.served, logdir / "log");
      const CatalogEntry e = demo.entry(server.url());
      TempDir dest;
      const std::string folder = dest / "demo";
      FetchOptions o;
      o.downloader = tool;
      DatasetCheck c = fetch_dataset(e, folder, o);
      CHECK(c.complete());
      CHECK(state_of(c, "a.txt") == FileState::Pinned);
      CHECK(state_of(c, "b.bin") == FileState::Recorded);
      CHECK(state_of(c, "x.bin") == FileState::Recorded);
      CHECK(state_of(c, "sub/y.txt") == FileState::Recorded);
      CHECK(state_of(c, "z.txt") == FileState::Pinned);
      CHECK(bytes_of(folder + "/a.txt") == bytes_of(demo.served + "/a.txt"));
      CHECK(bytes_of(folder + "/b.bin") == bytes_of(demo.served + "/b.bin"));
      CHECK(bytes_of(folder + "/x.bin") == bytes_of(demo.src + "/pkg/x.bin"));
      CHECK(bytes_of(folder + "/sub/y.txt") == "why\n");
      CHECK(bytes_of(folder + "/z.txt") == bytes_of(demo.src + "/inner/z.txt"));
      // Only the files the loaders read and the record: no archives, no staging.
      CHECK(emu::test::dir_listing(folder) == std::set<std::string>{".emutrain-sha256", "a.txt", "b.bin",
                                                                    "sub", "sub/y.txt", "x.bin", "z.txt"});
      // The record is sha256sum's format and holds exactly the unpinned files.
      CHECK(shell("cd " + q(folder) + " && sha256sum --check --strict .emutrain-sha256 | sort") ==
            "b.bin: OK\nsub/y.txt: OK\nx.bin: OK\n");
      CHECK(server.requests() == std::vector<std::string>{"/a.txt", "/b.bin", "/pkg.tar.gz", "/z.zip"});

      // Again: everything verifies, nothing is requested.
      DatasetCheck again = fetch_dataset(e, folder, o);
      CHECK(again.complete());
      CHECK(state_of(again, "x.bin") == FileState::Recorded);
      CHECK(server.requests().size() == 4);

      // One member lost: only its archive comes again, and only it is written.
      fs::remove(folder + "/x.bin");
      CHECK(check_dataset(e, folder).summary() == "1 of 5 files missing: x.bin");
      fetch_dataset(e, folder, o);
      CHECK(bytes_of(folder + "/x.bin") == bytes_of(demo.src + "/pkg/x.bin"));
      CHECK(server.requests().back() == "/pkg.tar.gz");
      CHECK(server.requests().size() == 5);

      // A recorded file that changes afterwards is a mismatch, and left alone.
      emu::test::write_text(folder + "/b.bin", "tampered");
      CHECK(check_dataset(e, folder).summary() == "CHECKSUM MISMATCH: b.bin");
      std::string err = error_of(e, folder, o);
      CHECK(err.find(folder + "/b.bin") != std::string::npos);
      CHECK(err.find("differs from the recorded") != std::string::npos);
      CHECK(err.find("move it away and run `emutrain data fetch demo` again") != std::string::npos);
      CHECK(bytes_of(folder + "/b.bin") == "tampered");
      CHECK(server.requests().size() == 5);
    }
  }
}

TEST_CASE("fetch: corrupted, truncated and missing downloads leave nothing behind", "[fetch]") {
  TempDir logdir;
  Demo demo;
  emu::test::LocalHttpServer server(kServe, demo.served, logdir / "log");
  for (const std::string& tool : downloaders()) {
    SECTION(tool) {
      TempDir dest;
      const std::string folder = dest / "demo";
      FetchOptions o;
      o.downloader = tool;
      struct Case {
        size_t download;
        std::string mirror, expect;
      };
      const std::vector<Case> cases = {
          // a plain file with a pinned checksum
          {0, "/corrupt", "differs from the pinned"},
          // an archive with a pinned checksum
          {2, "/corrupt", "differs from the pinned"},
          // a zip without one: its CRC-32 or its member's pin catches the flip
          {3, "/corrupt", "z.zip"},
          // an interrupted transfer (the server closes half-way)
          {0, "/truncated", "/truncated/a.txt"},
          {2, "/truncated", "/truncated/pkg.tar.gz"},
          // nothing at that address
          {1, "/nowhere", "/nowhere/b.bin"},
      };
      for (const Case& c : cases) {
        INFO(c.mirror << " download " << c.download);
        o.from = server.url() + c.mirror;
        const std::string err = error_of(demo.only("https://example.invalid", c.download), folder, o);
        CHECK(err.find(c.expect) != std::string::npos);
        CHECK(emu::test::dir_listing(folder).empty());
      }
    }
  }
}

TEST_CASE("fetch: present files are verified in place, mismatches left alone", "[fetch]") {
  Demo demo;
  const std::string nowhere = "http://127.0.0.1:9/never-asked";  // nothing may be downloaded here
  TempDir dest;
  const std::string folder = dest / "demo";
  emu::test::write_text(folder + "/a.txt", "alpha\nbeta\n");
  FetchOptions o;
  o.downloader = "curl";
  DatasetCheck c = fetch_dataset(demo.only(nowhere, 0), folder, o);
  CHECK(state_of(c, "a.txt") == FileState::Pinned);
  CHECK(emu::test::dir_listing(folder) == std::set<std::string>{"a.txt"});  // verifying writes nothing

  emu::test::write_text(folder + "/a.txt", "alpha\nbeta!\n");
  const std::string err = error_of(demo.only(nowhere, 0), folder, o);
  CHECK(err.find(folder + "/a.txt: SHA-256 ") != std::string::npos);
  CHECK(err.find("differs from the pinned " + sha256sum(demo.served + "/a.txt")) != std::string::npos);
  CHECK(bytes_of(folder + "/a.txt") == "alpha\nbeta!\n");

  // A file with no checksum known, put there by hand, is reported, not trusted.
  emu::test::write_text(folder + "/b.bin", "mine");
  DatasetCheck b = fetch_dataset(demo.only(nowhere, 1), folder, o);
  CHECK(state_of(b, "b.bin") == FileState::Unknown);
  CHECK(b.summary() == "present: 1 file (1 unverified: no checksum known)");
}

TEST_CASE("fetch --from a local folder: the downloads or the files themselves", "[fetch]") {
  Demo demo;
  const std::string canonical = "https://example.invalid/data";  // never used: --from wins
  {
    TempDir dest;
    FetchOptions o;
    o.from = demo.served;  // holds a.txt, b.bin, pkg.tar.gz, z.zip by their published names
    DatasetCheck c = fetch_dataset(demo.entry(canonical), dest / "demo", o);
    CHECK(c.complete());
    CHECK(state_of(c, "x.bin") == FileState::Recorded);
    CHECK(bytes_of(dest / "demo/sub/y.txt") == "why\n");
  }
  {
    // A data root holding the dataset's folder (as ../shared/data holds cora/).
    TempDir mirror, dest;
    emu::test::write_text(mirror / "demo/a.txt", "alpha\nbeta\n");
    FetchOptions o;
    o.from = mirror.path();
    CHECK(fetch_dataset(demo.only(canonical, 0), dest / "demo", o).complete());
    const std::string err = error_of(demo.only(canonical, 1), dest / "demo", o);
    CHECK(err.find("holds neither b.bin") != std::string::npos);
  }
}

TEST_CASE("fetch: staging folders of dead fetches are removed", "[fetch]") {
  Demo demo;
  TempDir dest;
  const std::string folder = dest / "demo";
  // pid 999999999 is above Linux's pid_max: no such process.
  emu::test::write_text(folder + "/.fetch-999999999/files/a.txt", "half");
  FetchOptions o;
  o.from = demo.served;
  fetch_dataset(demo.only("https://example.invalid", 0), folder, o);
  CHECK(emu::test::dir_listing(folder) == std::set<std::string>{"a.txt"});
}

TEST_CASE("fetch: the downloader is curl or wget, chosen or found", "[fetch]") {
  setenv("EMUTRAIN_DOWNLOADER", "aria2c", 1);
  CHECK_THROWS_WITH(find_downloader(), Catch::Contains("EMUTRAIN_DOWNLOADER='aria2c': must be curl or wget"));
  unsetenv("EMUTRAIN_DOWNLOADER");
  if (!downloaders().empty()) CHECK(find_downloader() == downloaders().front());
}

TEST_CASE("catalog: names, folders and pins are well formed", "[fetch][catalog]") {
  std::set<std::string> names;
  for (const CatalogEntry& e : dataset_catalog()) {
    INFO(e.name);
    CHECK(names.insert(e.name).second);
    CHECK(&catalog_entry(e.name) == &e);
    CHECK(!e.downloads.empty());
    for (const CatalogDownload& d : e.downloads) {
      CHECK(d.url.rfind("https://", 0) == 0);
      for (const std::string& sha : {d.sha256}) CHECK((sha.empty() || sha.size() == 64));
      for (const CatalogFile& f : d.files) {
        CHECK((f.sha256.empty() || f.sha256.find_first_not_of("0123456789abcdef") == std::string::npos));
        CHECK((f.sha256.empty() || f.sha256.size() == 64));
        // Every file can be checked somehow: its own pin, its archive's, or a line count.
        CHECK((!f.sha256.empty() || !d.sha256.empty() || f.lines >= 0));
      }
    }
  }
  CHECK(names == std::set<std::string>{"cora", "mnist", "cifar10", "fra-eng", "forda"});
  CHECK(&catalog_entry("CORA") == &catalog_entry("cora"));
  CHECK_THROWS_WITH(
      catalog_entry("imagenet"),
      Catch::Contains("unknown dataset 'imagenet' (known: cora, mnist, cifar10, fra-eng, forda)"));
}
