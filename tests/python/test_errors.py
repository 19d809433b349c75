"""Bad input raises a Python exception carrying the engine's one-line message, never a crash.

Where the same mistake has an answer from the command line tool, the message is compared with
the tool's (`emutrain calc --batch` answers "error: <the engine's message>").
"""
import subprocess

import numpy as np
import pytest
import torch

import emutrain
import emutrain.torch as et
from conftest import cli


def calc_error(line):
    out = subprocess.run([cli(), "calc", "--batch"], input=line + "\n", capture_output=True, text=True).stdout
    assert out.startswith("error: "), out
    return out[len("error: "):].rstrip("\n")


def test_unknown_spec():
    with pytest.raises(emutrain.FormatError) as e:
        emutrain.Format("fp7")
    assert str(e.value) == calc_error("quantize fp7 1")
    assert isinstance(e.value, ValueError)
    with pytest.raises(emutrain.FormatError) as e:
        emutrain.quantize(np.ones(3, np.float32), "e4m3:rtz:rup")
    assert str(e.value) == calc_error("quantize e4m3:rtz:rup 1")
    with pytest.raises(emutrain.FormatError, match="accumulator-only"):
        emutrain.quantize(np.ones(3, np.float32), "fp64")


def test_wrong_dtype_and_type():
    with pytest.raises(TypeError, match=r"x: array of item format 'd' .* float32"):
        emutrain.quantize(np.ones(3), "e5m2")
    with pytest.raises(TypeError, match=r"x: tensor of dtype torch.float64.*x.float\(\)"):
        emutrain.quantize(torch.ones(3, dtype=torch.float64), "e5m2")
    with pytest.raises(TypeError, match="expected a float32 NumPy array or PyTorch tensor, got list"):
        emutrain.quantize([1.0, 2.0], "e5m2")
    layer = et.Linear(4, 2).double()
    with pytest.raises(TypeError, match="weight: tensor of dtype torch.float64"):
        layer(torch.ones(3, 4))


def test_mismatched_shapes():
    layer = et.Linear(4, 2, path="head.fc")
    with pytest.raises(ValueError, match=r"^head.fc: input of shape \(3, 5\) does not end in 4 features$"):
        layer(torch.ones(3, 5))
    conv = et.Conv2d(3, 2, 3, path="stem")
    with pytest.raises(ValueError, match=r"^stem: input of shape \(1, 4, 5, 5\) does not fit weight \(2, 3, 3, 3\)"):
        conv(torch.ones(1, 4, 5, 5))
    with pytest.raises(ValueError, match=r"^stem: input of shape \(1, 3, 2, 2\) is smaller than the dilated kernel"):
        conv(torch.ones(1, 3, 2, 2))
    with pytest.raises(ValueError, match=r"^gemm: a \(2, 3\) x b \(4, 5\) -> c \(2, 5\)$"):
        emutrain.backend.gemm(np.ones((2, 3), np.float32), np.ones((4, 5), np.float32), emutrain.Policy().resolve().mac)
    with pytest.raises(ValueError, match=r"layout: want \(outer, len, inner\)"):
        emutrain.quantize(np.ones((2, 3), np.float32), "mxfp8_e4m3", layout=(1, 2, 2))


def test_device_not_built():
    with pytest.raises(ValueError, match="x: tensor on device 'meta'; emutrain runs tensors on cpu"):
        emutrain.quantize(torch.ones(3, device="meta"), "e5m2")
    with pytest.raises(RuntimeError, match=r"^unknown device 'tpu' \(this build knows: cpu, cuda-host"):
        emutrain.set_device("tpu")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the cuda device is tested in test_devices.py")
    with pytest.raises(RuntimeError, match=r"^device: cuda: "):
        emutrain.set_device("cuda")
    assert emutrain.device() == "cpu"


def test_bad_policy():
    with pytest.raises(ValueError, match=r"^numerics.default: unknown key 'formt'; allowed: format, weights"):
        emutrain.Policy(formt="e5m2")
    with pytest.raises(ValueError, match=r"^numerics.default.format: 'fp7' is not usable: bad format 'fp7'"):
        emutrain.Policy(format="fp7")
    with pytest.raises(ValueError, match=r"^numerics.default: chunk 6 is not a multiple of fused 4"):
        emutrain.Policy(fused=4, chunk=6)
    p = emutrain.Policy(chunk=8)
    with pytest.raises(ValueError, match=r"^numerics.overrides\['fc'\]: chunk 8 is not a multiple of fused 3"):
        p.override("fc", fused=3)
    assert repr(p) == "Policy(chunk='8')"  # a refused key leaves the policy as it was
    with pytest.raises(ValueError, match="split:fp32b with acc e5m2:sr"):
        emutrain.Policy(mul="split:fp32b", acc="e5m2:sr")
    with pytest.raises(ValueError, match=r"numerics.overrides\['fc'\].acc: 'mxfp4' is not usable"):
        emutrain.Policy(overrides={"fc": {"acc": "mxfp4"}})
    with pytest.raises(TypeError, match="policy key 'chunk'"):
        emutrain.Policy(chunk=object())


def test_bad_recipe_and_checkpoint(tmp_path):
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{}")
    with pytest.raises(emutrain.CheckpointError, match=r"^corrupt checkpoint .*bad.safetensors: "):
        emutrain.load_checkpoint(bad)
    with pytest.raises(emutrain.RecipeError, match="unknown model 'lenet7'"):
        emutrain.train({"model": {"type": "lenet7"}, "data": {"type": "mnist"}, "optimizer": {"type": "sgd"},
                        "epochs": 1}, out=tmp_path / "run", quiet=True)


def test_backward_twice_and_modified_input():
    layer = et.Linear(3, 2)
    x = torch.ones(2, 3, requires_grad=True)
    y = layer(x).sum()
    y.backward()
    with pytest.raises(RuntimeError):
        y.backward()  # PyTorch's own refusal: the graph was freed
    x2 = torch.ones(2, 3, requires_grad=True) * 1.0
    z = layer(x2)
    x2.add_(1.0)  # the engine's backward reads x2's memory: PyTorch refuses the stale input
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
