"""A small CNN trained from a plain PyTorch loop under emutrain.torch.emulate().

Reproducibility: the same run twice, and with 1 or 2 CPU threads, gives the same weights bit
for bit (stochastic rounding included: every draw is keyed by path, seed and step). Sanity:
under plain fp32 the emulated model stays within a reassociation tolerance of PyTorch's own
float32 model (PyTorch's summation order is unspecified, the engine's is fixed), and under
e6m6 it differs from fp32 by about what 6 fraction bits give.
"""
import copy

import pytest
import torch
from torch import nn

import emutrain
import emutrain.torch as et
from conftest import assert_same_bits


class SmallCNN(nn.Module):

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(6)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(6, 8, 3, stride=2, padding=1)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = self.pool(self.relu(self.bn1(self.conv1(x))))
        x = self.relu(self.conv2(x))
        return self.fc(torch.flatten(self.gap(x), 1))


def data(steps, batch=8):
    g = torch.Generator().manual_seed(42)
    return [(torch.randn(batch, 1, 12, 12, generator=g), torch.randint(0, 10, (batch,), generator=g))
            for _ in range(steps)]


def train(policy, threads=0, steps=4, seed=7):
    """Returns the model after `steps` SGD steps and the losses; policy None: plain PyTorch."""
    torch.manual_seed(0)
    model = SmallCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)  # built before emulate()
    if policy is not None:
        report = et.emulate(model, policy, seed=seed)
        assert not report.not_replaced, report
    emutrain.set_threads(threads)
    losses = []
    for x, y in data(steps):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model, losses


SR_POLICY = {"format": "e6m6", "acc": "fp32", "grads": "e5m2:sr"}


def test_bit_identical_runs_and_threads():
    a, la = train(SR_POLICY, threads=2)
    b, lb = train(SR_POLICY, threads=2)
    c, lc = train(SR_POLICY, threads=1)
    assert la == lb == lc
    for (name, ta), tb, tc in zip(a.state_dict().items(), b.state_dict().values(), c.state_dict().values()):
        assert_same_bits(ta, tb, name + " (second run)")
        assert_same_bits(ta, tc, name + " (1 thread)")
    # The context counted the training forwards: step 3 ran last.
    assert a._emutrain.context.step == 3
    # Another seed draws other stochastic roundings.
    d, _ = train(SR_POLICY, threads=2, seed=8)
    assert not torch.equal(a.fc.weight, d.fc.weight)


def rel(a, b):
    return ((a - b).abs().max() / b.abs().max()).item()


def test_fp32_passthrough_near_pytorch():
    """Plain fp32 (the engine's fixed summation order) vs PyTorch's own float32 model: the first
    forward and the weights after 4 steps within 1e-5 of the largest value (rounding differences
    of reassociated sums, a few units of 2^-24; measured: 3.2e-7 and 3.3e-7)."""
    torch.manual_seed(0)
    plain, emulated = SmallCNN(), SmallCNN()
    emulated.load_state_dict(plain.state_dict())
    et.emulate(emulated, "fp32")
    x, _ = data(1)[0]
    y0, y1 = plain(x), emulated(x)
    assert rel(y1, y0) < 1e-5
    torch_model, _ = train(None)
    emu_model, _ = train("fp32")
    for (name, tw), ew in zip(torch_model.state_dict().items(), emu_model.state_dict().values()):
        if tw.dtype == torch.float32:
            assert rel(ew, tw) < 1e-5, name


def test_e6m6_differs_from_fp32_as_expected():
    """e6m6 (unit roundoff u = 2^-7) with an fp32 accumulator: the outputs are e6m6 values and
    differ from the fp32 outputs by about u (a rounding of each layer's inputs, weights and
    outputs: between u/4 and 8u of the largest output; measured 1.5u), far more than fp32
    differs from PyTorch (test above), far less than a broken computation would; the losses of
    4 training steps stay within 0.01 (measured 8e-4) but differ."""
    torch.manual_seed(0)
    ref, low = SmallCNN(), SmallCNN()
    low.load_state_dict(ref.state_dict())
    et.emulate(ref, "fp32")
    et.emulate(low, {"format": "e6m6", "acc": "fp32"})
    x, _ = data(1)[0]
    y_ref, y_low = ref(x).detach(), low(x).detach()
    assert_same_bits(emutrain.quantize(y_low, "e6m6"), y_low, "outputs are e6m6 values")
    d = rel(y_low, y_ref)
    u = 2.0**-7
    assert u / 4 < d < 8 * u, d
    # After training, the loss curves stay close but not equal.
    _, l_ref = train("fp32")
    _, l_low = train({"format": "e6m6", "acc": "fp32"})
    assert l_ref != l_low
    assert max(abs(a - b) for a, b in zip(l_ref, l_low)) < 0.01


def test_emulate_report_and_overrides():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.LayerNorm([2, 2, 2]), nn.Flatten(), nn.Linear(8, 3))
    report = et.emulate(model, {"format": "bf16"}, overrides={"3": {"format": "fp32"}})
    assert [p for p, _ in report.replaced] == ["0", "3"]
    assert [(p, t) for p, t, _ in report.not_replaced] == [("1", "LayerNorm")]
    assert isinstance(model[0], et.Conv2d) and isinstance(model[0], nn.Conv2d)
    assert model[3].numerics.weights == emutrain.Format("fp32")
    assert model[0].numerics.weights == emutrain.Format("bf16")
    assert "LayerNorm" in repr(report)
    with pytest.raises(ValueError, match=r"numerics.overrides\['fc9'\]: matches no emulated layer"):
        et.emulate(model, "bf16", overrides={"fc9": {"format": "fp32"}})
    # Copies keep their emulation.
    twin = copy.deepcopy(model)
    x = torch.randn(2, 1, 4, 4)
    assert_same_bits(twin(x), model(x), "deepcopy")
