"""The five-minute example of docs/python.md: quantize a tensor, put a torchvision-style ResNet
under e6m6 with an fp32 accumulator, train it for an epoch from a plain PyTorch loop, and
compare with the same model in PyTorch's float32.

    PYTHONPATH=build/python /usr/bin/python3 python/examples/five_minutes.py [MNIST_DIR]

MNIST_DIR holds t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz (default:
$EMUTRAIN_DATA_ROOT/mnist, else ../shared/data/mnist, else data/mnist; `emutrain data fetch
mnist` downloads them). Of the MNIST test set, images 0..3999 are trained on (one epoch,
batches of 32) and 8000..9999 held out.
"""
import gzip
import os
import sys
import time

import numpy as np
import torch
from torch import nn

import emutrain
import emutrain.torch as et

# --- 1. Quantize a tensor: every format of the command line, the engine's rounding -----------
x = torch.tensor([0.1, 1 / 3, 1000.0, -2.5e-5, 3.0e6])
e6m6 = emutrain.Format("e6m6")
print(f"{e6m6.name}: max {e6m6.max:g}, min normal {e6m6.min_normal:g}, epsilon {e6m6.epsilon:g}, "
      f"{e6m6.codes['finite']} finite codes")
print("x           ", x.tolist())
print("e6m6        ", emutrain.quantize(x, "e6m6").tolist())
print("e6m6:sr     ", emutrain.quantize(x, "e6m6:sr", seed=1).tolist())
print("fp8_e4m3    ", emutrain.quantize(x, "fp8_e4m3").tolist())


# --- 2. A torchvision-style ResNet (torchvision's BasicBlock and module names) ----------------
class BasicBlock(nn.Module):

    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    """torchvision's ResNet layout, two stages of one BasicBlock, narrow (8 and 16 channels) so
    that an emulated epoch takes minutes on two cores; a 4x4 average pool keeps some position."""

    def __init__(self, widths=(8, 16), classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, widths[0], 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = nn.Sequential(BasicBlock(widths[0], widths[0]))
        self.layer2 = nn.Sequential(BasicBlock(widths[0], widths[1], stride=2))
        self.avgpool = nn.AdaptiveAvgPool2d(4)
        self.fc = nn.Linear(widths[1] * 16, classes)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(self.avgpool(x), 1))


# --- 3. MNIST (the test set, read by path) ------------------------------------------------------
def mnist_dir():
    if len(sys.argv) > 1:
        return sys.argv[1]
    for d in (os.path.join(os.environ.get("EMUTRAIN_DATA_ROOT", ""), "mnist"), "../shared/data/mnist", "data/mnist"):
        if os.path.exists(os.path.join(d, "t10k-images-idx3-ubyte.gz")):
            return d
    sys.exit("MNIST not found: give its folder (emutrain data fetch mnist downloads it)")


def load_mnist(d):
    with gzip.open(os.path.join(d, "t10k-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(os.path.join(d, "t10k-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    x = (torch.from_numpy(images.astype(np.float32)) / 255 - 0.1307) / 0.3081
    return x, torch.from_numpy(labels.astype(np.int64))


def run(policy, x, y, train=4000, batch=32):
    """One epoch on images 0..train-1, then accuracy on 8000..9999; policy None: plain PyTorch."""
    torch.manual_seed(0)
    model = ResNet()
    if policy is not None:
        report = et.emulate(model, policy, seed=0)
        print(report)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    order = torch.randperm(train, generator=torch.Generator().manual_seed(0))
    t0 = time.perf_counter()
    model.train()
    for i in range(0, train, batch):
        idx = order[i:i + batch]
        loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    seconds = time.perf_counter() - t0
    model.eval()
    with torch.no_grad():
        logits = torch.cat([model(x[i:i + 500]) for i in range(8000, 10000, 500)])
    acc = (logits.argmax(1) == y[8000:]).float().mean().item()
    return model, loss.item(), acc, seconds, logits


x, y = load_mnist(mnist_dir())
ref, ref_loss, ref_acc, ref_s, ref_logits = run(None, x, y)
low, low_loss, low_acc, low_s, low_logits = run({"format": "e6m6", "acc": "fp32"}, x, y)
print(f"PyTorch float32:   last loss {ref_loss:.4f}, held-out accuracy {100 * ref_acc:.2f}%, epoch {ref_s:.1f} s")
print(f"emutrain e6m6/fp32: last loss {low_loss:.4f}, held-out accuracy {100 * low_acc:.2f}%, epoch {low_s:.1f} s")
agree = (ref_logits.argmax(1) == low_logits.argmax(1)).float().mean().item()
print(f"the two agree on {100 * agree:.2f}% of the held-out predictions; fc.weight differs by "
      f"{(low.fc.weight - ref.fc.weight).norm() / ref.fc.weight.norm():.3%} (relative L2)")
