#!/usr/bin/env python3
"""PyTorch baseline of `emutrain bench train`: one recipe's model, batch, optimizer and threads.

    bench_pytorch.py MODEL --batch B --steps N --warmup W --threads T [--data-root DIR]
                     [--recipe RECIPE] [--set key=value ...] [--check]

MODEL is resnet18, lenet5, crnn, gcn or transformer; the recipe (default: the
shipped recipes/<model>_<data>.yaml) gives the model's arguments, the data and
the optimizer, as emutrain reads them; --batch replaces data.batch_size,
--set any key. Trains W warm-up steps, then times N optimizer steps (batch
gathered from memory, forward, cross-entropy, backward, gradient clipping
when the recipe asks, update; for gcn also the per-epoch evaluation of the
val and test nodes, since an epoch of Cora is one step and emutrain's
trainer evaluates after every epoch). Prints one human line and one
`RESULT {json}` line, with the BLAS PyTorch loaded.

--check builds the model and prints its parameter count only.
"""
import argparse
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

# The shipped recipe of each model (the one whose sizes the baselines were checked against).
DEFAULT_RECIPES = {
    "resnet18": "recipes/resnet18_cifar10.yaml",
    "lenet5": "recipes/lenet5_mnist.yaml",
    "crnn": "recipes/crnn_fra_eng.yaml",
    "gcn": "recipes/gcn_cora.yaml",
    "transformer": "recipes/transformer_forda.yaml",
}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", choices=sorted(DEFAULT_RECIPES))
    ap.add_argument("--batch", type=int, help="batch size (default: the recipe's data.batch_size)")
    ap.add_argument("--steps", type=int, default=10, help="timed optimizer steps")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps before them")
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (and the BLAS's threads)")
    ap.add_argument("--data-root", help="what $EMUTRAIN_DATA_ROOT is to emutrain (default: that variable)")
    ap.add_argument("--recipe", help="recipe YAML (default: the shipped recipe of MODEL)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="recipe override, repeatable")
    ap.add_argument("--check", action="store_true", help="print the parameter count and stop")
    ap.add_argument("--no-malloc-tuning", dest="malloc_tuning", action="store_false",
                    help="leave glibc's malloc thresholds at their defaults (emutrain raises them)")
    a = ap.parse_args(argv)
    if a.steps < 1 or a.warmup < 0 or a.threads < 1:
        ap.error("--steps and --threads must be >= 1, --warmup >= 0")
    return a


# The malloc thresholds that emutrain's CLI sets at start (core/malloc_tuning.cpp): without them
# glibc unmaps PyTorch's large buffers on free and faults them in again every step (about 2x slower
# on the ResNet-18 step), so a baseline without them flatters emutrain.
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD, TRIM_THRESHOLD = 32 << 20, 256 << 20


def tune_malloc():
    """mallopt as emutrain's keep_freed_memory_for_reuse(); a description of what was set."""
    import ctypes
    try:
        libc = ctypes.CDLL("libc.so.6")
        ok = libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
    except (OSError, AttributeError):
        ok = False
    if not ok:
        return "glibc's defaults (mallopt unavailable)"
    return f"M_MMAP_THRESHOLD {MMAP_THRESHOLD >> 20} MiB, M_TRIM_THRESHOLD {TRIM_THRESHOLD >> 20} MiB (as emutrain)"


def main(argv=None):
    a = parse_args(argv)
    malloc_note = tune_malloc() if a.malloc_tuning else "glibc's defaults (--no-malloc-tuning)"
    # Before torch loads: OpenMP and OpenBLAS read their thread counts at start-up, and
    # torch.set_num_threads does not reach a BLAS it does not know (BLAS_INFO=generic).
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, str(a.threads))
    import torch
    import torch.nn.functional as F

    import blas
    from datasets import load_train_data
    from models import build_model, build_optimizer, parameter_count
    from recipe import Recipe

    torch.set_num_threads(a.threads)
    recipe_path = a.recipe or os.path.join(REPO, DEFAULT_RECIPES[a.model])
    sets = list(a.set) + ([f"data.batch_size={a.batch}"] if a.batch else [])
    recipe = Recipe(recipe_path, sets)
    if recipe.model_type != a.model:
        sys.exit(f"bench_pytorch: {recipe_path} trains model.type {recipe.model_type}, not {a.model}")
    torch.manual_seed(recipe.seed)
    data = load_train_data(recipe, a.data_root)
    model = build_model(recipe, data.meta)
    params = parameter_count(model)
    if a.check:
        extra = model.gru_extra() if hasattr(model, "gru_extra") else 0
        note = f" ({extra} of them nn.GRU's extra hidden biases)" if extra else ""
        print(f"{a.model} ({params} parameters){note}; data: {data.description}")
        return 0
    optimizer = build_optimizer(recipe, model)
    clip = float(recipe.optimizer.get("clip_grad_norm", 0) or 0)
    trainable = [p for p in model.parameters() if p.requires_grad]

    def step(k):
        model.train()
        logits, targets = model(data.batch(k))
        loss = F.cross_entropy(logits, targets, ignore_index=-1)  # mean over the scored rows, as emutrain
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(trainable, clip)
        optimizer.step()
        if data.eval_batches and (k + 1) % data.steps_per_epoch == 0:
            model.eval()
            with torch.no_grad():
                for split, b in data.eval_batches:
                    out, t = model(b, split)
                    F.cross_entropy(out, t, ignore_index=-1).item()
        return loss.item()

    for k in range(a.warmup):
        step(k)
    start = time.perf_counter()
    for k in range(a.warmup, a.warmup + a.steps):
        last_loss = step(k)
    seconds = time.perf_counter() - start

    b = blas.detect()
    samples = recipe.batch_size * a.steps
    ms = 1e3 * seconds / a.steps
    result = {
        "model": a.model, "recipe": os.path.relpath(recipe_path, REPO) if recipe_path.startswith(REPO) else recipe_path,
        "batch": recipe.batch_size, "steps": a.steps, "warmup": a.warmup, "threads": a.threads,
        "seconds": round(seconds, 6), "samples_per_s": round(samples / seconds, 3), "ms_per_step": round(ms, 3),
        "steps_per_epoch": data.steps_per_epoch, "epoch_s": round(data.steps_per_epoch * ms / 1e3, 3),
        "eval_in_step": bool(data.eval_batches), "parameters": params, "optimizer": recipe.optimizer_type,
        "last_loss": round(last_loss, 5) if math.isfinite(last_loss) else str(last_loss),
        "data": data.description, "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
        "blas": b["blas_file"], "blas_kind": b["blas_kind"], "reference_blas": b["reference"],
        "blas_info": b["blas_info"], "mkldnn": b["mkldnn"], "openblas_core": b["openblas_core"],
        "openblas_core_forced": b["openblas_core_forced"], "malloc": malloc_note,
    }
    print(f"PyTorch {torch.__version__}, {a.threads} threads: {a.model} batch {recipe.batch_size}, "
          f"{recipe.optimizer_type}, {params} parameters: {samples / seconds:.1f} samples/s, {ms:.3f} ms/step "
          f"({a.steps} steps after {a.warmup} warm-up; loss {last_loss:.4f}); data: {data.description}")
    print(blas.describe(b))
    print(f"malloc: {malloc_note}")
    if b["warning"]:
        print(b["warning"], file=sys.stderr)
        print(b["warning"])
    print("RESULT " + json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
