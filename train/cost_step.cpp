#include "train/cost_step.h"

#include <fmt/format.h>

#include "backends/cpu/cpu_backend.h"
#include "config/args.h"
#include "config/recipe_error.h"
#include "core/autograd.h"
#include "data/loader.h"
#include "data/registry.h"
#include "models/registry.h"
#include "numerics/format_spec.h"
#include "optim/adam.h"
#include "optim/sgd.h"
#include "train/cost_backend.h"
#include "train/recipe_optimizer.h"

namespace emu::train {

namespace {

// Puts the counter in front of the CPU backend while it lives: every op of the
// model then runs through it.
class CounterInstalled {
 public:
  explicit CounterInstalled(CountingBackend& c) : previous_(backend_for(Device::Cpu)) {
    register_backend(Device::Cpu, &c);
  }
  ~CounterInstalled() { register_backend(Device::Cpu, &previous_); }
  CounterInstalled(const CounterInstalled&) = delete;
  CounterInstalled& operator=(const CounterInstalled&) = delete;

 private:
  Backend& previous_;
};

int64_t parameter_count(const Module& m) {
  int64_t n = 0;
  for (const Tensor& t : m.parameters()) n += t.numel();
  return n;
}

}  // namespace

StepCounts count_step(models::Model& model, const data::Batch& batch, Optimizer* optimizer) {
  StepCounts out;
  out.batch_examples = batch.size;
  RunContext& ctx = model.context();
  ctx.step = 0;
  {  // Warm-up: caches built at the first call are not part of a step.
    NoGradGuard no_grad;
    model.eval();
    model.predict(batch, "train");
  }
  {
    CountingBackend counter(cpu_backend(), model, out.inference);
    CounterInstalled installed(counter);
    counter.begin_step();
    counter.set_phase(Phase::Forward);
    NoGradGuard no_grad;
    model.predict(batch, "test");
  }
  {
    CountingBackend counter(cpu_backend(), model, out.step);
    CounterInstalled installed(counter);
    model.train();
    counter.begin_step();
    counter.set_phase(Phase::Forward);
    models::Prediction p = model.predict(batch, "train");
    Tensor loss = model.loss(p);
    counter.set_phase(Phase::Backward);
    if (optimizer)
      optimizer->zero_grad();
    else
      model.zero_grad();
    loss.backward();
    counter.set_phase(Phase::Update);
    if (optimizer) optimizer->step();
  }
  out.model = fmt::format("{} ({} parameters)", model.type_name(), parameter_count(model));
  return out;
}

StepCounts count_recipe(const Recipe& recipe) {
  const YAML::Node& root = recipe.root;
  const uint64_t seed = static_cast<uint64_t>(std::stoull(root["seed"].Scalar()));
  config::Args d(root["data"], "data");
  std::unique_ptr<data::Dataset> train_set = data::make_dataset(root["data"], "train");
  data::DataLoader loader(*train_set, d.integer("batch_size"), d.flag("shuffle"), d.flag("drop_last"), seed,
                          0);
  loader.start_epoch(0);
  data::Batch batch;
  if (!loader.next(batch))
    throw config::RecipeError(fmt::format("recipe {}: data: the training set gives no batch of batch_size {}",
                                          recipe.source, d.integer("batch_size")));
  std::shared_ptr<models::Model> model = models::make_model(root["model"], train_set->meta());
  model->initialize(seed);
  model->apply_numerics(numerics_policy(root["numerics"]));
  std::unique_ptr<Optimizer> optimizer = make_optimizer(root["optimizer"], model->named_parameters());
  StepCounts c = count_step(*model, batch, optimizer.get());
  c.model = root["model"]["type"].Scalar() + " " + c.model.substr(c.model.find('('));
  return c;
}

}  // namespace emu::train
