#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target into tests/fuzz/corpus/<target>/
(docs/sanitize.md). Seeds are small valid inputs of each kind (plus a few
malformed ones), written here from the formats' definitions; the recipes and
sweeps are the repository's own. Regression inputs that a campaign found are
kept beside them as regress-* files, which this script leaves alone.

    python3 tests/fuzz/make_corpus.py
"""
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SEP = b"\n==EMUFUZZ-NEXT-FILE==\n"  # kFileSeparator in fuzz_support.h


def put(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def format_specs():
    specs = ["fp32", "fp16", "bf16", "fp64", "e4m3", "e5m2:sr", "e6m6", "e4m3:nosub:sat:rtz", "fp16:rna",
             "fp8_e4m3", "fp8_e5m2", "fp4_e2m1", "posit16_1", "posit8_0", "fixed16_8:sat", "fixed8_4:wrap",
             "int8", "int32", "mxfp8_e4m3", "mxfp6_e2m3", "mxfp4", "mxint8", "nvfp4", "bfp8_b16", "afp4m3",
             "e11m52", "e5m0", "e4m3:rtz:rup", "posit3_2", "e9m3"]
    for i, s in enumerate(specs):
        put("format_spec", f"{i:02d}", s)


def calc_lines():
    lines = ["mul fp8_e4m3 0.1 0.3", "add fp16 1 2", "sub fp16:rdn 1 1", "div posit16_1 1 0", "sqrt bf16 2",
             "mul fp16:rtz 3 0x3eaaaaab", "decode fp16 0x3c00", "decode fixed8_4 0xf3", "decode fp4_e2m1 0xf",
             "dot exact fp32 fp32 1 2 3 4", "dot exact int32 fp32 100000 100000 1 1",
             "dot fp16 fp32 bf16 chunk=2 outer=fp32 1 2 3 4 5 6", "dot exact fp32:rtz fp32 fused=4 1 2 3 4",
             "dot split:auto fp32 fp32 1.5 2.25 0x7f7fffff 3", "mul e4m3:sr 0.3 0.7", "add e9m3 1 2",
             "mul fp16 inf nan", "dot exact fp32 fp32 bias=1 2 3"]
    for i, s in enumerate(lines):
        put("calc_line", f"{i:02d}", s)


def recipes():
    rd = os.path.join(ROOT, "recipes")
    for name in sorted(os.listdir(rd)):
        if name.endswith(".yaml"):
            text = open(os.path.join(rd, name), "rb").read()
            put("recipe", name, text)
    lenet = open(os.path.join(rd, "lenet5_mnist.yaml"), "rb").read()
    put("recipe", "lenet5_with_sets", lenet + SEP + b"optimizer.lr=0.05\nnumerics.default.mul=e4m3:sr\n"
        b"schedule.type=cosine\nsteps=10\nnumerics.overrides.0.format=fp32\n")
    put("recipe", "removal", lenet + SEP + b"schedule=null\nepochs=~\n")
    sd = os.path.join(rd, "sweeps")
    for name in sorted(os.listdir(sd)):
        put("sweep", name, open(os.path.join(sd, name), "rb").read())
    put("sweep", "zip_and_vars", "recipe: gcn_cora.yaml\naxes:\n  - zip:\n      - {name: e, values: [4, 5]}\n"
        "      - {name: m, values: [3, 2]}\n  - {name: numerics.default.mul, values: ['e{e}m{m}', fp32]}\n"
        "vars: {fmt: 'e{e}m{m}'}\nrepeats: 2\nlabel: '{fmt}'\n")


def safetensors(tensors, meta=None, pad=True):
    header = {}
    data = b""
    for name, (shape, values) in tensors.items():
        raw = struct.pack("<%df" % len(values), *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if meta is not None:
        header["__metadata__"] = meta
    h = json.dumps(header).encode()
    if pad:
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def checkpoints():
    put("safetensors", "two", safetensors({"fc.weight": ([2, 3], [1, 2, 3, 4, 5, 6]), "fc.bias": ([2], [0.5, -1])},
                                          {"format": "pt", "step": "3"}))
    put("safetensors", "scalar", safetensors({"s": ([], [7])}))
    put("safetensors", "empty", safetensors({}))
    put("safetensors", "zero_dim", safetensors({"z": ([0, 4], [])}))
    put("safetensors", "truncated", safetensors({"w": ([4], [1, 2, 3, 4])})[:-3])
    for i, doc in enumerate(['{"a": [1, 2.5e-3, -0, true, false, null], "b": {"c": "\\u00e9\\ud83d\\ude00\\n"}}',
                             '[]', '"x"', '123456789012345678901234567890', '{"dtype": "F32", "shape": [2, 3], '
                             '"data_offsets": [0, 24]}', '{"a": 1, "a": 2}', '[1,]', '  {"k": "\\"\\\\\\/\\b\\f\\r\\t"}  ']):
        put("json", f"{i:02d}", doc)


def be32(v):
    return struct.pack(">I", v)


def mnist():
    images = be32(0x803) + be32(2) + be32(4) + be32(4) + bytes(range(32))
    labels = be32(0x801) + be32(2) + bytes([3, 9])
    put("mnist", "two", images + SEP + labels)
    put("mnist", "empty", be32(0x803) + be32(0) + be32(28) + be32(28) + SEP + be32(0x801) + be32(0))
    put("mnist", "bad_label", images + SEP + be32(0x801) + be32(2) + bytes([3, 10]))
    import gzip
    put("mnist", "gzipped", gzip.compress(images, mtime=0) + SEP + gzip.compress(labels, mtime=0))


def cifar():
    rec = lambda label, seed: bytes([label]) + bytes((seed + i) % 256 for i in range(3072))
    put("cifar10", "two", rec(0, 1) + rec(9, 2))
    put("cifar10", "one", rec(5, 7))
    put("cifar10", "partial", rec(1, 3)[:100])


def ucr():
    train = "-1\t0.5\t-1.25\t3\n1\t1e-3\t2\t-0.5\n-1\t0\t0\t0\n"
    test = "1\t0.25\t0.5\t0.75\n-1\t-1\t-2\t-3\n"
    put("ucr", "small", train + SEP.decode() + test)
    put("ucr", "crlf", train.replace("\n", "\r\n") + SEP.decode() + test)
    put("ucr", "ragged", train + "1\t2\n" + SEP.decode() + test)


def cora():
    content = "".join(f"{p}\t{' '.join(str((p * 7 + k) % 3 == 0 and 1 or 0) for k in range(6))}\t"
                      f"{['Theory', 'Neural_Networks', 'Rule_Learning'][p % 3]}\n".replace(" ", "\t")
                      for p in range(10, 19))
    cites = "10\t11\n11\t12\n12\t10\n13\t14\n15\t15\n16\t17\n18\t10\n"
    put("cora", "small", content + SEP.decode() + cites)
    put("cora", "unknown_paper", content + SEP.decode() + cites + "99\t10\n")


def fra():
    text = ("Go.\tVa !\tCC-BY 2.0 (France) Attribution: tatoeba.org #2877272 (CM)\n"
            "Hi.\tSalut !\n" "Run!\tCours\u202f!\n" "Who?\tQui ?\n" "Wow!\t\u00c7a alors\u2009!\n"
            "I'm OK.\tJe vais bien.\n" "Help me.\tAide-moi.\n" "We won.\tNous avons gagn\u00e9.\n")
    put("fra", "small", text)
    put("fra", "chars", "\x01" + text)
    put("fra", "two_columns_bad", "only one column\n")


def block_decode():
    import random
    rng = random.Random(1)
    for spec in ["mxfp8_e4m3", "mxfp4", "nvfp4", "bfp8_b16", "afp4m3", "mxint8", "mxfp6_e3m2"]:
        header = bytes([2, 9, 1, 4, 3])
        codes = b"".join(struct.pack("<I", rng.randrange(0, 256)) for _ in range(6 + 18))
        put("block_decode", spec, spec.encode() + b"\n" + header + codes)


def main():
    format_specs()
    calc_lines()
    recipes()
    checkpoints()
    mnist()
    cifar()
    ucr()
    cora()
    fra()
    block_decode()
    return 0


if __name__ == "__main__":
    sys.exit(main())
