"""emutrain from Python (docs/python.md).

The numerics (Format, quantize, Policy), the backends' ops (emutrain.backend), the layers'
ops as functions (linear, conv2d, conv1d, matmul, the activations, softmax), recipes
(train) and checkpoints (load_checkpoint). emutrain.torch has PyTorch layers whose every
MAC runs through the engine, and emulate(), which puts an existing model under a policy.

Arrays are float32 NumPy arrays or PyTorch tensors; results come back as the type of the
first array argument.
"""

import json as _json
import os as _os

from . import _core
from ._core import (
    CheckpointError,
    Context,
    DrawSite,
    Format,
    FormatError,
    Mac,
    NonFiniteLoss,
    Numerics,
    Policy,
    RecipeError,
    backend,
    device,
    devices,
    layer_draw_key,
    quantize,
    set_device,
    set_threads,
    threads,
)

__all__ = [
    "CheckpointError", "Context", "DrawSite", "Format", "FormatError", "Mac", "NonFiniteLoss", "Numerics",
    "Policy", "RecipeError", "backend", "conv1d", "conv2d", "device", "devices", "gelu", "layer_draw_key",
    "linear", "load_checkpoint", "log_softmax", "matmul", "policy", "quantize", "relu", "set_device",
    "set_threads", "sigmoid", "silu", "softmax", "tanh", "threads", "train"
]


def policy(spec=None, **keys):
    """A Policy from a Policy (returned as it is), a dict of policy keys, a format spec
    string (the `format` key: weights, activations, grads, mul, acc and out), or keywords."""
    if isinstance(spec, Policy):
        if keys:
            raise TypeError("policy: give a Policy or keys, not both")
        return spec
    if isinstance(spec, dict):
        return Policy(**{**spec, **keys})
    if isinstance(spec, (str, Format)):
        return Policy(format=spec, **keys)
    if spec is None:
        return Policy(**keys)
    raise TypeError(f"policy: a Policy, a dict of policy keys or a format spec, got {type(spec).__name__}")


def _host(policy_, path, seed, step):
    return _core.LayerHost(path, policy(policy_), Context(seed, step))


# --- the layers' ops as functions: one forward call of the engine's layer, no gradients.
# `path`, `seed` and `step` key the reads and random draws as they would a layer of a model at
# that path (core/draw_key.h); the policy resolves at `path` (its overrides apply).


def linear(x, weight, bias=None, *, policy=None, path="", seed=0, step=0):
    """x (..., in), weight (out, in), bias (out) -> (..., out): layers/linear.h under the policy
    (x read as activations, weight and bias as weights, every product and sum emulated)."""
    return _core.layer_linear(_host(policy, path, seed, step), x, weight, bias, [False] * 3, False)[0]


def matmul(a, b, *, policy=None, path="", seed=0, step=0):
    """a (..., K), b (K, N) -> (..., N): linear(a, b.T); a is read as activations, b as weights."""
    return linear(a, b.T, policy=policy, path=path, seed=seed, step=step)


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *, policy=None, path="", seed=0,
           step=0):
    """x (N, C_in, H, W), weight (C_out, C_in/groups, KH, KW) -> (N, C_out, OH, OW): layers/conv2d.h."""
    return _core.layer_conv2d(_host(policy, path, seed, step), x, weight, bias, stride, padding, dilation, groups,
                              [False] * 3, False)[0]


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *, policy=None, path="", seed=0,
           step=0):
    """x (N, C_in, L), weight (C_out, C_in/groups, KL) -> (N, C_out, OL): layers/conv1d.h."""
    return _core.layer_conv1d(_host(policy, path, seed, step), x, weight, bias, stride, padding, dilation, groups,
                              [False] * 3, False)[0]


def _activation(kind):

    def f(x, *, policy=None, path="", seed=0, step=0):
        return _core.layer_activation(_host(policy, path, seed, step), kind, x, [False], False)[0]

    f.__name__ = kind
    f.__doc__ = f"x -> R_out({kind}(x)) element-wise (layers/activation.h; functions.{kind} of the policy applies)"
    return f


relu, gelu, silu, tanh, sigmoid = (_activation(k) for k in ("relu", "gelu", "silu", "tanh", "sigmoid"))


def softmax(x, *, policy=None, path="", seed=0, step=0):
    """Softmax over the last dimension (layers/softmax.h)."""
    return _core.layer_softmax(_host(policy, path, seed, step), x, False, [False], False)[0]


def log_softmax(x, *, policy=None, path="", seed=0, step=0):
    """Log-softmax over the last dimension (layers/softmax.h)."""
    return _core.layer_softmax(_host(policy, path, seed, step), x, True, [False], False)[0]


# --- recipes and checkpoints


def _set_assignment(key, value):
    if isinstance(value, str):
        return f"{key}={value}"
    if value is None:
        return f"{key}=null"
    return f"{key}={_json.dumps(value)}"  # JSON is YAML: numbers, true/false, [lists], {maps}


def train(recipe, set=None, *, out=None, resume=None, quiet=False):
    """Runs the trainer of `emutrain train` (docs/recipes.md) and returns its metrics.

    recipe: a recipe file, or a dict holding a recipe. set: {"optimizer.lr": 0.05, ...} or a list
    of "key=value" strings, applied after the recipe as --set does. out: the run directory
    (default runs/<name>-<time>). resume: a checkpoint or run directory to continue.
    Log lines go to sys.stdout unless quiet.

    Returns a dict: run_dir, final_checkpoint, steps, epochs, seconds, final ({split: {loss,
    accuracy, counted}} of the last epoch) and metrics (the rows of metrics.jsonl, one per epoch).
    """
    if set is None:
        sets = []
    elif isinstance(set, dict):
        sets = [_set_assignment(k, v) for k, v in set.items()]
    else:
        sets = [str(s) for s in set]
    if isinstance(recipe, dict):
        text, is_text = _json.dumps(recipe), True
    else:
        text, is_text = _os.fspath(recipe), False
    summary = _core._train(text, is_text, sets, "" if out is None else _os.fspath(out),
                           "" if resume is None else _os.fspath(resume), quiet)
    rows = []
    metrics = _os.path.join(summary["run_dir"], "metrics.jsonl")
    if _os.path.exists(metrics):
        with open(metrics) as f:
            rows = [_json.loads(line) for line in f if line.strip()]
    summary["metrics"] = rows
    return summary


def load_checkpoint(path, *, torch=False, prefix=None, metadata=False):
    """The tensors of a safetensors checkpoint (train/checkpoint.h) as {name: float32 array}.

    torch=True gives torch tensors (no copy). prefix="model." keeps the names under that prefix,
    without it: a state dict for a PyTorch model with the same module names. metadata=True
    returns (tensors, metadata) with the file's metadata (recipe, step, seed, ...).
    """
    tensors, meta = _core._read_checkpoint(_os.fspath(path))
    if prefix is not None:
        tensors = {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}
    if torch:
        import torch as _torch
        tensors = {k: _torch.from_numpy(v) for k, v in tensors.items()}
    return (tensors, meta) if metadata else tensors
