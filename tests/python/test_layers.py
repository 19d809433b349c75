"""emutrain.torch.Linear, Conv2d and Conv1d against the engine's ops, bit for bit.

The reference composes the backend ops (emutrain.backend: gemm, conv2d_forward,
conv2d_grad_input, conv2d_grad_weight, channel_sum) and the engine's bulk rounding
(emutrain.quantize) as docs/contract.md section 5 and layers/linear.cpp, layers/conv2d.cpp
define a layer: inputs read into the policy's formats with the layer's draw keys
(core/draw_key.h: path, site, seed, step), the reduction in the policy's mul/acc/out/chunk,
backward reductions rounded to the grads format. Where nothing is stochastic, single outputs
are also checked against `emutrain calc --batch` dot lines (the scalar mac_reduce), and the
fp32 policy against float64 within the summation error bound.
"""
import numpy as np
import pytest
import torch

import emutrain
import emutrain.torch as et
from conftest import assert_same_bits, calc_batch, hex32

# The policies of the issue (fp32, e6m6 with an fp32 accumulator, bf16 with e5m2:sr gradients,
# posit16, a chunked accumulator) and more: fused runs, a split multiplier, integers, an :sr
# accumulator, an approximate (table) multiplier.
POLICIES = {
    "fp32": {},
    "e6m6_acc_fp32": {"format": "e6m6", "acc": "fp32"},
    "bf16_grads_e5m2_sr": {"format": "bf16", "acc": "fp32", "grads": "e5m2:sr"},
    "posit16": {"format": "posit16_1"},
    "chunked": {"format": "fp16", "mul": "exact", "acc": "bf16", "chunk": 8, "acc_outer": "fp32"},
    "fused": {"format": "fp8_e4m3", "acc": "fp32", "out": "bf16", "grads": "bf16", "fused": 4, "chunk": 16},
    "split_fp32b": {"mul": "split:fp32b"},
    "int8_acc_int32": {"format": "int8", "mul": "exact", "acc": "int32", "out": "fp32", "grads": "fp32"},
    "acc_sr": {"format": "e5m2", "acc": "e8m10:sr", "out": "e5m10"},
    "lut_mitchell": {"format": "e5m7", "mul": "lut:mitchell:e5m7", "acc": "fp32"},
}
PATH, SEED, STEP = "block.3.op", 11, 5
FP32 = emutrain.Format("fp32")


class Composition:
    """A layer's arithmetic from the backend's ops, with the layer's reads and draw keys."""

    def __init__(self, policy):
        self.n = policy.resolve(PATH)
        self.bmac = self.n.mac.copy()  # backward reductions: the forward's, rounded to the grads format
        self.bmac.out = self.n.grads
        self.smac = self.bmac.copy()  # bias and channel gradients: plain sums (mul exact, never fused)
        self.smac.fused = 0
        self.smac.mul_exact = True

    @staticmethod
    def key(site):
        return emutrain.layer_draw_key(SEED, PATH, getattr(emutrain.DrawSite, site), STEP)

    def read(self, fmt, t, site):
        return t if fmt == FP32 else emutrain.quantize(t.contiguous(), fmt, *self.key(site))

    def linear(self, x, w, b, gy):
        rows = x.numel() // x.shape[-1]
        n, key = self.n, self.key
        xr = self.read(n.activations, x.reshape(rows, -1), "read_input")
        wr = self.read(n.weights, w, "read_weights")
        br = self.read(n.weights, b, "read_bias")
        y = emutrain.backend.gemm(xr, wr.T.contiguous(), n.mac, br, *key("forward"))
        g = self.read(n.grads, gy.reshape(rows, -1), "read_grad")
        gx = emutrain.backend.gemm(g, wr, self.bmac, None, *key("grad_input"))
        gw = emutrain.backend.gemm(g.T.contiguous(), xr, self.bmac, None, *key("grad_weight"))
        ones = torch.ones(rows, 1)
        gb = emutrain.backend.gemm(g.T.contiguous(), ones, self.smac, None, *key("grad_bias"))
        return dict(y=y.reshape(gy.shape), gx=gx.reshape(x.shape), gw=gw, gb=gb.reshape(-1), xr=xr, wr=wr, br=br,
                    g=g)

    def conv2d(self, x, w, b, gy, stride, padding, dilation, groups):
        n, key = self.n, self.key
        conv = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
        xr = self.read(n.activations, x, "read_input")
        wr = self.read(n.weights, w, "read_weights")
        br = self.read(n.weights, b, "read_bias")
        y = emutrain.backend.conv2d_forward(xr, wr, n.mac, br, **conv, seed=key("forward")[0], stream=key("forward")[1])
        g = self.read(n.grads, gy, "read_grad")
        gx = emutrain.backend.conv2d_grad_input(g, wr, tuple(x.shape[2:]), self.bmac, **conv,
                                                seed=key("grad_input")[0], stream=key("grad_input")[1])
        gw = emutrain.backend.conv2d_grad_weight(xr, g, tuple(w.shape[2:]), self.bmac, **conv,
                                                 seed=key("grad_weight")[0], stream=key("grad_weight")[1])
        gb = emutrain.backend.channel_sum(g.reshape(g.shape[0], g.shape[1], -1), self.smac, *key("grad_bias"))
        return dict(y=y, gx=gx, gw=gw, gb=gb, xr=xr, wr=wr, br=br, g=g)


def unit_weights(layer):
    """N(0, 1) parameters: the default init's small values would all round to 0 in int8."""
    with torch.no_grad():
        layer.weight.normal_()
        layer.bias.normal_()


def run_layer(layer, x, gy):
    x = x.detach().requires_grad_()
    y = layer(x)
    y.backward(gy)
    return dict(y=y.detach(), gx=x.grad, gw=layer.weight.grad, gb=layer.bias.grad)


def check(got, want, what):
    for k in ("y", "gx", "gw", "gb"):
        assert_same_bits(got[k], want[k], f"{what}: {k}")


def mul_spec(mac):
    return mac.mul  # "exact", a format name, or split:<scheme> / lut:<...>, as calc's dot takes them


def dot_line(mac, pairs, bias=None):
    """calc's dot of (a, b) pairs under mac (docs/calc.md)."""
    opts = []
    if mac.chunk:
        opts += [f"chunk={mac.chunk}", f"outer={mac.acc_outer}"]
    if mac.fused:
        opts.append(f"fused={mac.fused}")
    if bias is not None:
        opts.append(f"bias={hex32([bias])[0]}")
    terms = " ".join(f"{a} {b}" for a, b in zip(hex32([p[0] for p in pairs]), hex32([p[1] for p in pairs])))
    return f"dot {mul_spec(mac)} {mac.acc} {mac.out} {' '.join(opts)} {terms}"


def stochastic(policy_keys):
    return any(":sr" in str(v) for v in policy_keys.values())


def odd_input(shape):
    """A non-contiguous float32 tensor of `shape`: the transpose of a contiguous one."""
    return torch.randn(*reversed(shape)).permute(*reversed(range(len(shape))))


@pytest.mark.parametrize("name", POLICIES)
@pytest.mark.parametrize("x_shape,out", [((7, 13), 5), ((2, 3, 17), 9), ((3, 33), 1)])
def test_linear(name, x_shape, out):
    torch.manual_seed(len(name) + out)
    policy = emutrain.Policy(**POLICIES[name])
    layer = et.Linear(x_shape[-1], out, policy=policy, path=PATH, context=emutrain.Context(SEED, STEP))
    unit_weights(layer)
    x = odd_input(x_shape)
    assert not x.is_contiguous()
    gy = odd_input(x_shape[:-1] + (out,))
    got = run_layer(layer, x, gy)
    want = Composition(policy).linear(x, layer.weight.detach(), layer.bias.detach(), gy)
    check(got, want, f"Linear {name} {x_shape}")
    # The functional form computes the same forward.
    y = emutrain.linear(x, layer.weight.detach(), layer.bias.detach(), policy=policy, path=PATH, seed=SEED, step=STEP)
    assert_same_bits(y, got["y"], "emutrain.linear")

    if stochastic(POLICIES[name]):
        return
    # Single outputs against calc's scalar dot (mac_reduce), from the read operands.
    n, c = policy.resolve(PATH), Composition(policy)
    xr, wr, br, g = want["xr"].numpy(), want["wr"].numpy(), want["br"].numpy(), want["g"].numpy()
    rows, k = xr.shape
    y2 = got["y"].reshape(rows, out).numpy()
    gx2 = got["gx"].reshape(rows, k).numpy()
    rng = np.random.default_rng(1)
    picks = [(rng.integers(rows), rng.integers(out), rng.integers(k)) for _ in range(8)]
    lines, want_bits = [], []
    for i, j, kk in picks:
        lines.append(dot_line(n.mac, list(zip(xr[i], wr[j])), br[j]))
        want_bits.append(y2[i, j])
        lines.append(dot_line(c.bmac, list(zip(g[i], wr[:, kk]))))
        want_bits.append(gx2[i, kk])
        lines.append(dot_line(c.bmac, list(zip(g[:, j], xr[:, kk]))))
        want_bits.append(got["gw"][j, kk].item())
    answers = np.array([int(a, 16) for a in calc_batch(lines)], dtype=np.uint32).view(np.float32)
    assert_same_bits(np.array(want_bits, dtype=np.float32), answers, f"Linear {name}: outputs vs calc dot")


CONVS = [
    # x shape, weight shape, stride, padding, dilation, groups
    ((3, 5, 9, 11), (7, 5, 3, 2), (2, 1), (1, 0), (1, 2), 1),
    ((2, 6, 7, 7), (4, 3, 3, 3), 1, 1, 1, 2),
    ((1, 3, 5, 6), (2, 3, 1, 1), 1, 0, 1, 1),
]


@pytest.mark.parametrize("name", POLICIES)
@pytest.mark.parametrize("x_shape,w_shape,stride,padding,dilation,groups", CONVS)
def test_conv2d(name, x_shape, w_shape, stride, padding, dilation, groups):
    torch.manual_seed(len(name) + w_shape[0])
    policy = emutrain.Policy(**POLICIES[name])
    layer = et.Conv2d(x_shape[1], w_shape[0], w_shape[2:], stride, padding, dilation, groups, policy=policy,
                      path=PATH, context=emutrain.Context(SEED, STEP))
    unit_weights(layer)
    x = torch.randn(x_shape[0], x_shape[2], x_shape[3], x_shape[1]).permute(0, 3, 1, 2)  # channels-last view
    y_shape = torch.nn.functional.conv2d(x, layer.weight, None, stride, padding, dilation, groups).shape
    gy = odd_input(tuple(y_shape))
    got = run_layer(layer, x, gy)
    want = Composition(policy).conv2d(x, layer.weight.detach(), layer.bias.detach(), gy, stride, padding, dilation,
                                      groups)
    check(got, want, f"Conv2d {name} {x_shape}")
    y = emutrain.conv2d(x, layer.weight.detach(), layer.bias.detach(), stride, padding, dilation, groups,
                        policy=policy, path=PATH, seed=SEED, step=STEP)
    assert_same_bits(y, got["y"], "emutrain.conv2d")

    if stochastic(POLICIES[name]) or groups != 1:
        return
    # Single outputs against calc's dot: terms (ci, kh, kw) ascending; a padding tap is a zero
    # operand, skipped but keeping its place for chunk boundaries (docs/contract.md section 4.3).
    n = policy.resolve(PATH)
    xr, wr, br = want["xr"].numpy(), want["wr"].numpy(), want["br"].numpy()
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    ph, pw = (padding, padding) if isinstance(padding, int) else padding
    dh, dw = (dilation, dilation) if isinstance(dilation, int) else dilation
    y = got["y"].numpy()
    rng = np.random.default_rng(2)
    lines, want_bits = [], []
    for _ in range(8):
        nn_, co, oh, ow = (rng.integers(s) for s in y.shape)
        pairs = []
        for ci in range(w_shape[1]):
            for kh in range(w_shape[2]):
                for kw in range(w_shape[3]):
                    ih, iw = oh * sh - ph + kh * dh, ow * sw - pw + kw * dw
                    inside = 0 <= ih < x_shape[2] and 0 <= iw < x_shape[3]
                    pairs.append((xr[nn_, ci, ih, iw] if inside else 0.0, wr[co, ci, kh, kw]))
        lines.append(dot_line(n.mac, pairs, br[co]))
        want_bits.append(y[nn_, co, oh, ow])
    answers = np.array([int(a, 16) for a in calc_batch(lines)], dtype=np.uint32).view(np.float32)
    assert_same_bits(np.array(want_bits, dtype=np.float32), answers, f"Conv2d {name}: outputs vs calc dot")


@pytest.mark.parametrize("name", ["fp32", "e6m6_acc_fp32", "bf16_grads_e5m2_sr", "chunked"])
def test_conv1d(name):
    """Conv1d is the Conv2d ops with H = KH = 1 (layers/conv1d.h)."""
    torch.manual_seed(5)
    policy = emutrain.Policy(**POLICIES[name])
    layer = et.Conv1d(4, 6, 3, stride=2, padding=2, dilation=2, policy=policy, path=PATH,
                      context=emutrain.Context(SEED, STEP))
    x = odd_input((3, 4, 19))
    y_shape = torch.nn.functional.conv1d(x, layer.weight, None, 2, 2, 2).shape
    gy = torch.randn(y_shape)
    got = run_layer(layer, x, gy)
    want = Composition(policy).conv2d(x.unsqueeze(2), layer.weight.detach().unsqueeze(2), layer.bias.detach(),
                                      gy.unsqueeze(2), (1, 2), (0, 2), (1, 2), 1)
    want = {k: (v.squeeze(2) if v.dim() == 4 else v) for k, v in want.items()}
    check(got, want, f"Conv1d {name}")


def test_fp32_linear_against_float64():
    """Plain fp32: each output within the summation bound of the float64 result
    (|error| <= gamma_K sum |x_k w_k| + u |y|, gamma_K = K u / (1 - K u), u = 2^-24)."""
    torch.manual_seed(0)
    layer = et.Linear(300, 20)
    x = torch.randn(16, 300)
    y = layer(x).detach().double()
    terms = x.double().abs() @ layer.weight.detach().double().abs().T + layer.bias.detach().double().abs()
    exact = x.double() @ layer.weight.detach().double().T + layer.bias.detach().double()
    u, k = 2.0**-24, 301
    bound = k * u / (1 - k * u) * terms + u * exact.abs()
    assert torch.all((y - exact).abs() <= bound)
    assert not torch.equal(y, exact)  # binary32 arithmetic, not float64


def test_layer_emulation():
    """emulation: layer computes in plain fp32 and rounds the output once (layers/layer_io.h)."""
    torch.manual_seed(1)
    layer_level = et.Linear(9, 4, policy={"format": "e4m3", "emulation": "layer"}, path=PATH,
                            context=emutrain.Context(SEED, STEP))
    plain = et.Linear(9, 4)
    plain.load_state_dict(layer_level.state_dict())
    x = torch.randn(5, 9)
    with torch.no_grad():
        want = emutrain.quantize(plain(x), "e4m3", *Composition.key("forward"))
        assert_same_bits(layer_level(x), want, "layer-level output")


def test_steps_advance_per_training_forward():
    """A layer with its own context counts its training forwards: the n-th draws at step n-1."""
    keys = POLICIES["bf16_grads_e5m2_sr"] | {"activations": "e4m3:sr"}
    policy = emutrain.Policy(**keys)
    torch.manual_seed(3)
    layer = et.Linear(8, 3, policy=policy, path=PATH)
    x = torch.randn(4, 8)
    with torch.no_grad():
        outs = [layer(x) for _ in range(3)]
    for step, y in enumerate(outs):
        want = emutrain.linear(x, layer.weight, layer.bias, policy=policy, path=PATH, seed=0, step=step)
        assert_same_bits(y, want, f"step {step}")
    assert layer.emu_context.step == 2
    layer.eval()
    assert_same_bits(layer(x), outs[2], "eval forward: no step")


def test_linear_sparsity():
    """2:4 sparsity on weights (docs/sparsity.md): the read weights with, in each group of 4
    consecutive in-features, the 2 of largest |master weight| kept (ties to the lower index; a
    last group of 1 keeps it) and the others +0; the rest as test_linear."""
    torch.manual_seed(4)
    policy = emutrain.Policy(format="bf16", acc="fp32", sparsity="2:4")
    layer = et.Linear(13, 6, policy=policy, path=PATH, context=emutrain.Context(SEED, STEP))
    unit_weights(layer)
    x, gy = odd_input((5, 13)), torch.randn(5, 6)
    got = run_layer(layer, x, gy)
    w = layer.weight.detach()
    keep = torch.zeros_like(w, dtype=torch.bool)
    for r in range(w.shape[0]):
        for g0 in range(0, 13, 4):
            group = list(range(g0, min(g0 + 4, 13)))
            ranked = sorted(group, key=lambda k: (-abs(w[r, k].item()), k))
            for k in ranked[:2]:
                keep[r, k] = True
    c = Composition(policy)
    wr = torch.where(keep, c.read(c.n.weights, w, "read_weights"), torch.zeros(()))
    xr = c.read(c.n.activations, x, "read_input")
    br = c.read(c.n.weights, layer.bias.detach(), "read_bias")
    y = emutrain.backend.gemm(xr, wr.T.contiguous(), c.n.mac, br, *c.key("forward"))
    g = c.read(c.n.grads, gy, "read_grad")
    gx = emutrain.backend.gemm(g, wr, c.bmac, None, *c.key("grad_input"))
    gw = emutrain.backend.gemm(g.T.contiguous(), xr, c.bmac, None, *c.key("grad_weight"))
    for k, want in (("y", y), ("gx", gx), ("gw", gw)):
        assert_same_bits(got[k], want, f"2:4 sparsity {k}")
    assert (wr == 0).sum() == 6 * 6  # three full groups of 4 per row lose 2 each
