// `emutrain plot`, the real binary, on a results.csv / metrics.csv / summary.json
// written here: both files written next to the input, the mean over seeds in
// the cells, numeric tick order (3 before 10), --where filtering, line plots
// and curves; a missing column fails with an error that names it and lists
// the columns there are.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace {

fs::path dir() {
  static const fs::path d = [] {
    fs::path p = fs::temp_directory_path() / ("emutrain_test_plot_cli_" + std::to_string(::getpid()));
    fs::remove_all(p);
    fs::create_directories(p / "run_a");
    fs::create_directories(p / "fp32");
    return p;
  }();
  return d;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `emutrain plot ARGS`; returns the exit code, output in *out.
int plot(const std::string& args, std::string* out) {
  const char* bin = std::getenv("EMUTRAIN_BIN");
  REQUIRE(bin != nullptr);
  const fs::path log = dir() / "log.txt";
  const int rc = std::system((std::string(bin) + " plot " + args + " > " + log.string() + " 2>&1").c_str());
  *out = read(log);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// results.csv as the sweep writes it: exp in {3, 10}, man in {1, 2}, mode in
// {fp32acc, low}, seeds 1 and 2; final_test_acc = 10 * exp + man + seed (mode
// low: minus 50), one failed run with an empty accuracy.
fs::path write_results() {
  const fs::path p = dir() / "results.csv";
  std::ofstream out(p);
  out << "point,exp,man,mode,seed,status,diverged,final_train_loss,final_val_acc,final_test_acc,best_val_acc,"
         "best_test_acc,wall_s,steps,run_dir\n";
  int point = 0;
  for (int exp : {10, 3})
    for (int man : {2, 1})
      for (const char* mode : {"fp32acc", "low"})
        for (int seed : {1, 2}) {
          const double acc = 10 * exp + man + seed - (std::string(mode) == "low" ? 50 : 0);
          const bool failed = exp == 3 && man == 2 && seed == 2 && std::string(mode) == "low";
          ++point;
          out << point << "," << exp << "," << man << "," << mode << "," << seed << ","
              << (failed ? "failed,no,,," : "ok,no,0.5,50,") << (failed ? "" : std::to_string(acc)) << ",60,"
              << (failed ? "" : std::to_string(acc)) << ",1.5,100,runs/p" << point << "\n";
        }
  return p;
}

}  // namespace

TEST_CASE("plot --heatmap writes SVG and PNG next to results.csv", "[plot]") {
  const fs::path csv = write_results();
  std::string out;
  REQUIRE(plot(csv.string() + " --heatmap man,exp --where mode=fp32acc --baseline 100", &out) == 0);
  INFO(out);
  const fs::path svg = dir() / "results_heatmap_man_exp_mode_fp32acc.svg";
  const fs::path png = dir() / "results_heatmap_man_exp_mode_fp32acc.png";
  REQUIRE(fs::exists(svg));
  REQUIRE(fs::exists(png));
  CHECK(fs::file_size(png) > 1000);
  const std::string s = read(svg);
  CHECK(s.find("class=\"cell 1 1\"") != std::string::npos);
  CHECK(s.find("class=\"cell 2 0\"") == std::string::npos);  // 2 x 2 cells
  // Means over the two seeds: exp 10, man 2 -> (103 + 104) / 2 = 103.5; exp 3, man 1 -> 32.5.
  CHECK(s.find(">103.5<") != std::string::npos);
  CHECK(s.find(">32.5<") != std::string::npos);
  // Numeric order of the y ticks: 3 (row 0, bottom) is written before 10.
  const size_t three = s.find(">3<"), ten = s.find(">10<");
  REQUIRE(three != std::string::npos);
  REQUIRE(ten != std::string::npos);
  CHECK(three < ten);
  // Baseline 100: the two exp=10 cells (102.5, 103.5) are outlined.
  size_t outlined = 0;
  for (size_t i = s.find("class=\"baseline "); i != std::string::npos; i = s.find("class=\"baseline ", i + 1))
    ++outlined;
  CHECK(outlined == 2);
  CHECK(s.find("mean of 2 runs") != std::string::npos);
}

TEST_CASE("plot: a failed run leaves its seed out, an empty cell is grey", "[plot]") {
  const fs::path csv = write_results();
  std::string out;
  REQUIRE(plot(csv.string() + " --heatmap man,exp --where mode=low --out " + (dir() / "low.svg").string(),
               &out) == 0);
  const std::string s = read(dir() / "low.svg");
  // exp 3, man 2, mode low: only seed 1 (30 + 2 + 1 - 50 = -17) counts.
  CHECK(s.find(">-17.0<") != std::string::npos);
  CHECK(!fs::exists(dir() / "low.png"));  // --out names exactly what is written
}

TEST_CASE("plot notes an axis it averages over", "[plot]") {
  const fs::path csv = write_results();
  std::string out;
  REQUIRE(plot(csv.string() + " --heatmap man,exp --out " + (dir() / "pooled.svg").string(), &out) == 0);
  CHECK(out.find("axis 'mode' takes 2 values") != std::string::npos);
}

TEST_CASE("plot fails on a missing column, naming it and the columns there are", "[plot]") {
  const fs::path csv = write_results();
  std::string out;
  CHECK(plot(csv.string() + " --heatmap man,nosuch", &out) != 0);
  CHECK(out.find("no column 'nosuch'") != std::string::npos);
  CHECK(out.find("point, exp, man, mode, seed") != std::string::npos);
  CHECK(plot(csv.string() + " --heatmap man,exp --metric final_top5", &out) != 0);
  CHECK(out.find("no column 'final_top5'") != std::string::npos);
  CHECK(plot(csv.string() + " --heatmap man,exp --where flavour=x", &out) != 0);
  CHECK(out.find("no column 'flavour'") != std::string::npos);
}

TEST_CASE("plot --line and --curves, baseline from summary.json", "[plot]") {
  const fs::path csv = write_results();
  {
    std::ofstream s(dir() / "fp32" / "summary.json");
    s << R"({"name":"fp32","epochs":3,"steps":3,"seconds":1,"final":{"test":{"loss":0.5,"acc":0.815,"count":10}},)"
         R"("best":{"test":{"acc":0.82,"epoch":2}},"checkpoint":"x"})";
    std::ofstream m(dir() / "run_a" / "metrics.csv");
    m << "epoch,step,train_loss,train_acc,val_loss,val_acc,test_loss,test_acc,lr,time_s,samples_per_s\n"
         "1,1,2.0,0.1,2.0,0.2,2.0,0.25,0.01,0.1,100\n2,2,1.5,0.4,1.6,0.5,1.6,0.55,0.01,0.1,100\n"
         "3,3,1.0,0.7,1.1,0.75,1.1,0.8,0.01,0.1,100\n";
  }
  std::string out;
  REQUIRE(plot(csv.string() + " --line man --group exp --where mode=fp32acc --baseline-from " +
                   (dir() / "fp32").string(),
               &out) == 0);
  INFO(out);
  CHECK(fs::exists(dir() / "results_line_man_by_exp_mode_fp32acc.svg"));
  CHECK(fs::exists(dir() / "results_line_man_by_exp_mode_fp32acc.png"));
  const std::string s = read(dir() / "results_line_man_by_exp_mode_fp32acc.svg");
  CHECK(s.find(">exp=3<") != std::string::npos);
  CHECK(s.find(">exp=10<") != std::string::npos);
  CHECK(s.find(">baseline fp32 81.5<") != std::string::npos);  // final.test.acc 0.815 in percent

  REQUIRE(plot((dir() / "run_a" / "metrics.csv").string() + " --curves", &out) == 0);
  CHECK(fs::exists(dir() / "run_a" / "curves_test_acc.svg"));
  CHECK(fs::exists(dir() / "run_a" / "curves_test_acc.png"));
  CHECK(read(dir() / "run_a" / "curves_test_acc.svg").find(">test_acc (%)<") != std::string::npos);
  CHECK(plot((dir() / "run_a" / "metrics.csv").string() + " --curves --metric top5", &out) != 0);
  CHECK(out.find("no column 'top5'") != std::string::npos);
}

TEST_CASE("plot orders text ticks naturally: e3m2 < e5m2 < e10m2", "[plot]") {
  const fs::path csv = dir() / "formats.csv";
  {
    std::ofstream out(csv);
    out << "point,format,seed,status,diverged,final_train_loss,final_val_acc,final_test_acc,best_val_acc,"
           "best_test_acc,wall_s,steps,run_dir\n"
           "0,e10m2,1,ok,no,1,1,70,1,1,1,1,r0\n1,e3m2,1,ok,no,1,1,30,1,1,1,1,r1\n2,e5m2,1,ok,no,1,1,50,1,1,1,"
           "1,r2\n";
  }
  std::string out;
  REQUIRE(plot(csv.string() + " --line format --out " + (dir() / "formats.svg").string(), &out) == 0);
  const std::string s = read(dir() / "formats.svg");
  const size_t a = s.find(">e3m2<"), b = s.find(">e5m2<"), c = s.find(">e10m2<");
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  REQUIRE(c != std::string::npos);
  CHECK(a < b);
  CHECK(b < c);
}

TEST_CASE("plot --pareto: accuracy against energy, the front listed and labelled", "[plot]") {
  // Five formats with made-up costs and accuracies; b and d are dominated
  // (a costs less than b and is as good; c costs less than d and is better), two
  // seeds of e average to 85.
  const fs::path p = dir() / "pareto.csv";
  std::ofstream(p) << "point,format,seed,status,final_test_acc,energy_step_pj\n"
                      "f=a_seed=0,a,0,ok,80,100\n"
                      "f=b_seed=0,b,0,ok,80,200\n"
                      "f=c_seed=0,c,0,ok,82,300\n"
                      "f=d_seed=0,d,0,ok,81,400\n"
                      "f=e_seed=0,e,0,ok,84,500\n"
                      "f=e_seed=1,e,1,ok,86,500\n";
  std::string out;
  REQUIRE(plot(p.string() + " --pareto energy --out " + (dir() / "pareto.svg").string(), &out) == 0);
  INFO(out);
  CHECK(out.find("Pareto front (energy_step_pj lowest for its final_test_acc):\n") != std::string::npos);
  // The front, by ascending energy: a, c, e (b and d dominated).
  const size_t a = out.find("  a "), c = out.find("  c "), e = out.find("  e ");
  CHECK(a != std::string::npos);
  CHECK(c != std::string::npos);
  CHECK(e != std::string::npos);
  CHECK(a < c);
  CHECK(c < e);
  CHECK(out.find("  b ") == std::string::npos);
  CHECK(out.find("  d ") == std::string::npos);
  CHECK(out.find("  e                                   500         85\n") !=
        std::string::npos);  // the mean of 84 and 86
  const std::string svg = read(dir() / "pareto.svg");
  // Every point is labelled once: the dominated ones by the runs, the front's by the front.
  for (const char* label : {">a<", ">b<", ">c<", ">d<", ">e<"}) CHECK(svg.find(label) != std::string::npos);
  CHECK(svg.find("Pareto front") != std::string::npos);
}
