"""emutrain.torch's MultiheadAttention, LSTM and GRU (and the element-wise layers) against
PyTorch's own layers of the same weights: under plain fp32 the outputs and every gradient agree
within a reassociation tolerance (PyTorch, a second implementation, sums in its own order),
which checks the mapping of PyTorch's parameters (packed q/k/v rows, two biases, layer and
direction slots, batch_first, initial states) onto the engine's; under e6m6 the results are e6m6
values, and two runs give the same bits.
"""
import copy

import pytest
import torch
from torch import nn

import emutrain
import emutrain.torch as et
from conftest import assert_same_bits


def outputs_and_grads(model, inputs, fn):
    inputs = [t.detach().clone().requires_grad_() if t.is_floating_point() else t for t in inputs]
    model.zero_grad()
    out = fn(model, *inputs)
    flat = [o for o in (out if isinstance(out, (tuple, list)) else [out]) if o is not None]
    flat = [t for o in flat for t in (o if isinstance(o, tuple) else (o,))]
    torch.manual_seed(99)
    loss = sum((o * torch.randn(o.shape)).sum() for o in flat)  # randn_like would follow o's strides
    loss.backward()
    grads = [t.grad for t in inputs if t.is_floating_point()] + [p.grad for p in model.parameters()]
    return flat, grads


def close(a, b, tol, what):
    for i, (x, y) in enumerate(zip(a, b)):
        scale = y.abs().max().clamp_min(1e-6)
        err = ((x - y).abs().max() / scale).item()
        assert err < tol, f"{what} {i}: relative error {err:.3g}"


CASES = {
    "mha": (lambda: nn.MultiheadAttention(12, 3, batch_first=False),
            lambda: [torch.randn(5, 2, 12), torch.randn(7, 2, 12), torch.randn(7, 2, 12)],
            lambda m, q, k, v: m(q, k, v)[0]),
    "mha_kdim_mask": (lambda: nn.MultiheadAttention(8, 2, kdim=6, vdim=5, batch_first=True),
                      lambda: [torch.randn(2, 4, 8), torch.randn(2, 6, 6), torch.randn(2, 6, 5),
                               torch.tensor([[False] * 5 + [True], [False] * 6])],
                      lambda m, q, k, v, mask: m(q, k, v, key_padding_mask=mask)[0]),
    "lstm": (lambda: nn.LSTM(5, 7, num_layers=2, bidirectional=True),
             lambda: [torch.randn(6, 3, 5), torch.randn(4, 3, 7), torch.randn(4, 3, 7)],
             lambda m, x, h, c: m(x, (h, c))),
    "gru": (lambda: nn.GRU(4, 6, num_layers=2, batch_first=True),
            lambda: [torch.randn(3, 5, 4)],
            lambda m, x: m(x)),
    "lstm_unbatched": (lambda: nn.LSTM(3, 4), lambda: [torch.randn(5, 3)], lambda m, x: m(x)),
    "lstm_cell": (lambda: nn.LSTMCell(5, 6), lambda: [torch.randn(3, 5), torch.randn(3, 6), torch.randn(3, 6)],
                  lambda m, x, h, c: m(x, m(x, (h, c)))),
    "gru_cell": (lambda: nn.GRUCell(4, 5), lambda: [torch.randn(3, 4)], lambda m, x: m(x, m(x))),
    "activations": (lambda: nn.Sequential(nn.GELU(), nn.Tanh(), nn.SiLU(), nn.Sigmoid(), nn.Softmax(dim=1)),
                    lambda: [torch.randn(4, 9)],
                    lambda m, x: m(x)),
    "pools_bn": (lambda: nn.Sequential(nn.BatchNorm2d(3), nn.AvgPool2d(2), nn.MaxPool2d(2, 1), nn.LogSoftmax(1)),
                 lambda: [torch.randn(2, 3, 8, 6)],
                 lambda m, x: m(x)),
}


@pytest.mark.parametrize("name", CASES)
def test_fp32_against_pytorch(name):
    make, inputs, fn = CASES[name]
    torch.manual_seed(0)
    ref = make()
    emu = copy.deepcopy(ref)
    report = et.emulate(emu, "fp32")
    assert not report.not_replaced, report
    xs = inputs()
    out_ref, g_ref = outputs_and_grads(ref, xs, fn)
    out_emu, g_emu = outputs_and_grads(emu, xs, fn)
    # Measured: at most 1.8e-7 (outputs) and 4.3e-7 (gradients) of the largest value.
    close(out_emu, out_ref, 2e-6, f"{name} output")
    close(g_emu, g_ref, 4e-6, f"{name} gradient")
    if name == "pools_bn":  # the running statistics were updated in place, as PyTorch's
        close([emu[0].running_mean, emu[0].running_var], [ref[0].running_mean, ref[0].running_var], 2e-6,
              "running stats")


@pytest.mark.parametrize("name", ["mha", "lstm", "gru", "lstm_cell"])
def test_e6m6_reproducible(name):
    make, inputs, fn = CASES[name]
    results = []
    for _ in range(2):
        torch.manual_seed(0)
        m = make()
        et.emulate(m, {"format": "e6m6", "acc": "fp32", "grads": "e5m2:sr"}, seed=3)
        results.append(outputs_and_grads(m, inputs(), fn))
    (o1, g1), (o2, g2) = results
    for a, b in zip(o1 + g1, o2 + g2):
        assert_same_bits(a, b, name)
    assert_same_bits(emutrain.quantize(o1[0], "e6m6"), o1[0], f"{name}: outputs are e6m6 values")


def test_unsupported_configurations_are_listed():
    model = nn.Sequential(nn.LSTM(3, 4, proj_size=2), nn.MaxPool2d(2, ceil_mode=True), nn.Conv2d(1, 1, 3,
                                                                                                padding_mode="reflect"))
    report = et.emulate(model, "bf16")
    assert report.replaced == []
    assert [(p, t) for p, t, _ in report.not_replaced] == [("0", "LSTM"), ("1", "MaxPool2d"), ("2", "Conv2d")]
    assert "proj_size" in report.not_replaced[0][2] and "reflect" in report.not_replaced[2][2]
    mha = nn.MultiheadAttention(4, 2)
    et.emulate(mha, "fp32")
    with pytest.raises(ValueError, match="attn_mask is not emulated"):
        mha(torch.ones(2, 1, 4), torch.ones(2, 1, 4), torch.ones(2, 1, 4), attn_mask=torch.zeros(2, 2))


def test_cell_calls_draw_from_their_own_streams():
    """Within one step the n-th call of a cell draws as layer n: two calls on the same input and
    state round differently under :sr, and the same again in a second run."""
    runs = []
    for _ in range(2):
        torch.manual_seed(0)
        cell = nn.GRUCell(6, 8)
        et.emulate(cell, {"format": "e5m2:sr", "acc": "fp32"}, seed=1)
        x, h = torch.randn(4, 6), torch.randn(4, 8)
        with torch.no_grad():
            cell.eval()
            runs.append((cell(x, h), cell(x, h)))
    (a1, a2), (b1, b2) = runs
    assert not torch.equal(a1, a2)
    assert_same_bits(a1, b1, "first call")
    assert_same_bits(a2, b2, "second call")
