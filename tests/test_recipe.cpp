// Recipes: schema checks (unknown keys and types name the key path and the
// allowed names, in one line), defaults, --set overrides, the numerics section,
// and the small JSON reader behind checkpoints and metrics.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "models/registry.h"
#include "train/json.h"
#include "train/recipe.h"
#include "train/trainer.h"

using namespace emu;
using namespace emu::train;

namespace {

const char* kBase = R"(
model:
  type: mlp
  hidden: [16]
data:
  type: mnist
  root: /nowhere
  batch_size: 8
optimizer:
  type: sgd
  lr: 0.1
epochs: 2
)";

std::string error_of(const std::string& text, const std::vector<std::string>& sets = {}) {
  try {
    parse_recipe(text, "r.yaml", sets);
  } catch (const config::RecipeError& e) {
    std::string msg = e.what();
    CHECK(msg.find('\n') == std::string::npos);   // one line
    CHECK(msg.rfind("recipe r.yaml: ", 0) == 0);  // names the file
    return msg;
  }
  FAIL("no error for the recipe");
  return "";
}

}  // namespace

TEST_CASE("a valid recipe resolves with every default filled in", "[recipe]") {
  Recipe r = parse_recipe(kBase, "r.yaml", {}, "base");
  const YAML::Node& root = r.root;
  CHECK(r.name() == "base");
  CHECK(root["seed"].Scalar() == "0");
  CHECK(root["device"].Scalar() == "cpu");
  CHECK(root["optimizer"]["momentum"].Scalar() == "0");
  CHECK(root["optimizer"]["update_format"].Scalar() == "fp32");
  CHECK(root["schedule"]["type"].Scalar() == "none");
  CHECK(root["data"]["eval_batch_size"].Scalar() == "8");  // defaults to batch_size
  CHECK(root["data"]["shuffle"].Scalar() == "true");
  CHECK(root["model"]["activation"].Scalar() == "relu");  // the model's registered default
  CHECK(root["checkpoint"]["every_epochs"].Scalar() == "1");
  CHECK(root["numerics"]["default"]["format"].Scalar() == "fp32");
  // The resolved YAML parses back to the same recipe.
  Recipe again = parse_recipe(r.to_yaml(), "again.yaml");
  CHECK(again.to_yaml() == r.to_yaml());
}

TEST_CASE("typos in keys are errors naming the key path and the allowed keys", "[recipe]") {
  std::string text = kBase;
  std::string e = error_of(text + "optimiser:\n  type: sgd\n");
  CHECK(e.find("unknown key 'optimiser'") != std::string::npos);
  CHECK(e.find("optimizer") != std::string::npos);  // among the allowed names

  e = error_of(kBase, {"optimizer.lr_rate=0.1"});
  CHECK(e.find("unknown key 'optimizer.lr_rate' for optimizer type sgd") != std::string::npos);
  CHECK(e.find("momentum") != std::string::npos);

  e = error_of(kBase, {"model.hiden=[3]"});
  CHECK(e.find("unknown key 'model.hiden' for model type mlp") != std::string::npos);
  CHECK(e.find("hidden") != std::string::npos);

  e = error_of(kBase, {"data.batchsize=3"});
  CHECK(e.find("unknown key 'data.batchsize' for data type mnist") != std::string::npos);
  CHECK(e.find("batch_size") != std::string::npos);

  e = error_of(kBase, {"checkpoint.every=3"});
  CHECK(e.find("unknown key 'checkpoint.every'") != std::string::npos);
}

TEST_CASE("unknown types, bad values and missing sections are one-line errors", "[recipe]") {
  std::string e = error_of(kBase, {"model.type=lenet6"});
  CHECK(e.find("model.type: unknown model 'lenet6'") != std::string::npos);
  CHECK(e.find("lenet5") != std::string::npos);
  CHECK(e.find("resnet18") != std::string::npos);

  e = error_of(kBase, {"optimizer.type=adagrad"});
  CHECK(e.find("optimizer.type: unknown type 'adagrad' (allowed: sgd, adam, adamw)") != std::string::npos);

  e = error_of(kBase, {"data.type=imagenet"});
  CHECK(e.find("data.type: unknown dataset type 'imagenet'") != std::string::npos);
  CHECK(e.find("cifar10") != std::string::npos);

  e = error_of(kBase, {"schedule.type=linear"});
  CHECK(e.find("schedule.type: unknown type 'linear'") != std::string::npos);

  e = error_of(kBase, {"optimizer.lr=fast"});
  CHECK(e.find("optimizer.lr: 'fast' is not a finite number") != std::string::npos);

  e = error_of(kBase, {"optimizer.momentum=1.5"});
  CHECK(e.find("optimizer.momentum: 1.5 is out of range") != std::string::npos);

  e = error_of(kBase, {"data.batch_size=0"});
  CHECK(e.find("data.batch_size: 0 is out of range") != std::string::npos);

  e = error_of(kBase, {"device=tpu"});
  CHECK(e.find("device: unknown value 'tpu' (allowed: cpu, cuda, cuda-host)") != std::string::npos);

  e = error_of(std::string(kBase) + "steps: 10\n");
  CHECK(e.find("give one of the two") != std::string::npos);
  // ... but --set steps=N replaces the file's epochs (and --set epochs=N its steps).
  Recipe by_steps = parse_recipe(kBase, "r.yaml", {"steps=10"});
  CHECK(by_steps.root["steps"].Scalar() == "10");
  CHECK_FALSE(by_steps.root["epochs"]);

  e = error_of("model: {type: mlp}\ndata: {type: mnist}\noptimizer: {type: sgd}\n");
  CHECK(e.find("epochs: missing") != std::string::npos);

  e = error_of("epochs: 1\ndata: {type: mnist}\noptimizer: {type: sgd}\n");
  CHECK(e.find("model: missing") != std::string::npos);

  e = error_of("model: [1, 2\n");
  CHECK(e.find("YAML syntax error at line") != std::string::npos);
}

TEST_CASE("unknown formats and numerics keys name the key path", "[recipe]") {
  std::string e = error_of(kBase, {"numerics.default.format=e9m99"});
  CHECK(e.find("numerics.default.format: 'e9m99'") != std::string::npos);

  e = error_of(kBase, {"numerics.default.acc=fp33"});
  CHECK(e.find("numerics.default.acc: 'fp33'") != std::string::npos);

  e = error_of(kBase, {"numerics.default.formt=e5m2"});
  CHECK(e.find("unknown key 'formt'") != std::string::npos);

  e = error_of(kBase, {"optimizer.update_format=bf17"});
  CHECK(e.find("optimizer.update_format: 'bf17'") != std::string::npos);

  e = error_of(kBase, {"numerics.overrides=[{format: e5m2}]"});
  CHECK(e.find("numerics.overrides[0]: expected a mapping with 'match: <glob>'") != std::string::npos);

  e = error_of(kBase, {"numerics.extra=1"});
  CHECK(e.find("unknown key 'numerics.extra'") != std::string::npos);
}

TEST_CASE("--set overrides apply after the file, as YAML values", "[recipe]") {
  Recipe r = parse_recipe(kBase, "r.yaml",
                          {"optimizer.lr=0.05", "model.hidden=[32, 8]", "numerics.default.format=e6m6",
                           "numerics.default.acc=fp32", "numerics.overrides=[{match: fc1, format: bf16}]",
                           "numerics.overrides.0.acc=fp32", "numerics.overrides.1={match: 'fc*', out: fp16}",
                           "name=tuned", "optimizer.lr=0.02"});
  CHECK(r.root["optimizer"]["lr"].Scalar() == "0.02");  // the later --set wins
  REQUIRE(r.root["model"]["hidden"].IsSequence());
  CHECK(r.root["model"]["hidden"][1].Scalar() == "8");
  CHECK(r.name() == "tuned");
  NumericsPolicy p = numerics_policy(r.root["numerics"]);
  LayerNumerics fc0 = p.resolve("fc0"), fc1 = p.resolve("fc1");
  CHECK(fc0.describe() == "weights=e6m6 activations=e6m6 grads=e6m6 mul=e6m6 acc=fp32 out=fp16");
  CHECK(fc1.describe() == "weights=bf16 activations=bf16 grads=bf16 mul=bf16 acc=fp32 out=fp16");

  // Paths through values or past the end of lists are errors, not silent creations.
  std::string e = error_of(kBase, {"optimizer.lr.x=1"});
  CHECK(e.find("'optimizer.lr' is a value") != std::string::npos);
  e = error_of(kBase, {"numerics.overrides=[]", "numerics.overrides.3.format=fp16"});
  CHECK(e.find("not an index") != std::string::npos);
  e = error_of(kBase, {"optimizer.lr"});
  CHECK(e.find("expected KEY=VALUE") != std::string::npos);
}

TEST_CASE("--set KEY=null removes a key, then the schema checks what remains", "[recipe]") {
  const std::string warm = std::string(kBase) + "schedule:\n  type: warmup_cosine\n  warmup_epochs: 1\n";
  // Switching the schedule type alone leaves warmup_epochs behind, which
  // cosine does not accept: the strict error stays...
  std::string e = error_of(warm, {"schedule.type=cosine"});
  CHECK(e.find("unknown key 'schedule.warmup_epochs'") != std::string::npos);
  // ... and removing it is the way out, in either order of the --sets.
  for (const auto& sets : {std::vector<std::string>{"schedule.type=cosine", "schedule.warmup_epochs=null"},
                           std::vector<std::string>{"schedule.warmup_epochs=~", "schedule.type=cosine"}}) {
    Recipe r = parse_recipe(warm, "r.yaml", sets);
    CHECK(r.root["schedule"]["type"].Scalar() == "cosine");
    CHECK(!r.root["schedule"]["warmup_epochs"]);
  }
  // A removed key takes its default again.
  Recipe r = parse_recipe(kBase, "r.yaml", {"data.batch_size=null"});
  CHECK((!r.root["data"]["batch_size"] || r.root["data"]["batch_size"].Scalar() != "8"));
  // Removing what the recipe needs is the schema's usual error.
  e = error_of(kBase, {"optimizer=null"});
  CHECK(e.find("optimizer") != std::string::npos);
  // A key that is not there is an error naming it, not a silent no-op.
  e = error_of(kBase, {"optimizer.momentun=null"});
  CHECK(e.find("no key 'optimizer.momentun' in the recipe to remove") != std::string::npos);
  e = error_of(kBase, {"nosuch.section.key=null"});
  CHECK(e.find("no key 'nosuch' in the recipe to remove") != std::string::npos);
  // Inside a list or a value there is no key to remove.
  e = error_of(kBase, {"model.hidden.0=null"});
  CHECK(e.find("'model.hidden' is not a section of mapped keys") != std::string::npos);
  e = error_of(kBase, {"optimizer.lr.x=null"});
  CHECK(e.find("'optimizer.lr' is not a section of mapped keys") != std::string::npos);
}

TEST_CASE("data.root expands ${VAR} and ${VAR:-default}", "[recipe]") {
  setenv("EMUTRAIN_TEST_ROOT", "/data/x", 1);
  unsetenv("EMUTRAIN_TEST_UNSET");
  CHECK(expand_env("${EMUTRAIN_TEST_ROOT}/mnist") == "/data/x/mnist");
  CHECK(expand_env("${EMUTRAIN_TEST_UNSET:-../shared/data}/mnist") == "../shared/data/mnist");
  CHECK_THROWS_WITH(expand_env("${EMUTRAIN_TEST_UNSET}/mnist"),
                    Catch::Contains("EMUTRAIN_TEST_UNSET is not set"));
  Recipe r = parse_recipe(kBase, "r.yaml", {"data.root=${EMUTRAIN_TEST_ROOT}/m"});
  CHECK(r.root["data"]["root"].Scalar() == "/data/x/m");
}

TEST_CASE("every registered model checks its arguments", "[recipe]") {
  for (const auto& e : models::model_entries()) {
    INFO(e.name);
    YAML::Node section = YAML::Load("{type: " + e.name + "}");
    models::check_model_section(section);
    for (const auto& k : e.args) CHECK(section[k.name]);  // defaults filled in
  }
}

TEST_CASE("the JSON reader is strict and exact", "[recipe][json]") {
  Json j = parse_json(
      R"( {"a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, "s": "x\"\u00e9\n"} )");
  REQUIRE(j.is_object());
  CHECK(j.find("a")->find("shape")->items[1].as_u64() == 3);
  CHECK(j.find("s")->text == "x\"\xc3\xa9\n");
  for (const char* bad :
       {"{", "{\"a\":1,}", "[1 2]", "{\"a\":1,\"a\":2}", "01", "\"\x01\"", "{} x", "nul", "[1,]"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_json(bad), JsonError);
  }
  CHECK_THROWS_AS(parse_json("-1").as_u64(), JsonError);
  CHECK_THROWS_AS(parse_json("1.5").as_u64(), JsonError);
  CHECK_THROWS_AS(parse_json("18446744073709551616").as_u64(), JsonError);
  CHECK(parse_json("18446744073709551615").as_u64() == UINT64_MAX);
  for (double v : {0.1, 1.0 / 3, 1e-300, 123456789.0, -2.5e17})
    CHECK(std::strtod(json_number(v).c_str(), nullptr) == v);
  CHECK(json_number(std::nan("")) == "null");
  CHECK(parse_json(json_quote(std::string("tab\there\x01"))).text == std::string("tab\there\x01"));
}

TEST_CASE("the shipped recipes are valid, their overrides select modules", "[recipe]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(EMUTRAIN_SOURCE_DIR) / "recipes";
  // Sizes of the datasets whose recipes are checked here down to the model.
  const std::map<std::string, models::DataMeta> metas = {
      {"mnist", {{"classes", 10}, {"channels", 1}, {"height", 28}, {"width", 28}}},
      {"cifar10", {{"classes", 10}, {"channels", 3}, {"height", 32}, {"width", 32}}},
  };
  int checked = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".yaml") continue;
    INFO(e.path().string());
    Recipe r = load_recipe(e.path().string());
    CHECK(r.name() == e.path().stem().string());  // names match files, so run dirs say which recipe
    auto meta = metas.find(r.root["data"]["type"].Scalar());
    if (meta != metas.end()) {
      auto model = models::make_model(r.root["model"], meta->second);
      check_overrides_match(r.root["numerics"], *model);
      ++checked;
    }
  }
  CHECK(checked >= 4);  // lenet5_mnist, its e6m6 variant, resnet18_cifar10, its e6m6 variant
}
