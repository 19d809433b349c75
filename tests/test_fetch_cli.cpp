// `emutrain data fetch` and `data list` as a user runs them: the real
// catalog, a local HTTP server (tests/fetch/serve.py) as the mirror, Ctrl-C in
// the middle of a download, and the errors of bad names.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <thread>

#include "tests/cli_run.h"
#include "tests/test_data_util.h"
#include "tests/test_http_server.h"

namespace fs = std::filesystem;
using emu::test::TempDir;
using emu::testing::run_cli;

namespace {

const std::string kServe = std::string(EMUTRAIN_SOURCE_DIR) + "/tests/fetch/serve.py";

}  // namespace

TEST_CASE("data fetch: Ctrl-C during a download leaves nothing behind", "[fetch][cli]") {
  TempDir served, logdir, root, run;
  emu::test::write_text(served / "cora.content", std::string(1 << 20, 'c'));
  emu::test::LocalHttpServer server(kServe, served.path(), logdir / "log");
  pid_t pid = emu::testing::spawn_cli(
      {"data", "fetch", "cora", "--from", server.url() + "/slow", "--root", root.path()}, run.path(), true);
  // Wait until the transfer is under way (the server stalls it half-way).
  for (int i = 0; i < 200 && server.requests().empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(server.requests() == std::vector<std::string>{"/slow/cora.content"});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(-pid, SIGINT);  // the terminal's Ctrl-C: the whole process group
  emu::testing::CliResult r = emu::testing::wait_cli(pid, run.path());
  CHECK(r.code != 0);
  CHECK(r.err.find("emutrain: data fetch cora: " + server.url() +
                   "/slow/cora.content: download interrupted") != std::string::npos);
  CHECK(emu::test::dir_listing(root / "cora").empty());
}

TEST_CASE("data fetch and list: names, roots and errors", "[fetch][cli]") {
  TempDir root, run;
  {
    auto r = run_cli({"data", "fetch", "imagenet", "--root", root.path()}, run.path());
    CHECK(r.code != 0);
    CHECK(r.err.find("unknown dataset 'imagenet' (known: cora, mnist, cifar10, fra-eng, forda)") !=
          std::string::npos);
  }
  {
    auto r = run_cli({"data", "list", "--root", root.path()}, run.path());
    CHECK(r.code == 0);
    CHECK(r.out.find("data root: " + root.path() + " (--root)") != std::string::npos);
    for (const char* name : {"cora", "mnist", "cifar10", "fra-eng", "forda"})
      CHECK(r.out.find(std::string("missing  (get it: emutrain data fetch ") + name + ")") !=
            std::string::npos);
  }
  {
    // A folder mirror without the files: one line naming what is missing, nothing written.
    TempDir empty;
    auto r = run_cli({"data", "fetch", "cora", "--from", empty.path(), "--root", root.path()}, run.path());
    CHECK(r.code == 1);
    CHECK(r.err.find(empty.path() + ": holds neither cora.content") != std::string::npos);
    CHECK(emu::test::dir_listing(root / "cora").empty());
  }
}
