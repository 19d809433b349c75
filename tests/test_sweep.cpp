// Sweep files: ranges, products, zips, per-value settings and templates expand
// to the exact --set lists; the shipped GCN format sweep has its 168 points and
// every one of them is a valid recipe; mistakes are one-line errors naming the
// key path; results.csv and aggregate.csv from run folders.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test_trainer_data.h"
#include "train/recipe.h"
#include "train/sweep.h"
#include "train/sweep_results.h"

using namespace emu;
using namespace emu::train;
using Strings = std::vector<std::string>;
namespace fs = std::filesystem;

namespace {

std::string error_of(const std::string& text) {
  try {
    expand_sweep(parse_sweep(text, "s.yaml"));
  } catch (const SweepError& e) {
    std::string m = e.what();
    CHECK(m.find('\n') == std::string::npos);
    CHECK(m.rfind("sweep s.yaml: ", 0) == 0);
    return m;
  }
  FAIL("no error for:\n" << text);
  return "";
}

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

}  // namespace

TEST_CASE("the GCN format sweep expands to 168 points with the exact settings", "[sweep]") {
  const std::string file = std::string(EMUTRAIN_SOURCE_DIR) + "/recipes/sweeps/gcn_cora_formats.yaml";
  SweepSpec s = load_sweep(file);
  CHECK(s.recipe == (fs::path(EMUTRAIN_SOURCE_DIR) / "recipes/gcn_cora.yaml").lexically_normal().string());
  REQUIRE(s.axes.size() == 4);
  CHECK(s.axes[0].name == "exp");
  CHECK(s.axes[0].key.empty());  // a variable, not a recipe key
  CHECK(s.jobs == 2);
  CHECK(s.threads == 1);
  std::vector<SweepPoint> p = expand_sweep(s);
  REQUIRE(p.size() == 6 * 7 * 2 * 2);
  // The first axis varies slowest, the last fastest.
  CHECK(p[0].id == "exp=3_man=1_mode=acc_format_subnormals=on");
  CHECK(p[0].values == Strings{"3", "1", "acc_format", "on"});
  CHECK(p[0].sets ==
        Strings{"numerics.default.acc=e3m1", "numerics.default.format=e3m1", "checkpoint.every_epochs=0"});
  CHECK(p[0].label == "e3m1 acc_format");
  CHECK(p[1].sets == Strings{"numerics.default.acc=e3m1:nosub", "numerics.default.format=e3m1:nosub",
                             "checkpoint.every_epochs=0"});
  CHECK(p[2].id == "exp=3_man=1_mode=acc_fp32_subnormals=on");
  CHECK(p[2].sets ==
        Strings{"numerics.default.acc=fp32", "numerics.default.format=e3m1", "checkpoint.every_epochs=0"});
  CHECK(p[4].values == Strings{"3", "2", "acc_format", "on"});
  CHECK(p[28].values == Strings{"4", "1", "acc_format", "on"});
  CHECK(p.back().id == "exp=8_man=7_mode=acc_fp32_subnormals=off");
  CHECK(p.back().sets == Strings{"numerics.default.acc=fp32", "numerics.default.format=e8m7:nosub",
                                 "checkpoint.every_epochs=0"});

  std::vector<SweepRun> runs = sweep_runs(s, p);
  REQUIRE(runs.size() == 168);
  CHECK(runs[1].id == "exp=3_man=1_mode=acc_format_subnormals=off_seed=0");
  CHECK(runs[1].label == "e3m1:nosub acc_format seed 0");
  CHECK(runs[1].sets == Strings{"threads=1", "numerics.default.acc=e3m1:nosub",
                                "numerics.default.format=e3m1:nosub", "checkpoint.every_epochs=0", "seed=0"});
  // Every point is a valid recipe: all 84 formats (and their :nosub) parse.
  for (const SweepRun& r : runs) {
    INFO(r.id);
    Recipe rec = load_recipe(s.recipe, r.sets);
    CHECK(rec.root["numerics"]["default"]["format"].Scalar() ==
          r.sets[2].substr(std::string("numerics.default.format=").size()));
  }
}

TEST_CASE("sweep axes: lists on recipe keys, ranges, zips, repeats and seeds", "[sweep]") {
  SweepSpec s = parse_sweep(R"(
recipe: base.yaml
axes:
  - numerics.default.acc: [fp32, bf16]
  - n: 3..1
  - zip:
      - {name: lr, key: optimizer.lr, values: [0.1, 0.01]}
      - {name: wd, key: optimizer.weight_decay, values: [0, 5e-4]}
set: {model.hidden: "[{n}0]", numerics.overrides: "[{match: fc0, format: e{n}m2}]"}
repeats: 2
threads: 3
)",
                            "dir/s.yaml");
  CHECK(s.recipe == "dir/base.yaml");
  CHECK(s.name == "s");
  REQUIRE(s.axes.size() == 4);
  CHECK(s.axes[0].name == "numerics.default.acc");
  CHECK(s.axes[0].key == "numerics.default.acc");
  CHECK(s.axes[2].group == s.axes[3].group);
  std::vector<SweepPoint> p = expand_sweep(s);
  REQUIRE(p.size() == 2 * 3 * 2);  // the zip is one axis of 2
  CHECK(p[0].id == "numerics.default.acc=fp32_n=3_lr=0.1_wd=0");
  CHECK(p[0].sets == Strings{"numerics.default.acc=fp32", "optimizer.lr=0.1", "optimizer.weight_decay=0",
                             "model.hidden=[30]", "numerics.overrides=[{match: fc0, format: e3m2}]"});
  CHECK(p[1].values == Strings{"fp32", "3", "0.01", "5e-4"});
  CHECK(p[2].values == Strings{"fp32", "2", "0.1", "0"});
  CHECK(p[11].values == Strings{"bf16", "1", "0.01", "5e-4"});
  std::vector<SweepRun> runs = sweep_runs(s, p);
  REQUIRE(runs.size() == 24);
  CHECK(runs[0].id == p[0].id + "_seed=0");
  CHECK(runs[1].id == p[0].id + "_seed=1");
  CHECK(runs[1].sets.front() == "threads=3");
  CHECK(runs[1].sets.back() == "seed=1");
  CHECK(runs[2].point == 1);

  // No axes: one point; explicit seeds; lists and maps in `set` pass as flow YAML.
  SweepSpec one = parse_sweep("recipe: /abs/r.yaml\nseeds: [4, 9]\nset: {model.hidden: [8, 8]}\n", "s.yaml");
  CHECK(one.recipe == "/abs/r.yaml");
  std::vector<SweepPoint> q = expand_sweep(one);
  REQUIRE(q.size() == 1);
  CHECK(q[0].id == "base");
  CHECK(q[0].sets == Strings{"model.hidden=[8, 8]"});
  std::vector<SweepRun> r2 = sweep_runs(one, q);
  REQUIRE(r2.size() == 2);
  CHECK(r2[1].sets.back() == "seed=9");
}

TEST_CASE("templates: names, escapes and YAML braces", "[sweep]") {
  TemplateList v = {{"exp", "5"}, {"man", "2"}, {"a.b", "x"}};
  CHECK(expand_template("e{exp}m{man}", v) == "e5m2");
  CHECK(expand_template("{{exp}} {a.b}", v) == "{exp} x");
  CHECK(expand_template("[{match: fc1, format: e{exp}m{man}}]", v) == "[{match: fc1, format: e5m2}]");
  CHECK(expand_template("{ exp}{1x}", v) == "{ exp}{1x}");
  CHECK_THROWS_WITH(expand_template("e{exq}", v), Catch::Contains("unknown variable 'exq' in 'e{exq}'"));
  std::vector<int64_t> r;
  CHECK(parse_int_range("3..8", &r));
  CHECK(r == std::vector<int64_t>{3, 4, 5, 6, 7, 8});
  CHECK(parse_int_range("-1..-3", &r));
  CHECK(r == std::vector<int64_t>{-1, -2, -3});
  CHECK_FALSE(parse_int_range("3..x", &r));
  CHECK_FALSE(parse_int_range("e5m2", &r));
}

TEST_CASE("sweep file errors name the key", "[sweep]") {
  CHECK_THAT(error_of("recipe: r.yaml\naxis: []\n"),
             Catch::Contains(
                 "sweep s.yaml: axis: unknown key (allowed: name, recipe, axes, vars, set, label, repeats"));
  CHECK_THAT(error_of("axes: []\n"), Catch::Contains("sweep s.yaml: recipe: required"));
  CHECK_THAT(error_of("recipe: r.yaml\naxes:\n  - exp: 1..2\n  - {name: m, valuez: [1]}\n"),
             Catch::Contains("s.yaml: axes[1].valuez: unknown key (allowed: name, key, values)"));
  CHECK_THAT(error_of("recipe: r.yaml\naxes:\n  - {name: m, values: [1, {value: 2, sett: {a: 1}}]}\n"),
             Catch::Contains("axes[0].values[1].sett: unknown key (allowed: value, set, vars)"));
  CHECK_THAT(error_of("recipe: r.yaml\naxes:\n  - {name: m, values: [{set: {a: 1}}]}\n"),
             Catch::Contains("axes[0].values[0].value: required"));
  CHECK_THAT(error_of("recipe: r.yaml\naxes:\n  - exp: 3..x\n"),
             Catch::Contains("axes[0].exp: '3..x' is neither a list nor a range such as 3..8"));
  // Bounds past int64 (fuzz_sweep: std::stoll threw out_of_range) and a span past int64.
  CHECK_THAT(
      error_of("recipe: r.yaml\naxes:\n  - man: 0..7333333333333333333333333\n"),
      Catch::Contains("axes[0].man: '0..7333333333333333333333333' is neither a list nor a range such as "
                      "3..8 (int64 bounds, at most 100001 values)"));
  CHECK_THAT(error_of("recipe: r.yaml\naxes:\n  - man: -9223372036854775808..9223372036854775807\n"),
             Catch::Contains("is neither a list nor a range"));
  CHECK_THAT(error_of("recipe: r.yaml\naxes:\n  - {name: m}\n"), Catch::Contains("axes[0].values: required"));
  CHECK_THAT(error_of("recipe: r.yaml\naxes:\n  - zip: [{a: [1, 2]}, {b: [1]}]\n"),
             Catch::Contains("axes[0].zip: axes 'a' (2 values) and 'b' (1 values) differ in length"));
  CHECK_THAT(error_of("recipe: r.yaml\naxes:\n  - a: [1]\n  - a: [2]\n"),
             Catch::Contains("axes[1]: axis name 'a' given twice"));
  CHECK_THAT(error_of("recipe: r.yaml\naxes:\n  - seed: [1, 2]\n"),
             Catch::Contains("axes[0]: 'seed' is a results.csv column, not an axis name (give seeds with"));
  CHECK_THAT(error_of("recipe: r.yaml\naxes:\n  - 9lives: [1]\n"),
             Catch::Contains("'9lives' is not a usable axis name"));
  CHECK_THAT(error_of("recipe: r.yaml\nrepeats: 0\n"),
             Catch::Contains("repeats: 0 is out of range (want an integer >= 1)"));
  CHECK_THAT(error_of("recipe: r.yaml\njobs: two\n"), Catch::Contains("jobs: want an integer >= 1"));
  CHECK_THAT(error_of("recipe: r.yaml\nrepeats: 2\nseeds: [1]\n"),
             Catch::Contains("repeats: give `repeats` or `seeds`, not both"));
  CHECK_THAT(error_of("recipe: r.yaml\nseeds: [1, 1]\n"), Catch::Contains("seeds[1]: seed 1 given twice"));
  CHECK_THAT(
      error_of("recipe: r.yaml\naxes: [{exp: 3..4}]\nset: {numerics.default.format: \"e{exq}m2\"}\n"),
      Catch::Contains("set.numerics.default.format: unknown variable 'exq' in 'e{exq}m2' (known: exp)"));
  CHECK_THAT(error_of("recipe: r.yaml\naxes: [{exp: 3..4}]\nvars: {exp: 1}\n"),
             Catch::Contains("vars.exp: the name of an axis"));
  CHECK_THAT(error_of("recipe: r.yaml\naxes: [{v: [a:b, a/b]}]\n"),
             Catch::Contains("points v=a:b and v=a/b get the same folder name 'v=a_b'"));
  CHECK_THAT(error_of("recipe: r.yaml\naxes: [exp: [1, 2]\n"),
             Catch::Contains("s.yaml: YAML syntax error at line"));
}

TEST_CASE("results.csv and aggregate.csv from run folders", "[sweep]") {
  test::TempDir dir;
  SweepSpec s = parse_sweep("recipe: r.yaml\naxes: [{lr: [0.1, 1e38]}]\nrepeats: 2\n", "s.yaml");
  std::vector<SweepPoint> p = expand_sweep(s);
  std::vector<SweepRun> runs = sweep_runs(s, p);
  const fs::path rd = dir.path / "runs";
  write(
      rd / runs[0].id / "summary.json",
      R"({"name":"x","epochs":2,"steps":26,"seconds":1.5,"final":{"test":{"loss":0.5,"acc":0.8125,"count":64},)"
      R"("train":{"loss":0.25,"acc":0.9,"count":200}},"best":{"test":{"acc":0.84375,"epoch":1}},"checkpoint":"c"})");
  write(
      rd / runs[1].id / "summary.json",
      R"({"name":"x","epochs":2,"steps":26,"seconds":2.5,"final":{"test":{"loss":0.5,"acc":0.875,"count":64},)"
      R"("train":{"loss":null,"acc":0.9,"count":200}},"best":{"test":{"acc":0.875,"epoch":2}},"checkpoint":"c"})");
  RunRecord div;
  div.status = "diverged";
  div.reason = "loss became NaN at step 2 (epoch 1, batch 2): parameter, \"fc0\"";
  div.exit_code = 3;
  div.wall_s = 0.75;
  fs::create_directories(rd / runs[2].id);
  write_run_status((rd / runs[2].id).string(), div);
  fs::create_directories(rd / runs[3].id);  // started, never finished
  write(rd / runs[3].id / "output.log", "epoch 1\n");

  std::vector<std::optional<RunRecord>> rec;
  for (const SweepRun& r : runs) rec.push_back(read_run((rd / r.id).string()));
  REQUIRE(rec[0]);
  CHECK(rec[0]->status == "ok");
  CHECK(*rec[0]->wall_s == 1.5);  // no marker: summary.json's seconds
  REQUIRE(rec[2]);
  CHECK(rec[2]->status == "diverged");
  CHECK(rec[2]->reason == div.reason);
  CHECK_FALSE(rec[3]);
  CHECK(*metric_value(*rec[0], "final_test_acc") == 81.25);
  CHECK_FALSE(metric_value(*rec[2], "final_test_acc"));

  const std::string csv = results_csv(s, p, runs, rec, rd.string());
  const std::string r = rd.string();
  CHECK(csv ==
        "point,lr,seed,status,diverged,final_train_loss,final_val_acc,final_test_acc,best_val_acc,best_test_"
        "acc,"
        "wall_s,steps,run_dir\n"
        "lr=0.1,0.1,0,ok,no,0.25,,81.25,,84.38,1.50,26," +
            r +
            "/lr=0.1_seed=0\n"
            "lr=0.1,0.1,1,ok,no,,,87.50,,87.50,2.50,26," +
            r +
            "/lr=0.1_seed=1\n"
            "lr=1e38,1e38,0,diverged,yes,,,,,,0.75,," +
            r + "/lr=1e38_seed=0\n");
  const std::string agg = aggregate_csv(s, p, runs, rec);
  const std::string head =
      "lr,runs,mean_final_val_acc,std_final_val_acc,min_final_val_acc,max_final_val_acc,mean_final_test_acc,"
      "std_final_test_acc,min_final_test_acc,max_final_test_acc,mean_best_val_acc,std_best_val_acc,"
      "min_best_val_acc,max_best_val_acc,mean_best_test_acc,std_best_test_acc,min_best_test_acc,max_best_"
      "test_acc,"
      "mean_wall_s,std_wall_s,min_wall_s,max_wall_s,diverged_runs,failed_runs\n";
  // std of {81.25, 87.5} (n - 1): 4.419417...; of {1.5, 2.5}: 0.707107
  CHECK(agg ==
        head +
            "0.1,2,,,,,84.375,4.419,81.25,87.50,,,,,85.938,2.210,84.38,87.50,2.000,0.707,1.50,2.50,0,0\n"
            "1e38,1,,,,,,,,,,,,,,,,,0.750,,0.75,0.75,1,0\n");
}
