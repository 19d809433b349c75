#include "models/registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

// Every model file, by its EMU_MODEL id. emutrain_train is a static library:
// the linker only takes the object files something refers to, so this list
// refers to each model's anchor and with it pulls in its registration.
#define EMU_MODEL_LINKS(X) \
  X(crnn)                  \
  X(gcn)                   \
  X(lenet5)                \
  X(mlp)                   \
  X(resnet18)              \
  X(transformer)

#define EMU_MODEL_DECLARE_LINK(id) extern "C" void emu_model_link_##id();
EMU_MODEL_LINKS(EMU_MODEL_DECLARE_LINK)
#undef EMU_MODEL_DECLARE_LINK

namespace emu::models {
namespace {

std::map<std::string, ModelEntry>& registry() {
  static std::map<std::string, ModelEntry> r;
  return r;
}

void link_models() {
#define EMU_MODEL_CALL_LINK(id) emu_model_link_##id();
  EMU_MODEL_LINKS(EMU_MODEL_CALL_LINK)
#undef EMU_MODEL_CALL_LINK
}

}  // namespace

ModelRegistrar::ModelRegistrar(ModelEntry entry) {
  auto& r = registry();
  const std::string name = entry.name;
  if (r.count(name)) throw std::logic_error("model '" + name + "' registered twice");
  r.emplace(name, std::move(entry));
}

std::vector<ModelEntry> model_entries() {
  link_models();
  std::vector<ModelEntry> out;
  for (const auto& [_, e] : registry()) out.push_back(e);
  return out;
}

std::vector<std::string> model_types() {
  link_models();
  std::vector<std::string> out;
  for (const auto& [name, _] : registry()) out.push_back(name);
  return out;
}

const ModelEntry& find_model(const std::string& type) {
  link_models();
  auto it = registry().find(type);
  if (it == registry().end())
    throw config::RecipeError(
        fmt::format("model.type: unknown model '{}' (allowed: {})", type, config::join_names(model_types())));
  return it->second;
}

void check_model_section(YAML::Node section, const std::string& where) {
  if (!section.IsMap())
    throw config::RecipeError(fmt::format("{}: expected a mapping with a 'type' key", where));
  YAML::Node type = section["type"];
  if (!type || !type.IsScalar())
    throw config::RecipeError(
        fmt::format("{}.type: missing (allowed: {})", where, config::join_names(model_types())));
  const ModelEntry& e = find_model(type.Scalar());
  config::check_section(section, e.args, where, "model type " + e.name);
}

std::shared_ptr<Model> make_model(const YAML::Node& section, const DataMeta& meta, const std::string& where) {
  YAML::Node copy = YAML::Clone(section);
  check_model_section(copy, where);
  const ModelEntry& e = find_model(copy["type"].Scalar());
  return e.factory(config::Args(copy, where), meta);
}

}  // namespace emu::models
