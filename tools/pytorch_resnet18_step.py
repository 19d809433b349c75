#!/usr/bin/env python3
"""PyTorch baseline of `emutrain bench train recipes/resnet18_cifar10.yaml`.

The same CIFAR ResNet-18 as models/resnet18.cpp (3x3 stem, no max-pool, four
stages of two BasicBlocks, global average pool, fc), the same optimizer
(SGD, momentum 0.9, Nesterov, weight decay 5e-4) and batch size, on random
CIFAR-shaped inputs, with TF32 off (IEEE binary32 products, the fair native
baseline of an emulator). Prints samples/s and the step time.

    python3 tools/pytorch_resnet18_step.py [--batch 128] [--steps 20] [--device cuda]

tools/gpu_check.sh runs it where PyTorch with CUDA is installed.
"""
import argparse
import os
import sys
import time

import torch
from torch import nn

# The model of bench/pytorch/models.py (the PyTorch baselines of issue 17), one definition.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench", "pytorch"))
from models import ResNet18  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    dev = torch.device(a.device)
    model = ResNet18().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4)
    x = torch.randn(a.batch, 3, 32, 32, device=dev)
    y = torch.randint(0, 10, (a.batch,), device=dev)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        logits, target = model({"x": x, "y": y})  # models.py: (logits, the batch targets)
        loss_fn(logits, target).backward()
        opt.step()

    for _ in range(a.warmup):
        step()
    if dev.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(a.steps):
        step()
    if dev.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    print(f"PyTorch {torch.__version__} on {name}, TF32 off: ResNet-18 CIFAR, batch {a.batch}")
    print(f"{a.batch * a.steps / seconds:.1f} samples/s, {1e3 * seconds / a.steps:.3f} ms/step "
          f"({a.steps} steps after {a.warmup} warm-up)")


if __name__ == "__main__":
    main()
