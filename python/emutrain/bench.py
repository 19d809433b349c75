"""The cost of the binding: emutrain.torch.Linear and Conv2d (forward and backward through
torch.autograd) against the engine's own layers on the same shapes and policy, timed in C++
with nothing of Python in between (docs/python.md "Speed").

    PYTHONPATH=build/python /usr/bin/python3 -m emutrain.bench [--repeats 15] [--threads 2]

Both are timed in the same process, interleaved run by run, so a machine shared with other
work slows both alike; the ratio of the medians is the number to read.
"""
import argparse
import statistics
import time

import torch

import emutrain
import emutrain.torch as et
from emutrain import _core

CASES = [
    # kind, input shape, out features / channels, kernel
    ("linear", (32, 64), 64, 0),
    ("linear", (128, 512), 512, 0),
    ("conv2d", (2, 3, 8, 8), 8, 3),
    ("conv2d", (8, 32, 16, 16), 32, 3),
]
POLICIES = {"fp32": {}, "e6m6/fp32": {"format": "e6m6", "acc": "fp32"}}


def torch_layer_times(kind, shape, out, kernel, policy, repeats):
    if kind == "linear":
        layer = et.Linear(shape[-1], out, policy=policy, context=emutrain.Context())
    else:
        layer = et.Conv2d(shape[1], out, kernel, padding=kernel // 2, policy=policy, context=emutrain.Context())
    x = torch.randn(*shape, requires_grad=True)
    gy = torch.randn(layer(x).shape)
    seconds = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        layer(x).backward(gy)
        seconds.append(time.perf_counter() - t0)
        layer.zero_grad()
        x.grad = None
    return seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=15, help="timed runs of each, interleaved in rounds of 1")
    ap.add_argument("--threads", type=int, default=0, help="CPU backend threads (0: all)")
    args = ap.parse_args()
    emutrain.set_threads(args.threads)
    print(f"forward + backward, median of {args.repeats} interleaved runs each; emutrain threads "
          f"{args.threads or 'all'}")
    print(f"{'layer':8} {'input':18} {'out':>4} {'policy':10} {'engine ms':>10} {'torch layer ms':>15} {'ratio':>6}")
    for name, keys in POLICIES.items():
        policy = emutrain.Policy(**keys)
        for kind, shape, out, kernel in CASES:
            engine, layer = [], []
            for _ in range(args.repeats):  # interleaved: both see the same machine load
                engine += _core._bench_engine_layer(kind, list(shape), out, kernel, policy, 1)
                layer += torch_layer_times(kind, shape, out, kernel, policy, 1)
            e, t = statistics.median(engine), statistics.median(layer)
            print(f"{kind:8} {str(shape):18} {out:4} {name:10} {e * 1e3:10.3f} {t * 1e3:15.3f} {t / e:6.2f}")


if __name__ == "__main__":
    main()
