// The config module (config/): one set of strict scalar readers behind the
// schema checker, Args and the data section's ConfigSection:
//  - read_int / read_number / read_float / read_bool accept a whole value only
//    (expected values written out here by hand), reject overflow and non-finite
//    numbers, and read_float rounds the decimal once to binary32 (a text chosen
//    so that rounding through a double first gives a different float);
//  - parse_* and ConfigSection word their errors as the recipe and data docs
//    show, with the key path;
//  - check_section fills defaults and Args reads them back; join_names, key_path.
#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "config/args.h"
#include "config/schema.h"
#include "config/section.h"

using namespace emu;
using config::ConfigSection;
using config::RecipeError;

namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

}  // namespace

TEST_CASE("scalar readers take a whole value or nothing", "[config]") {
  CHECK(config::read_int("42") == 42);
  CHECK(config::read_int("-7") == -7);
  CHECK(config::read_int("9223372036854775807") == std::numeric_limits<int64_t>::max());
  CHECK_FALSE(config::read_int("9223372036854775808"));  // 2^63 overflows int64
  CHECK_FALSE(config::read_int("3x"));
  CHECK_FALSE(config::read_int("1.5"));
  CHECK_FALSE(config::read_int(""));

  CHECK(config::read_number("0.25") == 0.25);
  CHECK(config::read_number("-1e-3") == -0.001);
  CHECK_FALSE(config::read_number("1e400"));  // overflows binary64
  CHECK_FALSE(config::read_number("inf"));
  CHECK_FALSE(config::read_number("nan"));
  CHECK_FALSE(config::read_number("0.1.2"));
  CHECK_FALSE(config::read_number(""));

  // 1.000000059604644776 = 1 + 2^-24 + ~6e-19: just above the midpoint between
  // the binary32 neighbours 1 and 1 + 2^-23, so one rounding gives 1 + 2^-23
  // (0x3f800001). Through a double it would first land on 1 + 2^-24 exactly
  // (6e-19 is below half a binary64 ulp, 2^-53), a tie that goes to even: 1.0.
  REQUIRE(config::read_float("1.000000059604644776"));
  CHECK(bits(*config::read_float("1.000000059604644776")) == 0x3f800001u);
  CHECK(bits(*config::read_float("0.1")) == 0x3dcccccdu);
  CHECK_FALSE(config::read_float("1e39"));  // above binary32's max finite 3.4e38
  CHECK_FALSE(config::read_float("2x"));

  for (const char* t : {"true", "True", "TRUE", "on", "On", "ON", "yes", "Yes", "YES"})
    CHECK(config::read_bool(t) == true);
  for (const char* f : {"false", "False", "FALSE", "off", "Off", "OFF", "no", "No", "NO"})
    CHECK(config::read_bool(f) == false);
  CHECK_FALSE(config::read_bool("maybe"));
  CHECK_FALSE(config::read_bool("1"));
}

TEST_CASE("parse_* name the key path in a RecipeError", "[config]") {
  CHECK(config::parse_int("12", "x") == 12);
  CHECK_THROWS_MATCHES(config::parse_int("3x", "model.hidden[0]"), RecipeError,
                       Catch::Message("model.hidden[0]: '3x' is not an integer"));
  CHECK_THROWS_MATCHES(config::parse_number("fast", "optimizer.lr"), RecipeError,
                       Catch::Message("optimizer.lr: 'fast' is not a finite number"));
  CHECK_THROWS_MATCHES(config::parse_bool("maybe", "model.bias"), RecipeError,
                       Catch::Message("model.bias: 'maybe' is not true or false"));
}

TEST_CASE("names and key paths", "[config]") {
  CHECK(config::join_names({"a", "b", "c"}) == "a, b, c");
  CHECK(config::join_names({}) == "none");
  CHECK(config::key_path("optimizer", "lr") == "optimizer.lr");
  CHECK(config::key_path("", "epochs") == "epochs");
}

TEST_CASE("ConfigSection reads with the same readers and its own wording", "[config]") {
  YAML::Node n = YAML::Load(
      "{pad: x, big: 99999999999999999999, hflip: YES, frac: inf, mean: [0.5, 2x], ints: [1, 2], "
      "sub: {k: 3}}");
  ConfigSection c(n, "data");
  CHECK_THROWS_MATCHES(c.get_int("pad", 0), std::invalid_argument,
                       Catch::Message("data.pad: expected an integer, got 'x'"));
  CHECK_THROWS_MATCHES(c.get_int("big", 0), std::invalid_argument,
                       Catch::Message("data.big: expected an integer, got '99999999999999999999'"));
  CHECK(c.get_bool("hflip", false) == true);
  CHECK_THROWS_MATCHES(c.get_double("frac", 0), std::invalid_argument,
                       Catch::Message("data.frac: expected a number, got 'inf'"));
  CHECK_THROWS_MATCHES(c.get_float_list("mean"), std::invalid_argument,
                       Catch::Message("data.mean: expected a list of numbers, got element '2x'"));
  CHECK(c.get_int_list("ints") == std::vector<int64_t>{1, 2});
  CHECK(c.get_int("absent", 5) == 5);
  CHECK(c.section("sub").get_int("k", 0) == 3);
  CHECK(c.section("sub").key_path("k") == "data.sub.k");
  CHECK_THROWS_MATCHES(c.check_keys({"pad", "big"}), std::invalid_argument,
                       Catch::Message("data.hflip: unknown key (allowed: pad, big)"));
  CHECK_THROWS_MATCHES(c.get_choice("pad", "", {"a", "b"}), std::invalid_argument,
                       Catch::Message("data.pad: unknown value 'x' (allowed: a, b)"));
}

TEST_CASE("check_section fills defaults that Args reads back", "[config]") {
  const std::vector<config::KeySpec> keys = {config::number_key("lr", "0.1", "learning rate", 0),
                                             config::bool_key("nesterov", "false", "Nesterov momentum"),
                                             config::int_list_key("hidden", "[64, 32]", "widths", 1)};
  YAML::Node s = YAML::Load("{type: sgd, nesterov: On}");
  config::check_section(s, keys, "optimizer", "optimizer type sgd");
  config::Args a(s, "optimizer");
  CHECK(a.number("lr") == 0.1);
  CHECK(a.flag("nesterov") == true);
  CHECK(a.integers("hidden") == std::vector<int64_t>{64, 32});

  YAML::Node bad = YAML::Load("{lr: fast}");
  CHECK_THROWS_MATCHES(config::check_section(bad, keys, "optimizer", "optimizer type sgd"), RecipeError,
                       Catch::Message("optimizer.lr: 'fast' is not a finite number"));
  YAML::Node typo = YAML::Load("{lr_rate: 1}");
  CHECK_THROWS_MATCHES(
      config::check_section(typo, keys, "optimizer", "optimizer type sgd"), RecipeError,
      Catch::Message("unknown key 'optimizer.lr_rate' for optimizer type sgd (allowed: type, lr, "
                     "nesterov, hidden)"));
  YAML::Node low = YAML::Load("{hidden: [0]}");
  CHECK_THROWS_MATCHES(
      config::check_section(low, keys, "optimizer", "optimizer type sgd"), RecipeError,
      Catch::Message("optimizer.hidden[0]: 0 is out of range (want a list of integers >= 1)"));
}
