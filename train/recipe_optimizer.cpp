#include "train/recipe_optimizer.h"

#include "config/args.h"
#include "numerics/format_spec.h"
#include "optim/adam.h"
#include "optim/sgd.h"

namespace emu::train {

using config::Args;

std::unique_ptr<Optimizer> make_optimizer(const YAML::Node& section, const NamedTensors& params) {
  Args a(section, "optimizer");
  const std::string type = a.string("type");
  std::unique_ptr<Optimizer> opt;
  if (type == "sgd") {
    SgdOptions o;
    o.lr = static_cast<float>(a.number("lr"));
    o.momentum = static_cast<float>(a.number("momentum"));
    o.dampening = static_cast<float>(a.number("dampening"));
    o.weight_decay = static_cast<float>(a.number("weight_decay"));
    o.nesterov = a.flag("nesterov");
    opt = std::make_unique<SGD>(params, o);
  } else {
    AdamOptions o;
    o.lr = static_cast<float>(a.number("lr"));
    o.beta1 = static_cast<float>(a.number("beta1"));
    o.beta2 = static_cast<float>(a.number("beta2"));
    o.eps = static_cast<float>(a.number("eps"));
    o.weight_decay = static_cast<float>(a.number("weight_decay"));
    o.decoupled = type == "adamw";
    opt = std::make_unique<Adam>(params, o);
  }
  opt->set_update_format(parse_format(a.string("update_format")));
  return opt;
}

}  // namespace emu::train
