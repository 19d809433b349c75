// `emutrain sweep` and `emutrain search` with the real binary ($EMUTRAIN_BIN)
// on a tiny MLP recipe over generated MNIST files: a 4-point sweep writes
// results.csv rows equal to each run's summary.json; a sweep whose process
// group is killed with SIGKILL after its first run and started again trains
// only the runs that had not finished and ends with the same rows as a sweep
// never stopped; a diverged run is recorded as diverged; errors are one line.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "cli_run.h"
#include "test_trainer_data.h"
#include "train/json.h"

using namespace emu;
namespace fs = std::filesystem;

namespace {

using emu::testing::slurp;
using Result = emu::testing::CliResult;

std::vector<std::string> lines_of(const std::string& path) {
  std::vector<std::string> out;
  std::istringstream in(slurp(path));
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : line) {
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// Starts `emutrain args...` in its own process group, output into files under `dir`.
pid_t spawn(const std::vector<std::string>& args, const std::string& dir) {
  return emu::testing::spawn_cli(args, dir, /*own_group=*/true);
}
Result run_cli(const std::vector<std::string>& args, const std::string& dir) {
  return emu::testing::wait_cli(spawn(args, dir), dir);
}

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::trunc) << text; }

// A recipe that trains in well under a second.
std::string tiny_recipe(const std::string& mnist) {
  return "model: {type: mlp, hidden: [16]}\n"
         "data: {type: mnist, root: " +
         mnist +
         ", train_source: t10k, train_range: [0, 200], test_range: [200, 264], batch_size: 20, workers: 0}\n"
         "optimizer: {type: sgd, lr: 0.05, momentum: 0.9}\n"
         "epochs: 2\nseed: 5\nlogging: {every_steps: 0, progress: off}\ncheckpoint: {every_epochs: 0}\n";
}

const char* kSweep =
    "recipe: r.yaml\n"
    "axes:\n"
    "  - optimizer.lr: [0.05, 0.1]\n"
    "  - {name: width, key: model.hidden, values: [\"[8]\", \"[16]\"]}\n"
    "jobs: 1\nthreads: 1\n";

// results.csv rows without the columns that differ between two sweeps (wall_s, run_dir);
// the cost columns (docs/cost.md) are the same in both.
std::vector<std::string> stable_rows(const std::string& csv_path) {
  std::vector<std::string> rows;
  for (const std::string& line : lines_of(csv_path)) {
    std::vector<std::string> f = split(line);
    REQUIRE(f.size() == 21);
    f.erase(f.begin() + 13);  // run_dir
    f.erase(f.begin() + 11);  // wall_s
    std::string row;
    for (const std::string& x : f) row += x + ",";
    rows.push_back(row);
  }
  return rows;
}

std::map<std::string, int> count_lines(const std::string& path, const std::string& prefix) {
  std::map<std::string, int> n;
  for (const std::string& l : lines_of(path))
    if (l.rfind(prefix, 0) == 0) ++n[l.substr(prefix.size(), l.find(' ', prefix.size()) - prefix.size())];
  return n;
}

}  // namespace

TEST_CASE("emutrain sweep: 4 points to results.csv, equal to each run's summary", "[sweep][cli]") {
  test::TempDir dir;
  test::write_mnist_idx(dir.str() + "/mnist", 264);
  write(dir.str() + "/r.yaml", tiny_recipe(dir.str() + "/mnist"));
  write(dir.str() + "/s.yaml", kSweep);
  const std::string out = dir.str() + "/out";

  Result dry = run_cli({"sweep", dir.str() + "/s.yaml", "--out", out, "--dry-run"}, dir.str());
  INFO(dry.out << dry.err);
  REQUIRE(dry.code == 0);
  CHECK_THAT(dry.out, Catch::Contains("optimizer.lr=0.1_width=_8__seed=0: emutrain train " + dir.str() +
                                      "/r.yaml --set threads=1 --set optimizer.lr=0.1 --set model.hidden=[8] "
                                      "--set seed=0 --out " +
                                      out + "/runs/optimizer.lr=0.1_width=_8__seed=0"));
  CHECK_THAT(dry.out, Catch::Contains("4 points x 1 seeds = 4 runs"));
  CHECK_FALSE(fs::exists(out));

  Result r = run_cli({"sweep", dir.str() + "/s.yaml", "--out", out}, dir.str());
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("[1/4] optimizer.lr=0.05 width=[8] seed 0: test "));
  CHECK_THAT(r.out, Catch::Contains("[4/4] optimizer.lr=0.1 width=[16] seed 0: test "));
  CHECK_THAT(r.out, Catch::Contains("sweep done: 4 runs (4 ok, 0 diverged, 0 failed)"));
  std::vector<std::string> rows = lines_of(out + "/results.csv");
  REQUIRE(rows.size() == 5);
  CHECK(rows[0] ==
        "point,optimizer.lr,width,seed,status,diverged,final_train_loss,final_val_acc,final_test_acc,best_"
        "val_acc,"
        "best_test_acc,wall_s,steps,run_dir,step_macs,energy_step_pj,energy_mac_pj,energy_mem_pj,energy_"
        "infer_pj,"
        "area_um2,mac_area_um2");
  const std::vector<std::pair<std::string, std::string>> expect = {
      {"0.05", "[8]"}, {"0.05", "[16]"}, {"0.1", "[8]"}, {"0.1", "[16]"}};
  for (size_t i = 0; i < 4; ++i) {
    std::vector<std::string> f = split(rows[i + 1]);
    REQUIRE(f.size() == 21);
    CHECK(f[1] == expect[i].first);
    CHECK(f[2] == expect[i].second);
    CHECK(f[3] == "0");
    CHECK(f[4] == "ok");
    CHECK(f[5] == "no");
    CHECK(f[12] == "20");  // 2 epochs of 10 batches
    // The figures are those of the run's own summary.json and recipe.yaml.
    train::Json s = train::parse_json(slurp(f[13] + "/summary.json"));
    const double test_acc = std::stod(s.find("final")->find("test")->find("acc")->text);
    CHECK(std::stod(f[8]) == Approx(100 * test_acc).margin(0.005));
    CHECK(f[8] != "");
    const std::string recipe = slurp(f[13] + "/recipe.yaml");
    CHECK_THAT(recipe, Catch::Contains("lr: " + expect[i].first));
    CHECK(fs::exists(f[13] + "/output.log"));
    // Cost columns: the MLP 784 -> h -> 10 on a batch of 20 multiplies 20 (784 h + 10 h)
    // forward, one target term per row in the loss, and backward 20 * 784 h (fc1's
    // weights; the image needs no gradient) plus 2 * 20 * 10 h (fc2's input and weights).
    const int64_t h = expect[i].second == "[8]" ? 8 : 16;
    CHECK(f[14] == std::to_string(20 * (784 * h + 10 * h) + 20 + 20 * 784 * h + 2 * 20 * 10 * h));
    // Everything fp32: the MACs alone cost 4.6 pJ each (Horowitz: 3.7 + 0.9).
    CHECK(std::stod(f[16]) == Approx(4.6 * std::stod(f[14])).epsilon(1e-5));
    CHECK(std::stod(f[15]) > std::stod(f[16]));
  }
  std::vector<std::string> agg = lines_of(out + "/aggregate.csv");
  REQUIRE(agg.size() == 5);
  CHECK(agg[0].rfind("optimizer.lr,width,runs,mean_final_val_acc,", 0) == 0);
  CHECK(agg[1].rfind("0.05,[8],1,", 0) == 0);

  // Run again: everything is finished, nothing is trained.
  Result again = run_cli({"sweep", dir.str() + "/s.yaml", "--out", out}, dir.str());
  REQUIRE(again.code == 0);
  CHECK_THAT(again.out, Catch::Contains("4 runs, 4 finished before"));
  CHECK(count_lines(out + "/sweep_log.txt", "start ").size() == 4);
  for (const auto& [id, n] : count_lines(out + "/sweep_log.txt", "start ")) CHECK(n == 1);
}

TEST_CASE("emutrain sweep killed with SIGKILL trains only the missing runs when started again",
          "[sweep][cli]") {
  test::TempDir dir;
  test::write_mnist_idx(dir.str() + "/mnist", 264);
  write(dir.str() + "/r.yaml", tiny_recipe(dir.str() + "/mnist"));
  write(dir.str() + "/s.yaml", kSweep);
  const std::string ref = dir.str() + "/ref", out = dir.str() + "/out";
  REQUIRE(run_cli({"sweep", dir.str() + "/s.yaml", "--out", ref}, dir.str()).code == 0);

  // Kill the sweep's whole process group (the sweep and its child) once the first run has ended.
  pid_t pid = spawn({"sweep", dir.str() + "/s.yaml", "--out", out}, dir.str());
  const std::string log = out + "/sweep_log.txt";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (count_lines(log, "end ").empty()) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(-pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(WIFSIGNALED(status));
  const std::map<std::string, int> ended_first = count_lines(log, "end ");
  REQUIRE(ended_first.size() < 4);  // killed before the end
  const std::map<std::string, int> started_first = count_lines(log, "start ");

  Result r = run_cli({"sweep", dir.str() + "/s.yaml", "--out", out}, dir.str());
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains(std::to_string(ended_first.size()) + " finished before"));
  const std::map<std::string, int> started = count_lines(log, "start ");
  const std::map<std::string, int> ended = count_lines(log, "end ");
  REQUIRE(ended.size() == 4);
  for (const auto& [id, n] : ended) {
    INFO(id);
    CHECK(n == 1);  // every run ended exactly once
    // A run that had finished was not started again; one killed mid-way was (from scratch).
    CHECK(started.at(id) == (ended_first.count(id) ? 1 : started_first.count(id) ? 2 : 1));
  }
  CHECK(stable_rows(out + "/results.csv") == stable_rows(ref + "/results.csv"));
}

TEST_CASE("emutrain sweep records a diverged run and reports errors in one line", "[sweep][cli]") {
  test::TempDir dir;
  test::write_mnist_idx(dir.str() + "/mnist", 264);
  write(dir.str() + "/r.yaml", tiny_recipe(dir.str() + "/mnist"));
  // lr 1e38 sends the weights to infinity in the first update (as in test_cli_train).
  write(dir.str() + "/s.yaml",
        "recipe: r.yaml\naxes:\n  - optimizer.lr: [0.05, 1e38]\n"
        "set: {data.mean: \"[0]\", data.std: \"[0.01]\"}\njobs: 2\n");
  const std::string out = dir.str() + "/out";
  Result r = run_cli({"sweep", dir.str() + "/s.yaml", "--out", out}, dir.str());
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("optimizer.lr=1e38 seed 0: diverged (loss became NaN at step 2"));
  std::vector<std::string> rows = lines_of(out + "/results.csv");
  REQUIRE(rows.size() == 3);
  std::vector<std::string> f = split(rows[2]);
  REQUIRE(f.size() == 20);
  CHECK(f[1] == "1e38");
  CHECK(f[3] == "diverged");
  CHECK(f[4] == "yes");
  for (int i = 5; i <= 9; ++i) CHECK(f[i].empty());
  CHECK(split(rows[1])[3] == "ok");
  train::Json marker = train::parse_json(slurp(out + "/runs/optimizer.lr=1e38_seed=0/sweep_status.json"));
  CHECK(marker.find("exit_code")->text == "3");
  CHECK_THAT(marker.find("reason")->text, Catch::StartsWith("loss became NaN at step 2 (epoch 1, batch 2)"));
  // A diverged run counts as finished.
  Result again = run_cli({"sweep", dir.str() + "/s.yaml", "--out", out}, dir.str());
  CHECK_THAT(again.out, Catch::Contains("2 finished before"));

  // A bad key in the sweep file, and a point whose recipe is wrong: exit 2, one line, nothing run.
  write(dir.str() + "/bad.yaml", "recipe: r.yaml\naxes:\n  - {name: lr, valus: [1]}\n");
  Result bad = run_cli({"sweep", dir.str() + "/bad.yaml", "--out", dir.str() + "/bad"}, dir.str());
  CHECK(bad.code == 2);
  CHECK(bad.err == "emutrain: sweep " + dir.str() +
                       "/bad.yaml: axes[0].valus: unknown key (allowed: name, key, "
                       "values)\n");
  write(dir.str() + "/bad2.yaml", "recipe: r.yaml\naxes:\n  - optimizer.momentun: [0.5]\n");
  Result bad2 = run_cli({"sweep", dir.str() + "/bad2.yaml", "--out", dir.str() + "/bad2"}, dir.str());
  CHECK(bad2.code == 2);
  CHECK_THAT(bad2.err, Catch::Contains("point optimizer.momentun=0.5 seed 0: recipe "));
  CHECK_THAT(bad2.err, Catch::Contains("unknown key 'optimizer.momentun'"));
  CHECK_FALSE(fs::exists(dir.str() + "/bad2"));
}

TEST_CASE("emutrain search visits formats, reuses trained ones and names the smallest", "[search][cli]") {
  test::TempDir dir;
  test::write_mnist_idx(dir.str() + "/mnist", 264);
  write(dir.str() + "/r.yaml", tiny_recipe(dir.str() + "/mnist"));
  const std::vector<std::string> args = {
      "search", dir.str() + "/r.yaml", "--start", "e5m4",  "--min-exp",     "4", "--min-man",
      "3",      "--threshold",         "100",     "--out", dir.str() + "/s"};
  Result r = run_cli(args, dir.str());
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  // A threshold of 100 points passes everything: mantissa [3, 4]: m3; exponent [4, 5]: e4; round 2: m3
  // (cached)...
  CHECK_THAT(r.out, Catch::Contains("baseline"));
  CHECK_THAT(r.out, Catch::Contains("e5m4"));
  CHECK_THAT(r.out, Catch::Contains("search ended at e4m3 (8 bits)"));
  CHECK_THAT(r.out, Catch::Contains("smallest passing format(s) visited: e4m3 (8 bits)"));
  // baseline, e5m4, e5m3, e4m3
  CHECK(lines_of(dir.str() + "/s/results.csv").size() == 5);
  Result again = run_cli(args, dir.str());
  REQUIRE(again.code == 0);
  CHECK_THAT(again.out, Catch::Contains("(trained before)"));
  for (const auto& [id, n] : count_lines(dir.str() + "/s/search_log.txt", "start ")) CHECK(n == 1);
}
