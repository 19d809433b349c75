"""The CUDA backend's kernels from Python: through the host executor on any machine
(set_device("cuda-host") runs CPU tensors through backends/cuda/ops compiled for the CPU), and
on a GPU when this build has CUDA and torch sees one. Each equals the CPU backend bit for bit."""
import pytest
import torch

import emutrain
import emutrain.torch as et
from conftest import assert_same_bits

POLICY = {"format": "bf16", "acc": "fp32", "grads": "e5m2:sr", "activations": "e4m3:sr"}


def step(layer, x, gy):
    x = x.detach().clone().requires_grad_()
    y = layer(x)
    y.backward(gy)
    out = [y.detach().cpu(), x.grad.cpu(), layer.weight.grad.cpu(), layer.bias.grad.cpu()]
    layer.zero_grad()
    return out


def cases():
    torch.manual_seed(0)
    lin = et.Linear(19, 7, policy=POLICY, path="fc", context=emutrain.Context(3, 4))
    conv = et.Conv2d(3, 4, 3, padding=1, policy=POLICY, path="conv", context=emutrain.Context(3, 4))
    return [(lin, torch.randn(5, 19), torch.randn(5, 7)),
            (conv, torch.randn(2, 3, 6, 5), torch.randn(2, 4, 6, 5))]


def test_cuda_host_equals_cpu():
    if "cuda-host" not in emutrain.devices():
        pytest.skip("this build has no cuda-host device")
    for layer, x, gy in cases():
        want = step(layer, x, gy)
        emutrain.set_device("cuda-host")
        got = step(layer, x, gy)
        emutrain.set_device("cpu")
        for g, w, what in zip(got, want, ("y", "grad input", "grad weight", "grad bias")):
            assert_same_bits(g, w, f"{type(layer).__name__} {what} on cuda-host")
        q = emutrain.quantize(x, "e5m2:sr", seed=1, stream=2)
        emutrain.set_device("cuda-host")
        assert_same_bits(emutrain.quantize(x, "e5m2:sr", seed=1, stream=2), q, "quantize on cuda-host")
        emutrain.set_device("cpu")


def test_gpu_equals_cpu():
    if not torch.cuda.is_available():
        pytest.skip("no GPU visible to torch")
    for layer, x, gy in cases():
        want = step(layer, x, gy)
        layer.cuda()
        got = step(layer, x.cuda(), gy.cuda())
        assert emutrain.device() == "cuda"
        for g, w, what in zip(got, want, ("y", "grad input", "grad weight", "grad bias")):
            assert_same_bits(g, w, f"{type(layer).__name__} {what} on the GPU")
        assert_same_bits(emutrain.quantize(x.cuda(), "e5m2:sr", seed=1, stream=2).cpu(),
                         emutrain.quantize(x, "e5m2:sr", seed=1, stream=2), "quantize on the GPU")
