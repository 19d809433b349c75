"""The data draws of emutrain, in Python, so the PyTorch baselines see the same
examples in the same order as `emutrain bench train`.

Mirrors numerics/philox.h (Philox4x32-10 keyed draw), core/draw_key.h
(mix64, path_hash) and data/draws.{h,cpp} (data_stream, philox_permutation).
Why: the train/test split of fra_eng and Cora decides the vocabularies (so the
CRNN's parameter count) and the node masks, and the shuffle decides which
sentences share a batch (so how much padding a CRNN step computes). Pure
Python integers; a permutation of 10,000 items takes a fraction of a second.
"""

M32 = 0xFFFFFFFF
M64 = 0xFFFFFFFFFFFFFFFF

# Round multipliers and Weyl increments (numerics/philox.h).
_M0, _M1 = 0xD2511F53, 0xCD9E8D57
_W0, _W1 = 0x9E3779B9, 0xBB67AE85

# data/draws.h DataDraw.
SHUFFLE, AUGMENT, SPLIT = 1, 2, 3


def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Random123 philox4x32_10: ten rounds, the key bumped between rounds."""
    for r in range(10):
        if r:
            k0 = (k0 + _W0) & M32
            k1 = (k1 + _W1) & M32
        p0 = _M0 * c0
        p1 = _M1 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & M32, (p0 >> 32) ^ c3 ^ k1, p0 & M32
    return c0, c1, c2, c3


def philox_draw(seed, stream, index):
    """Word `index` of subsequence `stream` under key `seed` (cuRAND layout)."""
    block = index >> 2
    out = philox4x32_10(block & M32, block >> 32 & M32, stream & M32, stream >> 32 & M32, seed & M32, seed >> 32 & M32)
    return out[index & 3]


def mix64(z):
    """splitmix64's finaliser (core/draw_key.h)."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def path_hash(path):
    """FNV-1a 64 (core/draw_key.h)."""
    h = 0xCBF29CE484222325
    for b in path.encode():
        h = ((h ^ b) * 0x100000001B3) & M64
    return h


def data_stream(what, epoch):
    """data/draws.h data_stream: the stream of a data draw purpose in an epoch."""
    return mix64(path_hash("data") ^ mix64((what + 0x9E3779B97F4A7C15 * (epoch + 1)) & M64))


def philox_permutation(n, seed, stream):
    """0..n-1 sorted by the 64-bit key draw(2i) << 32 | draw(2i+1), ties by index."""
    keyed = [((philox_draw(seed, stream, 2 * i) << 32) | philox_draw(seed, stream, 2 * i + 1), i) for i in range(n)]
    keyed.sort()
    return [i for _, i in keyed]


def epoch_order(n, seed, epoch, shuffle=True):
    """data/loader.cpp DataLoader::epoch_order: the training examples' order in an epoch."""
    if not shuffle:
        return list(range(n))
    return philox_permutation(n, seed, data_stream(SHUFFLE, epoch))
