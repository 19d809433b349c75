// libFuzzer target: recipe YAML with --set overrides (train/recipe.h). The input
// is the recipe text, kFileSeparator, then one --set assignment per line.
// parse_recipe either returns a checked recipe or throws RecipeError with a
// one-line message; a returned recipe prints as YAML that parses again into a
// recipe with the same text (what `emutrain train` saves as recipe.yaml).
#include <string>
#include <vector>

#include "config/recipe_error.h"
#include "tests/fuzz/fuzz_support.h"
#include "train/recipe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace emu::fuzz;
  auto parts = split_files({reinterpret_cast<const char*>(data), size}, 2);
  std::vector<std::string> sets;
  for (std::string_view rest = parts[1]; !rest.empty();) {
    size_t nl = rest.find('\n');
    sets.emplace_back(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
  }
  emu::train::Recipe r;
  try {
    r = emu::train::parse_recipe(std::string(parts[0]), "<fuzz>", sets);
  } catch (const emu::config::RecipeError& e) {
    require_one_line(e);
    return 0;
  }
  const std::string yaml = r.to_yaml();
  try {
    const std::string again = emu::train::parse_recipe(yaml, "<fuzz>").to_yaml();
    if (again != yaml) fail("resolved recipe does not read back the same", yaml + "\n---\n" + again);
  } catch (const emu::config::RecipeError& e) {
    fail("resolved recipe does not parse", yaml + "\n---\n" + e.what());
  }
  return 0;
}
