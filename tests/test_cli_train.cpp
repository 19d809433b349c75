// The `emutrain` binary (path in $EMUTRAIN_BIN): one-line errors for a typo in
// a recipe key, an unknown format, a missing data file and a corrupt
// checkpoint; a run killed with SIGKILL and resumed ends with the same bits as
// one never stopped; info and eval.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli_run.h"
#include "test_trainer_data.h"
#include "train/safetensors.h"

using namespace emu;
namespace fs = std::filesystem;

namespace {

using emu::testing::slurp;
using Result = emu::testing::CliResult;
pid_t spawn(const std::vector<std::string>& args, const std::string& dir) {
  return emu::testing::spawn_cli(args, dir);
}
Result run_cli(const std::vector<std::string>& args, const std::string& dir) {
  return emu::testing::run_cli(args, dir);
}

// The error line of a failed command: exit code 2, exactly one line on stderr.
std::string one_line_error(const Result& r, int code = 2) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.code == code);
  REQUIRE(!r.err.empty());
  CHECK(r.err.back() == '\n');
  CHECK(r.err.find('\n') == r.err.size() - 1);
  CHECK(r.err.rfind("emutrain: ", 0) == 0);
  return r.err;
}

void write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

std::string recipe(const std::string& root, const std::string& extra = "") {
  return "model: {type: mlp, hidden: [256]}\n"
         "data: {type: mnist, root: " +
         root +
         ", train_source: t10k, train_range: [0, 960], test_range: [960, 1024], "
         "batch_size: 32, workers: 1}\n"
         "optimizer: {type: sgd, lr: 0.05, momentum: 0.9}\n"
         "schedule: {type: cosine}\n"
         "epochs: 3\nseed: 9\n"
         "checkpoint: {every_steps: 4, every_epochs: 0, keep: 0}\n"
         "logging: {every_steps: 10}\n" +
         extra;
}

}  // namespace

TEST_CASE("emutrain train: recipe, format, data and checkpoint problems are one-line errors", "[cli]") {
  test::TempDir dir;
  test::write_mnist_idx(dir.str() + "/mnist", 1024);
  const std::string r = dir.str() + "/r.yaml";

  SECTION("a typo in a key") {
    write(r, recipe(dir.str() + "/mnist") + "optimiser: {type: adam}\n");
    std::string e = one_line_error(run_cli({"train", r, "--out", dir.str() + "/run"}, dir.str()));
    CHECK_THAT(e, Catch::Contains("recipe " + r +
                                  ": unknown key 'optimiser' for a recipe (allowed: name, model, data, "
                                  "optimizer,"));
    write(r, recipe(dir.str() + "/mnist"));
    e = one_line_error(run_cli({"train", r, "--set", "optimizer.momentun=0.5"}, dir.str()));
    CHECK_THAT(e,
               Catch::Contains(
                   "unknown key 'optimizer.momentun' for optimizer type sgd (allowed: type, lr, momentum"));
    CHECK_FALSE(fs::exists(dir.str() + "/run"));
  }
  SECTION("an unknown format") {
    write(r, recipe(dir.str() + "/mnist"));
    std::string e = one_line_error(run_cli({"train", r, "--set", "numerics.default.format=fp7"}, dir.str()));
    CHECK_THAT(e, Catch::Contains("numerics.default.format: 'fp7' is not usable: bad format 'fp7'"));
    e = one_line_error(
        run_cli({"train", r, "--set", "numerics.overrides=[{match: fc1, acc: e5m99}]"}, dir.str()));
    CHECK_THAT(e, Catch::Contains("numerics.overrides['fc1'].acc: 'e5m99'"));
  }
  SECTION("an override that matches no module") {
    write(r, recipe(dir.str() + "/mnist"));
    std::string e =
        one_line_error(run_cli({"train", r, "--set", "numerics.overrides=[{match: 'fc9', format: bf16}]",
                                "--out", dir.str() + "/run"},
                               dir.str()));
    CHECK_THAT(e,
               Catch::Contains(
                   "numerics.overrides[0].match: 'fc9' matches no module of the model (modules: loss, fc0"));
  }
  SECTION("a missing data file") {
    fs::create_directories(dir.str() + "/empty");
    write(r, recipe(dir.str() + "/empty"));
    std::string e = one_line_error(run_cli({"train", r, "--out", dir.str() + "/run"}, dir.str()));
    CHECK_THAT(e, Catch::Contains(dir.str() + "/empty/t10k-images-idx3-ubyte"));
    CHECK_THAT(e, Catch::Contains("not found"));
    CHECK_FALSE(fs::exists(dir.str() + "/run"));  // nothing created for a run that could not start
  }
  SECTION("a corrupt checkpoint") {
    write(r, recipe(dir.str() + "/mnist"));
    const std::string bad = dir.str() + "/bad.safetensors";
    std::string bytes(4096, '\0');
    bytes[0] = static_cast<char>(0x15), bytes[1] = static_cast<char>(0xcd),
    bytes[2] = static_cast<char>(0x5b),
    bytes[3] = static_cast<char>(0x07);  // 123456789, little-endian
    write(bad, bytes);
    std::string e = one_line_error(run_cli({"eval", r, "--checkpoint", bad}, dir.str()));
    CHECK_THAT(
        e, Catch::Contains("corrupt checkpoint " + bad + ": header length 123456789 exceeds file size 4096"));
    e = one_line_error(run_cli({"train", r, "--resume", bad}, dir.str()));
    CHECK_THAT(
        e, Catch::Contains("corrupt checkpoint " + bad + ": header length 123456789 exceeds file size 4096"));
  }
  SECTION("an unknown model and a missing recipe") {
    write(r, recipe(dir.str() + "/mnist"));
    std::string e = one_line_error(run_cli({"train", r, "--set", "model.type=lenet7"}, dir.str()));
    CHECK_THAT(e, Catch::Contains("model.type: unknown model 'lenet7' (allowed: "));
    CHECK_THAT(e, Catch::Contains("lenet5"));
    e = one_line_error(run_cli({"train", dir.str() + "/nope.yaml"}, dir.str()));
    CHECK_THAT(e, Catch::Contains("recipe " + dir.str() + "/nope.yaml: cannot open the file"));
  }
  SECTION("device: cuda without a GPU") {
    write(r, recipe(dir.str() + "/mnist"));
    // No GPU is visible to the child (a build without nvcc has none either): the error is one
    // recipe line naming the key and the alternative that runs the CUDA kernels on the CPU.
    const char* saved = std::getenv("CUDA_VISIBLE_DEVICES");
    const std::string restore = saved ? saved : "";
    setenv("CUDA_VISIBLE_DEVICES", "", 1);
    std::string e =
        one_line_error(run_cli({"train", r, "--set", "device=cuda", "--out", dir.str() + "/run"}, dir.str()));
    if (saved)
      setenv("CUDA_VISIBLE_DEVICES", restore.c_str(), 1);
    else
      unsetenv("CUDA_VISIBLE_DEVICES");
    CHECK_THAT(e, Catch::Contains("device: cuda: "));
    CHECK_THAT(e, Catch::Contains("cuda-host"));
    CHECK_FALSE(fs::exists(dir.str() + "/run"));
  }
  SECTION("a loss that becomes NaN exits with code 3") {
    write(r, recipe(dir.str() + "/mnist"));
    Result res = run_cli({"train", r, "--out", dir.str() + "/run", "--set", "data.mean=[0]", "--set",
                          "data.std=[0.01]", "--set", "optimizer.lr=1e38"},
                         dir.str());
    std::string e = one_line_error(res, 3);
    CHECK_THAT(e, Catch::Contains("loss became NaN at step 2 (epoch 1, batch 2): parameter 'fc"));
    CHECK_THAT(e, Catch::Contains(".weight' is non-finite (written by the previous update)"));
  }
}

TEST_CASE("emutrain train killed with SIGKILL resumes to the same bits", "[cli][resume]") {
  test::TempDir dir;
  test::write_mnist_idx(dir.str() + "/mnist", 1024);
  const std::string r = dir.str() + "/r.yaml";
  write(r, recipe(dir.str() + "/mnist"));
  const std::string a = dir.str() + "/a", b = dir.str() + "/b";

  Result full = run_cli({"train", r, "--out", a}, dir.str());
  INFO(full.err);
  REQUIRE(full.code == 0);
  CHECK_THAT(full.out, Catch::Contains("epoch 3/3 (step 90)"));

  // Kill once a checkpoint exists (every 4 steps; 30 steps per epoch, so
  // most likely mid-epoch), wherever the run is then, a checkpoint write included.
  pid_t pid = spawn({"train", r, "--out", b}, dir.str());
  bool killed = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    bool ready = false;
    for (const auto& e : fs::directory_iterator(b + "/checkpoints", ec)) {
      const std::string n = e.path().filename().string();
      if (n.rfind("step-", 0) == 0 && e.path().extension() == ".safetensors" && std::atoi(n.c_str() + 5) >= 4)
        ready = true;
    }
    if (ready) {
      kill(pid, SIGKILL);
      killed = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(killed);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE_FALSE(fs::exists(b + "/final.safetensors"));  // it really was stopped before the end

  Result resumed = run_cli({"train", "--resume", b}, dir.str());  // the recipe stored in the checkpoint
  INFO(resumed.out << resumed.err);
  REQUIRE(resumed.code == 0);
  CHECK_THAT(resumed.out, Catch::Contains("resumed from " + b + "/checkpoints/step-"));

  train::TensorFile fa = train::read_safetensors(a + "/final.safetensors");
  train::TensorFile fb = train::read_safetensors(b + "/final.safetensors");
  REQUIRE(fa.tensors.size() == fb.tensors.size());
  for (const auto& [name, t] : fa.tensors) {
    INFO(name);
    REQUIRE(fb.tensors.count(name));
    const Tensor& u = fb.tensors.at(name);
    REQUIRE(u.shape() == t.shape());
    CHECK(std::memcmp(t.data(), u.data(), static_cast<size_t>(t.numel()) * sizeof(float)) == 0);
  }
  CHECK(fa.metadata.at("step") == "90");
  CHECK(fb.metadata.at("step") == "90");

  // eval of both final checkpoints prints the same test figures.
  Result ea = run_cli({"eval", r, "--checkpoint", a}, dir.str());
  Result eb = run_cli({"eval", "--checkpoint", b + "/final.safetensors"}, dir.str());
  REQUIRE(ea.code == 0);
  REQUIRE(eb.code == 0);
  CHECK_THAT(ea.out, Catch::StartsWith("test: loss "));
  CHECK(ea.out == eb.out);
}

TEST_CASE("emutrain info lists devices, formats and recipe types", "[cli]") {
  test::TempDir dir;
  Result r = run_cli({"info"}, dir.str());
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("CUDA backend:"));
  CHECK_THAT(r.out, Catch::Contains("hardware threads"));
  CHECK_THAT(r.out, Catch::Contains("fp8_e4m3"));
  CHECK_THAT(r.out, Catch::Contains("model.type:     "));
  CHECK_THAT(r.out, Catch::Contains("lenet5"));
  CHECK_THAT(r.out, Catch::Contains("resnet18"));
  CHECK_THAT(r.out, Catch::Contains("data.type:      cifar10"));
}
