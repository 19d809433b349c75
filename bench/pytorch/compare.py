#!/usr/bin/env python3
"""emutrain against PyTorch on one recipe, in the same run: the ratio table of issue 17.

    compare.py RECIPE [--steps N] [--warmup 2] [--threads 2] [--emutrain PATH] [--before PATH]
               [--policy fp32,e6m6/fp32] [--set key=value ...] [--epochs E] [--python PY]

Runs, one after the other on the same machine,
    emutrain bench train RECIPE --steps N --warmup W --policy P --set threads=T --no-profile --set ...
    bench_pytorch.py MODEL --steps N --warmup W --threads T --recipe RECIPE --set ...
(same model, batch, optimizer, data and threads: bench_pytorch reads the recipe and the --set
overrides as emutrain does), and prints per policy emutrain's ms/step, PyTorch's, and their
ratio, per step, per epoch (steps per epoch x step time, the recipe's training set and batch),
and for --epochs E epochs; then the BLAS PyTorch runs on and its malloc settings (emutrain's
thresholds, core/malloc_tuning.cpp). --before PATH also runs a second emutrain binary (an older
build) right before the first, so that one run gives the before and after columns.

Data: what the recipe reads (data.root, else $EMUTRAIN_DATA_ROOT/<type>). CIFAR-10 and FordA,
which cannot be had offline, are replaced when missing by random files of the canonical format
(standin_data.py, under --standin-dir), and the table says so.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from recipe import DATA_SUBFOLDER, Recipe  # noqa: E402  (after the path)
import standin_data  # noqa: E402


def data_present(recipe):
    """Whether the files the recipe's loader reads are there (data/registry.cpp's roots)."""
    root, t = recipe.data_root(), recipe.data_type
    ex = os.path.exists
    if t == "cifar10":
        return ex(os.path.join(root, "cifar-10-batches-bin", "data_batch_1.bin")) or ex(os.path.join(root, "data_batch_1.bin"))
    if t == "ucr":
        name = recipe.data.get("name", "FordA")
        return ex(os.path.join(root, name, f"{name}_TRAIN.tsv")) or ex(os.path.join(root, f"{name}_TRAIN.tsv"))
    if t == "mnist":
        src = recipe.data.get("train_source", "train")
        base = os.path.join(root, f"{src}-images-idx3-ubyte")
        return ex(base) or ex(base + ".gz")
    if t == "cora":
        return ex(os.path.join(root, "cora.content"))
    if t == "fra_eng":
        return ex(os.path.join(root, "fra.txt"))
    return True


def find_emutrain(given):
    if given:
        return given
    if os.environ.get("EMUTRAIN"):
        return os.environ["EMUTRAIN"]
    built = [os.path.join(REPO, d, "emutrain") for d in ("build", "build-host")]
    built = [p for p in built if os.access(p, os.X_OK)]
    if built:
        return max(built, key=os.path.getmtime)  # the newest build
    on_path = shutil.which("emutrain")
    if on_path:
        return on_path
    sys.exit("compare: no emutrain found (give --emutrain PATH, or build it: cmake --build build)")


def has_torch(python):
    try:
        return subprocess.run([python, "-c", "import torch"], capture_output=True).returncode == 0
    except OSError:
        return False


def find_python(given):
    """An interpreter that imports torch: --python, this one, else Debian's /usr/bin/python3
    (python3-torch installs there; a pyenv or venv python3 first on PATH does not see it)."""
    for p in ([given] if given else [sys.executable, "/usr/bin/python3"]):
        if p and has_torch(p):
            return p
    sys.exit("compare: no Python with torch (apt-get install python3-torch, then run with /usr/bin/python3, "
             "or give --python PATH)")


def run(cmd, env=None):
    """Runs cmd, echoing it and its output (indented); exits on failure."""
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    for line in (p.stdout + p.stderr).splitlines():
        print("  " + line)
    if p.returncode != 0:
        sys.exit(f"compare: {cmd[0]} failed (exit {p.returncode})")
    return p.stdout


def parse_emutrain(out, policies):
    """{policy: (samples_per_s, ms_per_step)} from bench train's table."""
    rows = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0] in policies and re.fullmatch(r"[\d.]+x", parts[-1]):
            rows[parts[0]] = (float(parts[1]), float(parts[2]))
    missing = [p for p in policies if p not in rows]
    if missing:
        sys.stderr.write(out)
        sys.exit(f"compare: no row for {', '.join(missing)} in emutrain's table")
    return rows


def parse_pytorch(out):
    for line in out.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    sys.stderr.write(out)
    sys.exit("compare: bench_pytorch printed no RESULT line")


def fmt_time(ms):
    return f"{ms:.1f} ms" if ms < 1000 else f"{ms / 1e3:.2f} s"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("recipe")
    ap.add_argument("--steps", type=int, default=10, help="timed steps on each side")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps before them")
    ap.add_argument("--threads", type=int, default=2, help="threads on each side")
    ap.add_argument("--emutrain", help="the emutrain binary (default: $EMUTRAIN, build/ or build-host/, PATH)")
    ap.add_argument("--before", help="an older emutrain binary, timed in the same run (columns 'before')")
    ap.add_argument("--policy", default="fp32,e6m6/fp32", help="emutrain policies, comma-separated")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="recipe override, both sides")
    ap.add_argument("--epochs", type=int, help="also print the time of this many epochs (issue 17: GCN 200)")
    ap.add_argument("--python", help="interpreter for bench_pytorch.py (default: one that imports torch)")
    ap.add_argument("--standin-dir", default=os.path.join(tempfile.gettempdir(), "emutrain-standin"),
                    help="where stand-in CIFAR-10 / FordA files go when the real ones are missing")
    a = ap.parse_args(argv)
    policies = [p for p in a.policy.split(",") if p]

    sets = list(a.set)
    recipe = Recipe(a.recipe, sets)
    data_note = f"data: {recipe.data_type} at {recipe.data_root()}"
    if not data_present(recipe):
        if recipe.data_type not in standin_data.WRITERS or recipe.data.get("name", "FordA") != "FordA":
            sys.exit(f"compare: {recipe.data_type} data not found at {recipe.data_root()} "
                     f"(set EMUTRAIN_DATA_ROOT or --set data.root=..., or `emutrain data fetch`)")
        folder, _ = standin_data.write(a.standin_dir, recipe.data_type)[recipe.data_type]
        sets.append(f"data.root={os.path.join(a.standin_dir, DATA_SUBFOLDER[recipe.data_type])}")
        recipe = Recipe(a.recipe, sets)
        data_note = (f"data: stand-in data of the canonical shapes (random values, standin_data.py) at {folder}; "
                     f"no {recipe.data_type} at the recipe's root")

    emutrain = find_emutrain(a.emutrain)
    python = find_python(a.python)
    common = [a.recipe, "--steps", str(a.steps), "--warmup", str(a.warmup)]
    set_args = [x for s in sets for x in ("--set", s)]
    binaries = ([("before", a.before)] if a.before else []) + [("emutrain", emutrain)]
    emu = {}  # (label, policy) -> (samples_per_s, ms_per_step)
    for label, binary in binaries:
        emu_out = run([binary, "bench", "train", *common, "--policy", ",".join(policies),
                       "--set", f"threads={a.threads}", "--no-profile", *set_args])
        for p, v in parse_emutrain(emu_out, policies).items():
            emu[(label, p)] = v
    py_out = run([python, os.path.join(HERE, "bench_pytorch.py"), recipe.model_type, "--steps", str(a.steps),
                  "--warmup", str(a.warmup), "--threads", str(a.threads), "--recipe", a.recipe, *set_args])
    pt = parse_pytorch(py_out)
    machine = next((l for l in emu_out.splitlines() if l.startswith("machine:")), "machine: ?")
    cols = [(label, p) for label, _ in binaries for p in policies]

    spe, pt_ms = pt["steps_per_epoch"], pt["ms_per_step"]
    rows = [(f"step (batch {pt['batch']})", 1)]
    if spe > 1:
        rows.append((f"epoch ({spe} steps)", spe))
    if a.epochs:
        rows.append((f"{a.epochs} epochs ({a.epochs * spe} steps)", a.epochs * spe))
    name = os.path.splitext(os.path.basename(a.recipe))[0]
    print()
    print(f"{name}: {recipe.model_type}, batch {pt['batch']}, {pt['optimizer']}, {a.threads} threads each, "
          f"{a.warmup} warm-up + {a.steps} timed steps each; {machine}")
    print(data_note)
    if pt["eval_in_step"]:
        print("each step includes the per-epoch evaluation of the val and test splits (one step is one epoch), "
              "on both sides")
    head = f"{'workload':<28}" + "".join(f"{l + ' ' + p:>22}" for l, p in cols) + f"{'PyTorch fp32':>16}"
    head += "".join(f"{(p if l == 'emutrain' else l + ' ' + p) + ' / PyTorch':>24}" for l, p in cols)
    print(head)
    for label, k in rows:
        line = f"{label:<28}" + "".join(f"{fmt_time(k * emu[c][1]):>22}" for c in cols)
        line += f"{fmt_time(k * pt_ms):>16}" + "".join(f"{emu[c][1] / pt_ms:>23.2f}x" for c in cols)
        print(line)
    print(f"PyTorch {pt['torch']}: BLAS {pt['blas_kind']} "
          f"({'the REFERENCE BLAS' if pt['reference_blas'] else 'not the reference BLAS'}), {pt['blas']}"
          f"{', kernel ' + pt['openblas_core'] if pt.get('openblas_core') else ''}; "
          f"oneDNN {'on' if pt['mkldnn'] else 'off'}; parameters {pt['parameters']}; malloc: {pt.get('malloc', '?')}")
    if pt["reference_blas"]:
        print("WARNING: the reference BLAS is about ten times slower than OpenBLAS; see bench_pytorch.py's "
              "warning above for the Debian commands")
    summary = {"recipe": a.recipe, "model": recipe.model_type, "batch": pt["batch"], "threads": a.threads,
               "steps": a.steps, "warmup": a.warmup, "steps_per_epoch": spe, "pytorch_ms_per_step": pt_ms,
               "emutrain_ms_per_step": {p: emu[("emutrain", p)][1] for p in policies},
               "ratio": {p: round(emu[("emutrain", p)][1] / pt_ms, 4) for p in policies}, "blas": pt["blas"],
               "malloc": pt.get("malloc"), "openblas_core": pt.get("openblas_core"),
               "blas_kind": pt["blas_kind"], "reference_blas": pt["reference_blas"], "torch": pt["torch"],
               "standin_data": "stand-in" in data_note}
    if a.before:
        summary["before_ms_per_step"] = {p: emu[("before", p)][1] for p in policies}
        summary["before_ratio"] = {p: round(emu[("before", p)][1] / pt_ms, 4) for p in policies}
    print("COMPARE " + json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
