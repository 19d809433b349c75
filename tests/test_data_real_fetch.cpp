// The real datasets in $EMUTRAIN_DATA_ROOT or ../shared/data against the
// checksums pinned in data/catalog.cpp, and `emutrain data fetch` of Cora and
// fra-eng from a local HTTP server serving those copies the way their
// publishers do (cora.content and cora.cites as files, fra.txt in
// fra-eng.zip, the zip written by Python's zipfile). Prints "SKIP: ..." and
// counts as skipped where the folder is absent.
#include <catch2/catch.hpp>
#include <filesystem>
#include <iostream>

#include "data/catalog.h"
#include "data/fetch.h"
#include "tests/cli_run.h"
#include "tests/test_data_util.h"
#include "tests/test_http_server.h"

namespace fs = std::filesystem;
using namespace emu::data;
using emu::test::TempDir;

namespace {

std::string real_root_or_skip() {
  const std::string root = emu::test::real_data_root();
  if (root.empty() || !fs::is_directory(root + "/cora")) {
    std::cout << "SKIP: no real datasets at '" << root << "' (set EMUTRAIN_DATA_ROOT)\n";
    return "";
  }
  return root;
}

}  // namespace

TEST_CASE("the shared copies match the pinned checksums", "[fetch][real]") {
  const std::string root = real_root_or_skip();
  if (root.empty()) return;
  int checked = 0;
  for (const CatalogEntry& e : dataset_catalog()) {
    DatasetCheck c = check_dataset(e, root + "/" + e.folder);
    for (const FileCheck& f : c.files) {
      INFO(e.name << ": " << f.path << " " << f.detail);
      CHECK(f.state != FileState::Mismatch);
      if (f.state == FileState::Pinned) ++checked;
    }
  }
  // The shared folder holds Cora (2 files), fra.txt and MNIST's t10k (2 files).
  CHECK(checked >= 5);
  CHECK(check_dataset(catalog_entry("cora"), root + "/cora").count(FileState::Pinned) == 2);
  CHECK(check_dataset(catalog_entry("fra-eng"), root + "/fra-eng").count(FileState::Pinned) == 1);
}

TEST_CASE("data fetch cora fra-eng from a mirror of the real files", "[fetch][real][cli]") {
  const std::string root = real_root_or_skip();
  if (root.empty()) return;
  TempDir served, logdir, dest, run;
  fs::copy_file(root + "/cora/cora.content", served / "cora.content");
  fs::copy_file(root + "/cora/cora.cites", served / "cora.cites");
  const std::string zip = "cd '" + root + "/fra-eng' && python3 -c \"import zipfile; z = zipfile.ZipFile('" +
                          (served / "fra-eng.zip") +
                          "', 'w', zipfile.ZIP_DEFLATED); z.write('fra.txt'); z.close()\"";
  REQUIRE(std::system(zip.c_str()) == 0);
  emu::test::LocalHttpServer server(std::string(EMUTRAIN_SOURCE_DIR) + "/tests/fetch/serve.py", served.path(),
                                    logdir / "log");

  auto r = emu::testing::run_cli(
      {"data", "fetch", "cora", "fra-eng", "--from", server.url(), "--root", dest.path()}, run.path());
  INFO(r.out << r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("cora: verified: 2 files (2 pinned SHA-256) in " + (dest / "cora")) != std::string::npos);
  CHECK(r.out.find("fra-eng: unpacking 1 file(s) from fra-eng.zip") != std::string::npos);
  CHECK(r.out.find("fra-eng: verified: 1 file (1 pinned SHA-256)") != std::string::npos);
  CHECK(emu::testing::slurp(dest / "fra-eng/fra.txt") == emu::testing::slurp(root + "/fra-eng/fra.txt"));
  CHECK(server.requests() == std::vector<std::string>{"/cora.content", "/cora.cites", "/fra-eng.zip"});

  // Again without a mirror (and without a network): it only verifies.
  r = emu::testing::run_cli({"data", "fetch", "cora", "--root", dest.path()}, run.path());
  CHECK(r.code == 0);
  CHECK(r.out.find("(nothing to fetch)") != std::string::npos);
  CHECK(server.requests().size() == 3);

  r = emu::testing::run_cli({"data", "list", "--root", dest.path()}, run.path());
  CHECK(r.out.find("verified: 2 files (2 pinned SHA-256)") != std::string::npos);
}
