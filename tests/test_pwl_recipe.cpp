// The pwl policy keys in recipes: recipes/crnn_fra_eng_pwl3.yaml resolves to
// tanh and sigmoid pwl:3 in its LSTMs; a YAML list of breakpoints is the same as
// "pwl:<b0>,<b1>,..."; a bad breakpoint is reported with the recipe's key path.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "train/recipe.h"

using namespace emu;
using namespace emu::train;

TEST_CASE("crnn_fra_eng_pwl3.yaml sets tanh and sigmoid pwl:3", "[pwl]") {
  const Recipe r = load_recipe(
      (std::filesystem::path(EMUTRAIN_SOURCE_DIR) / "recipes" / "crnn_fra_eng_pwl3.yaml").string());
  const LayerNumerics n = numerics_policy(r.section("numerics")).resolve("encoder");
  CHECK(n.function(Function::Tanh).pwl());
  CHECK(n.function(Function::Tanh).pieces == 3);
  CHECK(n.function(Function::Sigmoid).pieces == 3);
  CHECK(n.function(Function::Sigmoid).breaks[0] == -6.0f);
  CHECK_FALSE(n.function(Function::SoftmaxExp).pwl());
}

TEST_CASE("a YAML list of breakpoints is pwl:<b0>,<b1>,...", "[pwl]") {
  YAML::Node numerics = YAML::Load("default: {functions: {tanh: [-3, -1, 0, 1, 3.5], sigmoid: 'pwl:4'}}");
  const LayerNumerics n = numerics_policy(numerics).resolve("x");
  const FunctionApprox& t = n.function(Function::Tanh);
  REQUIRE(t.pieces == 4);
  CHECK(t.breaks[0] == -3.0f);
  CHECK(t.breaks[4] == 3.5f);
  CHECK(n.function(Function::Sigmoid).pieces == 4);
  try {
    numerics_policy(YAML::Load("default: {functions: {tanh: [-3, x, 3]}}"));
    FAIL("no error");
  } catch (const std::exception& e) {
    const std::string m = e.what();
    INFO(m);
    CHECK(m.find("functions.tanh") != std::string::npos);
    CHECK(m.find("'x'") != std::string::npos);
  }
}
