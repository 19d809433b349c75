"""emutrain.train and emutrain.load_checkpoint: a recipe run from Python is the command line's
run, bit for bit, and its checkpoint loads into a PyTorch model.

The data are MNIST-format files (IDX, gzipped) written here from a fixed generator, so the
test needs no download.
"""
import gzip
import json
import struct
import subprocess

import numpy as np
import torch
from torch import nn

import emutrain
from conftest import assert_same_bits, cli


def write_mnist(root, n=96):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 10, size=n, dtype=np.uint8)
    # Images that depend on the label, so the model has something to learn.
    images = (rng.integers(0, 60, size=(n, 28, 28)) + labels[:, None, None] * 19).astype(np.uint8)
    with gzip.open(root / "t10k-images-idx3-ubyte.gz", "wb") as f:
        f.write(struct.pack(">iiii", 0x803, n, 28, 28) + images.tobytes())
    with gzip.open(root / "t10k-labels-idx1-ubyte.gz", "wb") as f:
        f.write(struct.pack(">ii", 0x801, n) + labels.tobytes())


def recipe(root):
    return {
        "name": "python_mlp",
        "model": {"type": "mlp", "hidden": [16]},
        "data": {"type": "mnist", "root": str(root), "train_source": "t10k", "train_range": [0, 64],
                 "test_source": "t10k", "test_range": [64, 96], "batch_size": 16, "workers": 1},
        "optimizer": {"type": "sgd", "lr": 0.1, "momentum": 0.9},
        "numerics": {"default": {"format": "e6m6", "acc": "fp32", "grads": "e5m2:sr"}},
        "steps": 6,
        "seed": 3,
        "logging": {"progress": "off"},
    }


def test_train_equals_command_line(tmp_path):
    write_mnist(tmp_path)
    r = recipe(tmp_path)
    summary = emutrain.train(r, set={"optimizer.lr": 0.05, "numerics.overrides": [{"match": "fc1", "format": "bf16"}]},
                             out=tmp_path / "py", quiet=True)
    assert summary["steps"] == 6 and summary["epochs"] == 2
    assert [row["epoch"] for row in summary["metrics"]] == [1, 2]
    test = summary["final"]["test"]
    assert test["counted"] == 32 and 0.0 <= test["accuracy"] <= 1.0

    path = tmp_path / "recipe.yaml"
    path.write_text(json.dumps(r))  # JSON is YAML
    subprocess.run([cli(), "train", str(path), "--set", "optimizer.lr=0.05", "--set",
                    "numerics.overrides=[{match: fc1, format: bf16}]", "--out",
                    str(tmp_path / "cli")], check=True, capture_output=True)
    a = emutrain.load_checkpoint(tmp_path / "py" / "final.safetensors")
    b = emutrain.load_checkpoint(tmp_path / "cli" / "final.safetensors")
    assert sorted(a) == sorted(b) and "model.fc0.weight" in a
    for name in a:
        assert_same_bits(a[name], b[name], name)
    with open(tmp_path / "cli" / "metrics.jsonl") as f:
        rows = [json.loads(line) for line in f]
    drop = ("time_s", "samples_per_s")  # wall-clock, not bits
    assert [{k: v for k, v in row.items() if k not in drop} for row in rows] == \
        [{k: v for k, v in row.items() if k not in drop} for row in summary["metrics"]]

    # The same file from a path, and the checkpoint as a PyTorch state dict.
    again = emutrain.train(path, set=["optimizer.lr=0.05", "numerics.overrides=[{match: fc1, format: bf16}]"],
                           out=tmp_path / "py2", quiet=True)
    assert again["final"] == summary["final"]
    state, meta = emutrain.load_checkpoint(again["final_checkpoint"], torch=True, prefix="model.", metadata=True)
    assert meta["format"] == "emutrain-checkpoint" and int(meta["step"]) == 6
    mlp = nn.Module()
    mlp.fc0, mlp.act0, mlp.fc1 = nn.Linear(784, 16), nn.ReLU(), nn.Linear(16, 10)
    mlp.load_state_dict(state)
    assert torch.equal(mlp.fc1.bias, torch.from_numpy(a["model.fc1.bias"]))
