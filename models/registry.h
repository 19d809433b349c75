// The model registry: recipes name a model by `model.type`; each model file
// registers its name, its arguments (checked like every recipe key: unknown
// keys and bad values are errors naming the key path) and its factory:
//
//   // models/lenet5.cpp
//   std::shared_ptr<Model> make_lenet5(const config::Args& args, const DataMeta& meta) { ... }
//   EMU_MODEL(lenet5, "LeNet-5 for 28x28 images", make_lenet5,
//             config::choice_key("pool", "max", {"max", "avg"}, "..."));
//
// Adding a model is one new file in models/ plus its name in the EMU_MODEL_LINK
// list of models/registry.cpp (a static library drops object files nothing
// refers to; the list refers to each one so its registration runs).
#pragma once

#include <yaml-cpp/yaml.h>

#include <memory>
#include <string>
#include <vector>

#include "config/args.h"
#include "config/schema.h"
#include "models/model.h"

namespace emu::models {

using ModelFactory = std::shared_ptr<Model> (*)(const config::Args& args, const DataMeta& meta);

struct ModelEntry {
  std::string name;
  std::string description;
  std::vector<config::KeySpec> args;  // the keys of the model section besides `type`
  ModelFactory factory;
};

struct ModelRegistrar {
  explicit ModelRegistrar(ModelEntry entry);
};

// Registered models, sorted by name.
std::vector<ModelEntry> model_entries();
std::vector<std::string> model_types();
// The entry of `type`; throws RecipeError "model.type: unknown model 'x' (allowed: ...)".
const ModelEntry& find_model(const std::string& type);

// Checks the model section (type and arguments) at `where` and fills in defaults.
void check_model_section(YAML::Node section, const std::string& where = "model");
// Builds the model of a checked section for a dataset of sizes `meta`.
std::shared_ptr<Model> make_model(const YAML::Node& section, const DataMeta& meta,
                                  const std::string& where = "model");

}  // namespace emu::models

// EMU_MODEL(id, description, factory, arg specs...): registers model `id` (an
// identifier: the recipe's model.type) with the keys its section may hold, and
// defines the link anchor that models/registry.cpp refers to.
#define EMU_MODEL(id, description, factory, ...)                                                 \
  extern "C" void emu_model_link_##id() {}                                                       \
  static const ::emu::models::ModelRegistrar emu_model_registrar_##id(::emu::models::ModelEntry{ \
      #id, description, std::vector<::emu::config::KeySpec>{__VA_ARGS__}, factory})
