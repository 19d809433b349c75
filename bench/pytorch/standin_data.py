#!/usr/bin/env python3
"""Random stand-ins for the datasets that cannot be had offline, in their canonical formats.

    standin_data.py OUTDIR [--only cifar10|ucr]

writes, laid out as an $EMUTRAIN_DATA_ROOT:
    OUTDIR/cifar10/cifar-10-batches-bin/data_batch_1..5.bin, test_batch.bin
        the CIFAR-10 binary version (data/cifar10.cpp): 10,000 records of 3,073 bytes per file,
        a label byte 0..9 then 3,072 pixel bytes (3x32x32, C,H,W)
    OUTDIR/ucr/FordA/FordA_TRAIN.tsv, FordA_TEST.tsv
        UCR 2018 (data/ucr.cpp): 3,601 / 1,320 lines of a class label (-1 or 1, FordA's) and 500
        tab-separated values

so `emutrain bench train recipes/resnet18_cifar10.yaml --set data.root=OUTDIR/cifar10` (and
transformer_forda.yaml with OUTDIR/ucr) runs. Why random values do: a training step's arithmetic
and time depend on the shapes, not on the pixel or sample values. Deterministic (seeded), so two
runs write the same files; an existing complete set is left alone.
"""
import argparse
import os
import random
import sys

CIFAR_FILES = [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]
CIFAR_RECORDS = 10000  # per file
FORDA_ROWS = {"FordA_TRAIN.tsv": 3601, "FordA_TEST.tsv": 1320}
FORDA_LENGTH = 500


def write_cifar10(root, rng):
    folder = os.path.join(root, "cifar10", "cifar-10-batches-bin")
    paths = [os.path.join(folder, f) for f in CIFAR_FILES]
    if all(os.path.exists(p) and os.path.getsize(p) == CIFAR_RECORDS * 3073 for p in paths):
        return folder, False
    os.makedirs(folder, exist_ok=True)
    for name in CIFAR_FILES:
        out = bytearray(rng.randbytes(CIFAR_RECORDS * 3073))
        out[0::3073] = bytes(rng.randrange(10) for _ in range(CIFAR_RECORDS))  # labels 0..9
        tmp = os.path.join(folder, name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(out)
        os.replace(tmp, os.path.join(folder, name))
    return folder, True


def write_forda(root, rng):
    folder = os.path.join(root, "ucr", "FordA")
    if all(os.path.exists(os.path.join(folder, f)) for f in FORDA_ROWS):
        return folder, False
    os.makedirs(folder, exist_ok=True)
    for name, rows in FORDA_ROWS.items():
        tmp = os.path.join(folder, name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            for _ in range(rows):
                values = "\t".join(f"{rng.gauss(0.0, 1.0):.6f}" for _ in range(FORDA_LENGTH))
                f.write(f"{rng.choice((-1, 1))}\t{values}\n")
        os.replace(tmp, os.path.join(folder, name))
    return folder, True


WRITERS = {"cifar10": write_cifar10, "ucr": write_forda}


def write(outdir, only=None):
    """Writes the stand-ins (all, or `only`); returns {type: (folder, written_now)}."""
    done = {}
    for kind, fn in WRITERS.items():
        if only in (None, kind):
            done[kind] = fn(outdir, random.Random(f"emutrain-standin-{kind}"))
    return done


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--only", choices=sorted(WRITERS))
    a = ap.parse_args(argv)
    for kind, (folder, written) in write(a.outdir, a.only).items():
        print(f"{kind}: {folder} ({'written' if written else 'already there'}; random values, canonical format)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
