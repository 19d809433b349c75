"""The rest of the Python surface: the functional ops against the layers, Policy and Format as
values (equality, copies, pickling, the recipe form), emulate() re-pointing a model, contexts."""
import copy
import pickle

import numpy as np
import pytest
import torch

import emutrain
import emutrain.torch as et
from conftest import assert_same_bits

POLICY = {"format": "bf16", "acc": "fp32", "activations": "e4m3:sr", "grads": "e5m2:sr"}


def test_functional_ops_are_the_layers():
    torch.manual_seed(0)
    a, b = torch.randn(6, 10), torch.randn(10, 4)
    y = emutrain.matmul(a, b, policy=POLICY, path="mm", seed=2, step=3)
    assert_same_bits(y, emutrain.linear(a, b.T.contiguous(), policy=POLICY, path="mm", seed=2, step=3), "matmul")
    yn = emutrain.matmul(a.numpy(), b.numpy(), policy=POLICY, path="mm", seed=2, step=3)
    assert isinstance(yn, np.ndarray) and isinstance(y, torch.Tensor)
    assert_same_bits(yn, y, "numpy in, numpy out")
    x = torch.randn(3, 7)
    ctx = emutrain.Context(2, 3)
    for name, cls in [("relu", et.ReLU), ("gelu", et.GELU), ("silu", et.SiLU), ("tanh", et.Tanh),
                      ("sigmoid", et.Sigmoid)]:
        layer = cls(policy=POLICY, path="act", context=ctx)
        assert_same_bits(getattr(emutrain, name)(x, policy=POLICY, path="act", seed=2, step=3), layer(x), name)
    sm = et.Softmax(dim=-1, policy=POLICY, path="act", context=ctx)
    assert_same_bits(emutrain.softmax(x, policy=POLICY, path="act", seed=2, step=3), sm(x), "softmax")
    lsm = et.LogSoftmax(dim=1, policy=POLICY, path="act", context=ctx)
    assert_same_bits(emutrain.log_softmax(x, policy=POLICY, path="act", seed=2, step=3), lsm(x), "log_softmax")
    # The policy's override for the path applies.
    pol = emutrain.Policy(format="bf16", overrides={"act": {"format": "fp32"}})
    assert_same_bits(emutrain.gelu(x, policy=pol, path="act"), emutrain.gelu(x, policy="fp32"), "override")


def test_policy_values():
    p = emutrain.Policy(format="e6m6", acc="fp32", chunk=16, functions={"gelu": "pwl:8"},
                        overrides={"fc1": {"format": "bf16"}, "layer*.conv?": {"mul": "exact"}})
    assert p.to_recipe() == {
        "default": {"format": "e6m6", "acc": "fp32", "chunk": "16", "functions": {"gelu": "pwl:8"}},
        "overrides": [{"match": "fc1", "format": "bf16"}, {"match": "layer*.conv?", "mul": "exact"}],
    }
    n = p.resolve("layer1.conv2")
    assert (n.weights, n.mac.acc, n.mac.mul, n.mac.chunk) == ("e6m6", "fp32", "exact", 16)
    # An override's `format` sets acc too (the shorthand covers it), as in a recipe.
    assert p.resolve("fc1").weights == "bf16" and p.resolve("fc1").mac.acc == "bf16"
    assert "gelu=pwl" in p.resolve("x").describe()
    q = pickle.loads(pickle.dumps(p))
    assert repr(q) == repr(p) and q.resolve("fc1").describe() == p.resolve("fc1").describe()
    r = copy.deepcopy(p).set("acc", "bf16")
    assert r.resolve("x").mac.acc == "bf16" and p.resolve("x").mac.acc == "fp32"
    listed = emutrain.Policy(format="e5m2", overrides=[{"match": "fc1", "format": "fp32"}])
    assert listed.resolve("fc1").weights == "fp32"
    assert emutrain.policy("e5m2").resolve().weights == "e5m2"
    assert emutrain.policy({"format": "e5m2", "acc": "fp32"}).resolve().mac.acc == "fp32"
    mac = emutrain.Policy().resolve().mac.copy()
    mac.out = "bf16"
    assert mac.out == emutrain.Format("bf16") and "out=bf16" in repr(mac)


def test_format_values():
    f = emutrain.Format("e4m3:sat:rtz")
    assert f == "e4m3:rtz:sat" and f != "e4m3" and f != 3 and f != "not a format"
    assert len({emutrain.Format("fp16"), emutrain.Format("e5m10")}) == 1
    assert pickle.loads(pickle.dumps(f)) == f
    assert emutrain.Format("fp8_e4m3").info()["nan_codes"] == 2


def test_emulate_again_and_contexts():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    r1 = et.emulate(model, "bf16", seed=5)
    assert model[0].numerics.weights == "bf16" and r1.context.seed == 5
    x = torch.randn(3, 4)
    model(x), model(x)
    assert r1.context.step == 1
    r2 = et.emulate(model, "e5m2", only=["Linear"])
    assert model[0].numerics.weights == "e5m2" and model[1].numerics.weights == "e5m2"  # already emulated
    assert model[0].emu_context is r2.context and r2.context.seed == 0
    model(x)
    assert r2.context.step == 0 and r1.context.step == 1  # the old counter is gone
    model.eval()
    model(x)
    assert r2.context.step == 0
    ctx = emutrain.Context(seed=9, step=4)
    assert pickle.loads(pickle.dumps(ctx)).step == 4
    shared = [et.Linear(2, 2, context=ctx), et.Linear(2, 2, context=ctx)]
    shared[0](torch.ones(1, 2))
    assert ctx.step == 4  # a shared context is advanced by whoever owns it, not by its layers
    with pytest.raises(ValueError, match="padding_mode 'circular'"):
        et.Conv2d(1, 1, 3, padding_mode="circular")
