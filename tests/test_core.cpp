// Tensors, autograd, modules and numerics policies.
#include <catch2/catch.hpp>
#include <stdexcept>

#include "core/autograd.h"
#include "core/backend.h"
#include "core/module.h"
#include "core/numerics_policy.h"
#include "layers/linear.h"
#include "layers/shape_ops.h"
#include "numerics/format_spec.h"

using emu::Tensor;

TEST_CASE("tensor views share storage and copies do not", "[core]") {
  Tensor t = Tensor::from_vector({2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor tt = t.transpose(0, 1);
  CHECK(tt.shape() == emu::Shape{3, 2});
  CHECK_FALSE(tt.is_contiguous());
  CHECK(tt.to_vector() == std::vector<float>{0, 3, 1, 4, 2, 5});
  Tensor col = t.narrow(1, 1, 2);
  CHECK(col.to_vector() == std::vector<float>{1, 2, 4, 5});
  col.fill(9);
  CHECK(t.to_vector() == std::vector<float>{0, 9, 9, 3, 9, 9});
  Tensor c = tt.contiguous();
  CHECK(c.is_contiguous());
  c.fill(0);
  CHECK(t.to_vector() == std::vector<float>{0, 9, 9, 3, 9, 9});
  CHECK(t.view({3, -1}).shape() == emu::Shape{3, 2});
  CHECK_THROWS_WITH(t.view({4, 2}), Catch::Contains("does not hold the 6 elements"));
  CHECK_THROWS_WITH(tt.view({6}), Catch::Contains("non-contiguous"));
}

TEST_CASE("autograd accumulates over uses, in a fixed order, and honours no_grad", "[core]") {
  auto layer = std::make_shared<emu::Linear>(2, 2, false);
  layer->weight.copy_from(Tensor::from_vector({2, 2}, {1, 2, 3, 4}));
  Tensor x = Tensor::from_vector({1, 2}, {1, 1}).set_requires_grad(true);
  // y = W x used twice: d(sum(y*a) + sum(y*b))/dx = W^T (a + b)
  Tensor y1 = layer->forward(x);
  Tensor y2 = layer->forward(x);
  y1.backward(Tensor::from_vector({1, 2}, {1, 0}));
  y2.backward(Tensor::from_vector({1, 2}, {0, 1}));
  CHECK(x.grad().to_vector() == std::vector<float>{1 + 3, 2 + 4});
  CHECK(layer->weight.grad().to_vector() == std::vector<float>{1, 1, 1, 1});
  x.zero_grad();
  CHECK_FALSE(x.grad().defined());
  {
    emu::NoGradGuard guard;
    Tensor y = layer->forward(x);
    CHECK_FALSE(y.requires_grad());
    CHECK_THROWS_WITH(y.backward(), Catch::Contains("does not require grad"));
  }
  CHECK(layer->forward(x).requires_grad());
}

TEST_CASE("autograd gives each pending gradient its own copy when one tensor reaches several nodes",
          "[core]") {
  // x -> a = L1 x, b = L2 x, t = L3 a, s = a + b, out = s + t. The adds hand one gradient tensor to
  // both inputs; L3's gradient for a is added into a's pending sum before L2 reads b's, so the two
  // sums must not share memory: d out / dx = (g + g W3) W1 + g W2.
  auto l1 = std::make_shared<emu::Linear>(2, 2, false), l2 = std::make_shared<emu::Linear>(2, 2, false),
       l3 = std::make_shared<emu::Linear>(2, 2, false);
  l1->weight.copy_from(Tensor::from_vector({2, 2}, {1, 2, 3, 4}));
  l2->weight.copy_from(Tensor::from_vector({2, 2}, {0, 1, 1, 0}));
  l3->weight.copy_from(Tensor::from_vector({2, 2}, {2, 0, 0, 2}));
  emu::Add add1, add2;
  Tensor x = Tensor::from_vector({1, 2}, {1, 1}).set_requires_grad(true);
  Tensor a = l1->forward(x), b = l2->forward(x);
  Tensor t = l3->forward(a);
  Tensor out = add2.forward(add1.forward(a, b), t);
  out.backward(Tensor::from_vector({1, 2}, {1, 1}));
  CHECK(x.grad().to_vector() == std::vector<float>{13, 19});
}

TEST_CASE("modules name parameters by path and check state dicts", "[core]") {
  struct Net : emu::Module {
    std::shared_ptr<emu::Linear> fc1, fc2;
    Net() {
      fc1 = register_module("fc1", std::make_shared<emu::Linear>(3, 4));
      fc2 = register_module("fc2", std::make_shared<emu::Linear>(4, 2, false));
    }
  };
  struct Outer : emu::Module {
    std::shared_ptr<Net> body;
    Outer() { body = register_module("body", std::make_shared<Net>()); }
  };
  Outer m;
  std::vector<std::string> names;
  for (auto& [n, _] : m.named_parameters()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"body.fc1.weight", "body.fc1.bias", "body.fc2.weight"});
  CHECK(m.body->fc2->path() == "body.fc2");
  CHECK_THROWS_WITH(m.register_module("body", std::make_shared<Net>()), Catch::Contains("registered twice"));

  m.initialize(1);
  auto state = m.state_dict();
  Outer m2;
  m2.load_state_dict(state);
  CHECK(m2.body->fc1->weight.to_vector() == m.body->fc1->weight.to_vector());
  state.erase("body.fc2.weight");
  state["body.fc9.weight"] = Tensor::zeros({1});
  state["body.fc1.bias"] = Tensor::zeros({5});
  try {
    m2.load_state_dict(state);
    FAIL("load_state_dict accepted a mismatching state");
  } catch (const std::invalid_argument& e) {
    std::string msg = e.what();
    CHECK_THAT(msg, Catch::Contains("missing 'body.fc2.weight'"));
    CHECK_THAT(msg, Catch::Contains("unexpected 'body.fc9.weight'"));
    CHECK_THAT(msg, Catch::Contains("'body.fc1.bias' has shape (5,)"));
  }
  m.eval();
  CHECK_FALSE(m.body->fc1->is_training());
}

TEST_CASE("initialisation depends on the seed and the path only", "[core]") {
  auto a = std::make_shared<emu::Linear>(8, 8), b = std::make_shared<emu::Linear>(8, 8);
  a->initialize(5);
  b->initialize(5);
  CHECK(a->weight.to_vector() == b->weight.to_vector());
  b->initialize(6);
  CHECK(a->weight.to_vector() != b->weight.to_vector());
  for (float w : a->weight.to_vector()) CHECK((w >= -0.35356f && w <= 0.35356f));  // 1/sqrt(8)
}

TEST_CASE("glob matching of module paths", "[core]") {
  CHECK(emu::glob_match("layer4.*.conv2", "layer4.1.conv2"));
  CHECK_FALSE(emu::glob_match("layer4.*.conv2", "layer4.1.x.conv2"));
  CHECK(emu::glob_match("layer4.**.conv2", "layer4.1.x.conv2"));
  CHECK(emu::glob_match("*", "fc"));
  CHECK_FALSE(emu::glob_match("*", "a.b"));
  CHECK(emu::glob_match("**", "a.b"));
  CHECK(emu::glob_match("fc?", "fc1"));
  CHECK_FALSE(emu::glob_match("fc?", "fc"));
}

TEST_CASE("numerics policies: defaults, format shorthand, overrides in order, errors name the key",
          "[core]") {
  emu::NumericsPolicy p;
  emu::LayerNumerics plain = p.resolve("anything");
  CHECK(plain.passthrough());
  p.set("acc", "fp32");
  p.set("format", "e5m2");  // applied before specific keys whatever the order
  p.set_override("layer4.*.conv2", "mul", "exact");
  p.set_override("layer4.*.conv2", "acc", "int32");
  p.set_override("layer4.**", "chunk", "16");
  emu::LayerNumerics n = p.resolve("layer1.0.conv1");
  CHECK(emu::format_name(n.weights) == "e5m2");
  CHECK(emu::format_name(n.mac.mul) == "e5m2");
  CHECK(emu::format_name(n.mac.acc) == "fp32");
  CHECK_FALSE(n.passthrough());
  emu::LayerNumerics o = p.resolve("layer4.1.conv2");
  CHECK(o.mac.mul_exact);
  CHECK(emu::format_name(o.mac.acc) == "int32");
  CHECK(o.mac.chunk == 16);
  CHECK_THROWS_WITH(p.set("wieghts", "fp16"),
                    Catch::Contains("unknown key 'wieghts'") && Catch::Contains("allowed: format, weights"));
  CHECK_THROWS_WITH(p.set("weights", "fp99"), Catch::Contains("numerics.default.weights: 'fp99'"));
  CHECK_THROWS_WITH(p.set("out", "int32"), Catch::Contains("accumulator-only"));
  CHECK_THROWS_WITH(p.set("chunk", "-3"), Catch::Contains("whole number"));
  CHECK_THROWS_WITH(p.set_override("fc", "emulation", "both"),
                    Catch::Contains("numerics.overrides['fc'].emulation"));
  emu::NumericsPolicy q;
  q.set("emulation", "layer");
  CHECK_FALSE(q.resolve("x").passthrough());
}

TEST_CASE("the stub backend lists every op as unimplemented", "[core]") {
  emu::StubBackend stub;
  Tensor x = Tensor::zeros({2});
  CHECK_THROWS_WITH(stub.quantize(emu::Format(), x, x, {}), "unimplemented: quantize");
  CHECK_FALSE(stub.supports(emu::Op::gemm, emu::Family::Ieee));
  const auto& ops = emu::backend_op_names();
  CHECK(std::find(ops.begin(), ops.end(), "gemm") != ops.end());
  CHECK(emu::backend_for(emu::Device::Cpu).supports(emu::Op::gemm, emu::Family::Posit));
}

TEST_CASE("a default Format is fp32", "[core]") {
  emu::Format d, f = emu::parse_format("fp32");
  CHECK(d.max_finite == f.max_finite);
  CHECK(d.min_positive == f.min_positive);
  CHECK(d.min_normal == f.min_normal);
  CHECK(d.nbits == f.nbits);
  CHECK(d.bias == f.bias);
  CHECK(d.emin == f.emin);
  CHECK(emu::format_name(d) == "fp32");
}
