"""Training data for the PyTorch baselines, of the recipes' shapes, in emutrain's order.

Where the repository's loaders find their files (data.root, else
$EMUTRAIN_DATA_ROOT/<type folder>, else ./data/<type folder>), the same files
are read the same way (data/mnist.cpp, cifar10.cpp, ucr.cpp, cora.cpp,
fra_eng.cpp + text.cpp + vocab.cpp): same training examples (ranges, val_size
hold-out and Cora/fra_eng splits drawn by the same Philox keys, philox.py),
same normalisation, and the batches of `emutrain bench train` in the same
order (the loader's shuffle of epoch e). Where they are missing, random
tensors of the canonical shapes (CIFAR-10 3x32x32, 50,000 images; FordA 2,881
training series of 500 steps; Cora's and fra_eng's sizes as the shipped
recipes see them): a step's arithmetic does not depend on the values, except
the CRNN's, whose padded lengths vary by batch (documented in
docs/bench_pytorch.md).

Not reproduced: the loader's augmentation (random crop and flip of CIFAR-10)
and its decode cost; the baselines gather each batch from tensors in memory.
"""
import gzip
import math
import os
import random
import struct

import torch

from philox import SPLIT, data_stream, epoch_order, philox_permutation

MNIST_MEAN, MNIST_STD = [0.1307], [0.3081]
CIFAR_MEAN, CIFAR_STD = [0.4914, 0.4822, 0.4465], [0.2470, 0.2435, 0.2616]


class TrainData:
    """The training split: `size` examples, `meta` (the sizes a model is built from), batch(step)."""

    def __init__(self, description, size, meta, batch_size, seed, make_batch, shuffle=True, real=True):
        self.description, self.size, self.meta = description, size, meta
        self.batch_size, self.seed, self.shuffle, self.real = batch_size, seed, shuffle, real
        self._make = make_batch
        self._orders = {}
        self.eval_batches = []  # (split, batch) run in evaluation mode after every epoch (Cora)

    @property
    def steps_per_epoch(self):
        return math.ceil(self.size / self.batch_size)  # drop_last: false, as every shipped recipe

    def indices(self, step):
        """The examples of global step `step` (0-based), as emutrain's DataLoader picks them."""
        epoch, b = divmod(step, self.steps_per_epoch)
        if self.real:
            if epoch not in self._orders:
                self._orders[epoch] = epoch_order(self.size, self.seed, epoch, self.shuffle)
            order = self._orders[epoch]
        else:
            order = range(self.size)  # random values: any order costs the same
        return list(order[b * self.batch_size:(b + 1) * self.batch_size])

    def batch(self, step):
        return self._make(self.indices(step))


# --- helpers ----------------------------------------------------------------------------

def _open_maybe_gz(path):
    if os.path.exists(path + ".gz"):
        return gzip.open(path + ".gz", "rb")
    return open(path, "rb")


def _exists_maybe_gz(path):
    return os.path.exists(path) or os.path.exists(path + ".gz")


def _normalize(u8, mean, std):
    """(N, C, H, W) uint8 -> (p/255 - mean) / std per channel, float32."""
    x = u8.float().div_(255.0)
    m = torch.tensor(mean).view(1, -1, 1, 1)
    s = torch.tensor(std).view(1, -1, 1, 1)
    return (x - m) / s


def _example_split(data, size):
    """data/registry.cpp example_split for the training split: train_range, then val_size held out."""
    r = data.get("train_range")
    idx = list(range(int(r[0]), int(r[1]))) if r else list(range(size))
    val = int(data.get("val_size", 0) or 0)
    if val > 0:
        perm = philox_permutation(len(idx), int(data.get("split_seed", 0) or 0), data_stream(SPLIT, 0))
        idx = [idx[c] for c in sorted(perm[val:])]
    return idx


def _gather(tensors, idx):
    """Batch of the examples idx of in-memory tensors (a dict of name -> (M, ...) tensors)."""
    t = torch.tensor(idx, dtype=torch.long)
    return {k: v.index_select(0, t) for k, v in tensors.items()}


# --- mnist ------------------------------------------------------------------------------

def _read_idx(path, magic):
    with _open_maybe_gz(path) as f:
        b = f.read()
    if struct.unpack(">I", b[:4])[0] != magic:
        raise ValueError(f"{path}: not an IDX file of magic {magic:#x}")
    ndims = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndims, b[4:4 + 4 * ndims])
    return torch.frombuffer(bytearray(b[4 + 4 * ndims:]), dtype=torch.uint8).view(*dims)


def mnist(recipe, root, batch):
    data, src = recipe.data, recipe.data.get("train_source", "train")
    images, labels = os.path.join(root, f"{src}-images-idx3-ubyte"), os.path.join(root, f"{src}-labels-idx1-ubyte")
    if _exists_maybe_gz(images) and _exists_maybe_gz(labels):
        x = _normalize(_read_idx(images, 0x803).unsqueeze(1), MNIST_MEAN, MNIST_STD)
        y = _read_idx(labels, 0x801).long()
        desc, real = f"MNIST {src} from {root}", True
    else:
        n = 10000 if src == "t10k" else 60000
        x, y = torch.randn(n, 1, 28, 28), torch.randint(0, 10, (n,))
        desc, real = "random tensors of MNIST's shapes (1x28x28)", False
    idx = _example_split(data, x.shape[0])
    x, y = x[idx], y[idx]
    meta = {"channels": 1, "height": 28, "width": 28, "classes": 10}
    return TrainData(f"{desc}, {len(idx)} training images", len(idx), meta, batch, recipe.seed,
                     lambda i: _gather({"x": x, "y": y}, i), recipe.data.get("shuffle", True), real)


# --- cifar10 ----------------------------------------------------------------------------

def cifar10(recipe, root, batch):
    sub = os.path.join(root, "cifar-10-batches-bin")
    folder = sub if os.path.exists(os.path.join(sub, "data_batch_1.bin")) else root
    files = [os.path.join(folder, f"data_batch_{i}.bin") for i in range(1, 6)]
    if all(os.path.exists(f) for f in files):
        raw = b"".join(open(f, "rb").read() for f in files)
        rec = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(-1, 3073)
        pixels, y = rec[:, 1:].reshape(-1, 3, 32, 32).contiguous(), rec[:, 0].long()
        desc, real = f"CIFAR-10 binary from {folder}", True
    else:
        # 50,000 random images, stored as a pool of 1,024 (a step's cost does not depend on which).
        pool = torch.randint(0, 256, (1024, 3, 32, 32), dtype=torch.uint8)
        pixels, y = pool, torch.randint(0, 10, (1024,))
        desc, real = "random tensors of CIFAR-10's shapes (3x32x32)", False
    size = 50000 if not real else pixels.shape[0]
    idx = _example_split(recipe.data, size)

    def make(i):
        rows = [idx[k] % pixels.shape[0] for k in i]
        t = torch.tensor(rows, dtype=torch.long)
        return {"x": _normalize(pixels.index_select(0, t), CIFAR_MEAN, CIFAR_STD), "y": y.index_select(0, t)}

    meta = {"channels": 3, "height": 32, "width": 32, "classes": 10}
    return TrainData(f"{desc}, {len(idx)} training images (no crop/flip augmentation)", len(idx), meta, batch,
                     recipe.seed, make, recipe.data.get("shuffle", True), real)


# --- ucr (FordA) ------------------------------------------------------------------------

def ucr(recipe, root, batch):
    name = recipe.data.get("name", "FordA")
    sub = os.path.join(root, name)
    folder = sub if os.path.exists(os.path.join(sub, f"{name}_TRAIN.tsv")) else root
    path = os.path.join(folder, f"{name}_TRAIN.tsv")
    if os.path.exists(path):
        labels, rows = [], []
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.rstrip("\r\n")
                if line:
                    fields = line.split("\t")
                    labels.append(float(fields[0]))
                    rows.append([float(v) for v in fields[1:]])
        classes = sorted(set(labels))  # ascending numeric order, as data/ucr.cpp
        x = torch.tensor(rows, dtype=torch.float32).unsqueeze(2)  # (M, T, 1)
        y = torch.tensor([classes.index(v) for v in labels], dtype=torch.long)
        desc, real = f"UCR {name} from {folder}", True
    else:
        x, y, classes = torch.randn(3601, 500, 1), torch.randint(0, 2, (3601,)), [-1.0, 1.0]
        desc, real = f"random tensors of {name}'s shapes (3601 series of 500 steps)", False
    idx = _example_split(recipe.data, x.shape[0])
    x, y = x[idx], y[idx]
    meta = {"channels": 1, "length": x.shape[1], "classes": len(classes)}
    return TrainData(f"{desc}, {len(idx)} training series", len(idx), meta, batch, recipe.seed,
                     lambda i: _gather({"x": x, "y": y}, i), recipe.data.get("shuffle", True), real)


# --- cora -------------------------------------------------------------------------------

def _normalized_adjacency(v, edges):
    """D^-1/2 (A + I) D^-1/2 as a coalesced sparse COO tensor; edges: set of (i, j), both directions."""
    rows = [i for i, _ in edges] + list(range(v))
    cols = [j for _, j in edges] + list(range(v))
    index = torch.tensor([rows, cols], dtype=torch.long)
    deg = torch.zeros(v).index_add_(0, index[0], torch.ones(index.shape[1]))
    dinv = deg.pow(-0.5)
    return torch.sparse_coo_tensor(index, dinv[index[0]] * dinv[index[1]], (v, v)).coalesce()


def cora(recipe, root, batch):
    data = recipe.data
    content, cites = os.path.join(root, "cora.content"), os.path.join(root, "cora.cites")
    if os.path.exists(content) and os.path.exists(cites):
        ids, feats, label_text, nfeat = {}, [], [], 0
        with open(content, encoding="utf-8") as f:
            for line in f:
                fields = line.rstrip("\r\n").split("\t")
                if len(fields) < 3:
                    continue
                ids[fields[0]] = len(ids)
                nfeat = len(fields) - 2
                feats.append([k for k, s in enumerate(fields[1:-1]) if s == "1"])
                label_text.append(fields[-1])
        edges = set()
        with open(cites, encoding="utf-8") as f:
            for line in f:
                fields = line.rstrip("\r\n").split("\t")
                if len(fields) == 2 and fields[0] != fields[1]:
                    a, b = ids[fields[0]], ids[fields[1]]
                    edges.add((a, b))
                    edges.add((b, a))
        names = sorted(set(label_text))
        labels = [names.index(t) for t in label_text]
        desc, real = f"Cora from {root}", True
    else:  # Cora's sizes: 2708 papers, 1433 words, 5278 undirected edges, 7 classes, ~18 words a paper
        rng = random.Random(0)
        v, nfeat, names = 2708, 1433, [str(c) for c in range(7)]
        feats = [sorted(rng.sample(range(nfeat), 18)) for _ in range(v)]
        labels = [rng.randrange(7) for _ in range(v)]
        edges = set()
        while len(edges) < 2 * 5278:
            a, b = rng.randrange(v), rng.randrange(v)
            if a != b:
                edges.update({(a, b), (b, a)})
        desc, real = "a random graph of Cora's sizes", True
    v = len(feats)
    row_norm = data.get("features", "row_normalized") == "row_normalized"
    r = [i for i, c in enumerate(feats) for _ in c]
    c = [k for cs in feats for k in cs]
    val = [1.0 / len(feats[i]) if row_norm else 1.0 for i in r]
    x = torch.sparse_coo_tensor(torch.tensor([r, c], dtype=torch.long), torch.tensor(val), (v, nfeat)).coalesce()
    adj = _normalized_adjacency(v, sorted(edges))
    # The split (data/cora.cpp): train_per_class first of each class along a Philox permutation, then val, test.
    perm = philox_permutation(v, int(data.get("split_seed", 0) or 0), data_stream(SPLIT, 0))
    per_class, train_per_class = [0] * len(names), int(data.get("train_per_class", 20))
    masks = {s: torch.zeros(v, dtype=torch.bool) for s in ("train", "val", "test")}
    rest = []
    for node in perm:
        if per_class[labels[node]] < train_per_class:
            per_class[labels[node]] += 1
            masks["train"][node] = True
        else:
            rest.append(node)
    n_val, n_test = int(data.get("val_size", 500)), int(data.get("test_size", 1000))
    masks["val"][rest[:n_val]] = True
    masks["test"][rest[n_val:n_val + n_test]] = True
    graph = {"x": x, "adj": adj, "y": torch.tensor(labels, dtype=torch.long)}
    graph.update({k + "_mask": m for k, m in masks.items()})
    meta = {"features": nfeat, "classes": len(names), "nodes": v}
    d = TrainData(f"{desc}: {v} nodes, {nfeat} features ({x._nnz()} stored), {len(edges) // 2} undirected edges, "
                  f"{int(masks['train'].sum())}/{n_val}/{n_test} train/val/test nodes", 1, meta, 1, recipe.seed,
                  lambda i: graph, False, real)
    # emutrain's trainer evaluates the val and test splits after every epoch, and an epoch of Cora
    # is one step: `emutrain bench train`'s timed steps include these passes, so the baseline's do too.
    d.eval_batches = [("val", graph), ("test", graph)]
    return d


# --- fra_eng ----------------------------------------------------------------------------

_SPACES = {0x09, 0xA0, 0x202F, 0x2009, 0x2007}
_MAP = {0x2019: "'", 0x2018: "'", 0x201C: '"', 0x201D: '"', 0x0152: "\u0153", 0x0178: "\u00ff"}
_SPLIT = set('.,!?;:"()') | {"\u00ab", "\u00bb", "\u2026"}
PAD, BOS, EOS, UNK = 0, 1, 2, 3


def normalize_sentence(s, word=True):
    """data/text.cpp normalize_sentence: fold case (ASCII, Latin-1), map quotes and spaces,
    pad split punctuation with spaces (word tokens), collapse spaces."""
    out = []
    for ch in s:
        cp = ord(ch)
        if cp in _SPACES:
            ch = " "
        elif cp in _MAP:
            ch = _MAP[cp]
        elif 0x41 <= cp <= 0x5A or (0xC0 <= cp <= 0xDE and cp != 0xD7):
            ch = chr(cp + 0x20)
        if word and ch in _SPLIT:
            out.append(" " + ch + " ")
        else:
            out.append(ch)
    return " ".join(t for t in "".join(out).split(" ") if t)


def tokenize(normalized, word=True):
    return [t for t in normalized.split(" ") if t] if word else list(normalized)


def build_vocab(seqs, min_freq=1, max_size=0):
    """data/vocab.cpp: specials, then by count descending (ties in byte order), min_freq, max_size."""
    counts = {}
    for s in seqs:
        for t in s:
            counts[t] = counts.get(t, 0) + 1
    ranked = sorted((t for t, n in counts.items() if n >= min_freq), key=lambda t: t.encode())
    ranked.sort(key=lambda t: -counts[t])  # stable: equal counts stay in byte order
    tokens = ["<pad>", "<bos>", "<eos>", "<unk>"]
    for t in ranked:
        if max_size > 0 and len(tokens) >= max_size:
            break
        if t not in tokens[:4]:
            tokens.append(t)
    return {t: i for i, t in enumerate(tokens)}


def _crnn_batch(pairs, idx):
    """data/fra_eng.cpp get(): src + <eos>, <bos> + tgt, tgt + <eos>, padded to the batch's longest."""
    sel = [pairs[i] for i in idx]
    n, s_len, t_len = len(sel), max(len(p[0]) for p in sel) + 1, max(len(p[1]) for p in sel) + 1
    src, tgt_in, tgt_out = (torch.zeros(n, L, dtype=torch.long) for L in (s_len, t_len, t_len))
    for k, (s, t) in enumerate(sel):
        src[k, :len(s)] = torch.tensor(s, dtype=torch.long)
        src[k, len(s)] = EOS
        tgt_in[k, 0] = BOS
        tgt_in[k, 1:len(t) + 1] = torch.tensor(t, dtype=torch.long)
        tgt_out[k, :len(t)] = torch.tensor(t, dtype=torch.long)
        tgt_out[k, len(t)] = EOS
    src_len = torch.tensor([len(s) + 1 for s, _ in sel])
    tgt_len = torch.tensor([len(t) + 1 for _, t in sel])
    steps = torch.arange(s_len).unsqueeze(0)
    return {"src": src, "tgt_in": tgt_in, "tgt_out": tgt_out, "src_len": src_len, "tgt_len": tgt_len,
            "src_pad": steps >= src_len.unsqueeze(1), "src_valid": (steps < src_len.unsqueeze(1)).float()}


def fra_eng(recipe, root, batch):
    data = recipe.data
    path = os.path.join(root, "fra.txt")
    word = data.get("tokens", "word") == "word"
    reverse = bool(data.get("reverse", False))
    max_tokens, max_pairs = int(data.get("max_tokens", 0) or 0), int(data.get("max_pairs", 0) or 0)
    if os.path.exists(path):
        pairs = []
        with open(path, "rb") as f:
            for raw in f:
                line = raw.rstrip(b"\n").rstrip(b"\r").decode("utf-8")
                if not line:
                    continue
                fields = line.split("\t")
                en, fr = fields[0], fields[1]
                s = tokenize(normalize_sentence(fr if reverse else en, word), word)
                t = tokenize(normalize_sentence(en if reverse else fr, word), word)
                if not s or not t or (max_tokens > 0 and (len(s) > max_tokens or len(t) > max_tokens)):
                    continue
                pairs.append((s, t))
                if max_pairs > 0 and len(pairs) == max_pairs:
                    break
        n = len(pairs)
        n_test = math.floor(float(data.get("test_fraction", 0.1)) * n)
        n_val = math.floor(float(data.get("val_fraction", 0.0)) * n)
        perm = philox_permutation(n, int(data.get("split_seed", 0) or 0), data_stream(SPLIT, 0))
        held = set(perm[:n_test + n_val])
        train = [pairs[i] for i in range(n) if i not in held]
        min_freq, max_vocab = int(data.get("min_freq", 1)), int(data.get("max_vocab", 0))
        sv = build_vocab([p[0] for p in train], min_freq, max_vocab)
        tv = build_vocab([p[1] for p in train], min_freq, max_vocab)
        encoded = [([sv.get(w, UNK) for w in s], [tv.get(w, UNK) for w in t]) for s, t in train]
        desc, real = f"fra_eng from {path}", True
    else:
        # The shipped recipe's sizes (9000 training pairs, vocabularies 2076 / 4295); lengths drawn
        # uniformly from 1..6 English and 1..9 French words, about fra.txt's first 10,000 pairs.
        rng = random.Random(0)
        sv, tv = dict.fromkeys(range(2076)), dict.fromkeys(range(4295))
        encoded = [([rng.randrange(4, 2076) for _ in range(rng.randint(1, 6))],
                    [rng.randrange(4, 4295) for _ in range(rng.randint(1, 9))]) for _ in range(9000)]
        desc, real = "random sentences of the recipe's sizes (fra.txt not found)", True
    meta = {"src_vocab": len(sv), "tgt_vocab": len(tv), "pad_id": PAD,
            "max_src_len": max(len(s) for s, _ in encoded) + 1, "max_tgt_len": max(len(t) for _, t in encoded) + 1}
    return TrainData(f"{desc}: {len(encoded)} training pairs, vocabularies {len(sv)} / {len(tv)}", len(encoded),
                     meta, batch, recipe.seed, lambda i: _crnn_batch(encoded, i), data.get("shuffle", True), real)


LOADERS = {"mnist": mnist, "cifar10": cifar10, "ucr": ucr, "cora": cora, "fra_eng": fra_eng}


def load_train_data(recipe, data_root=None):
    """The recipe's training split (see the module's doc); data_root plays $EMUTRAIN_DATA_ROOT."""
    t = recipe.data_type
    if t not in LOADERS:
        raise ValueError(f"data.type '{t}' has no baseline loader (have: {', '.join(sorted(LOADERS))})")
    return LOADERS[t](recipe, recipe.data_root(data_root), recipe.batch_size)
