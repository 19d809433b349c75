"""emutrain.Format and emutrain.quantize against `emutrain calc --batch`, bit for bit.

The answer key is the calculator of the built tool (calc/batch.cpp: scalar rounding of
numerics/round.h, one line per value), run as a separate process; quantize is the backends'
bulk rounding (numerics/bulk.h, the IEEE bit kernel and the scalar loops).
"""
import numpy as np
import pytest
import torch

import emutrain
from conftest import assert_same_bits, bits, calc_batch, hex32

# Every family and modifier: IEEE-like eXmY with its aliases, OCP fp8/fp6/fp4, posits, fixed
# point and integers, each rounding mode, :nosub, :sat, :wrap.
SPECS = [
    "e5m2", "e4m3", "e6m6", "e3m2:nosub", "e5m10:rtz", "e2m1", "e8m0", "e1m2", "e4m3:sat", "bf16:rup",
    "fp16:rdn", "tf32:rna", "fp32", "e8m22:rtz", "fp8_e4m3", "fp8_e5m2", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1",
    "fp8_e4m3:sat", "fp8_e5m2:rtz", "posit8_0", "posit8_2", "posit16_1", "posit16_2:rtz", "posit12_1:rdn",
    "fixed16_8", "fixed8_4:wrap", "fixed12_3:rup", "int8", "int16", "fixed20_10"
]
SR_SPECS = ["e5m2:sr", "fp4_e2m1:sr", "posit8_1:sr", "fixed8_2:sr", "bf16:sr"]


def special_values(spec):
    """Zeros, infinities, NaNs (payloads too), binary32 extremes, and for the format: its
    extremes, every value of a code (8-bit formats: all of them), the midpoints between
    neighbouring values (ties) and the binary32 numbers next to each midpoint."""
    f = emutrain.Format(spec)
    v = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 3.0, 2.0**-149, -2.0**-149, 2.0**-126,
         3.4028234663852886e38, -3.4028234663852886e38]
    specials = np.array(v, dtype=np.float32)
    payloads = np.array([0x7f800001, 0xffc00000, 0x7fc00001, 0x7fbfffff], dtype=np.uint32).view(np.float32)
    edges = np.array([f.max, -f.max, f.lowest, f.min, -f.min, f.min_normal, f.min / 2, 3 * f.min / 2, f.max * 1.5],
                     dtype=np.float64)
    with np.errstate(over="ignore"):
        edges = edges.astype(np.float32)
    grid = np.zeros(0, dtype=np.float32)
    if f.width <= 8:
        grid = f.decode(np.arange(2**f.width, dtype=np.uint32))
        finite = np.unique(grid[np.isfinite(grid)].astype(np.float64))
        mids = ((finite[1:] + finite[:-1]) / 2).astype(np.float32)  # exact: neighbours of a <= 8-bit format
        grid = np.concatenate([grid, mids, np.nextafter(mids, np.float32(np.inf)),
                               np.nextafter(mids, np.float32(-np.inf))])
    return np.concatenate([specials, payloads, edges, grid]).astype(np.float32)


def random_values(n, seed):
    """Random binary32 bit patterns (every exponent, NaNs included) and values of moderate size."""
    rng = np.random.default_rng(seed)
    patterns = rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    moderate = (rng.standard_normal(n) * 10.0**rng.uniform(-6, 6, size=n)).astype(np.float32)
    return np.concatenate([patterns, moderate])


def calc_quantize(spec, x, seed=0):
    return np.array([int(a, 16) for a in calc_batch([f"quantize {spec} {h}" for h in hex32(x)], seed)],
                    dtype=np.uint32)


@pytest.mark.parametrize("spec", SPECS)
def test_quantize_equals_calc(spec):
    x = np.concatenate([special_values(spec), random_values(3000, seed=len(spec))])
    got = emutrain.quantize(x, spec)
    assert isinstance(got, np.ndarray) and got.dtype == np.float32 and got.shape == x.shape
    assert_same_bits(got, calc_quantize(spec, x).view(np.float32), spec)
    # A Format object, a torch tensor and a strided view give the same bits.
    t = emutrain.quantize(torch.from_numpy(x), emutrain.Format(spec))
    assert isinstance(t, torch.Tensor)
    assert_same_bits(t, got, spec + " (torch)")
    x2 = x[: (x.size // 2) * 2].reshape(2, -1)
    assert_same_bits(emutrain.quantize(x2.T, spec), got[: x2.size].reshape(2, -1).T, spec + " (transposed)")
    assert_same_bits(emutrain.quantize(x[::-3], spec), got[::-3], spec + " (negative stride)")


@pytest.mark.parametrize("spec", SR_SPECS)
def test_stochastic_rounding_keys(spec):
    """quantize under :sr draws philox_draw(seed, stream, i) for element i: one-element
    quantizes with stream i match calc --batch line i (stream i, index 0) under the same seed."""
    x = random_values(150, seed=7)[150:]  # moderate values: most are between two format values
    seed = 12345
    got = np.array([emutrain.quantize(x[i:i + 1], spec, seed=seed, stream=i)[0] for i in range(x.size)],
                   dtype=np.float32)
    assert_same_bits(got, calc_quantize(spec, x, seed=seed).view(np.float32), spec)
    # A whole array is reproducible, and another seed or stream draws differently.
    a = emutrain.quantize(x, spec, seed=seed, stream=3)
    assert_same_bits(emutrain.quantize(x, spec, seed=seed, stream=3), a, spec)
    assert (bits(a) != bits(emutrain.quantize(x, spec, seed=seed + 1, stream=3))).any()
    assert (bits(a) != bits(emutrain.quantize(x, spec, seed=seed, stream=4))).any()
    # Every result is one of the two neighbours that round-down and round-up give.
    down = emutrain.quantize(x, spec.replace(":sr", ":rdn"))
    up = emutrain.quantize(x, spec.replace(":sr", ":rup"))
    assert np.all((a == down) | (a == up))


@pytest.mark.parametrize("spec", ["e5m2", "fp8_e4m3", "fp6_e2m3", "fp4_e2m1", "posit8_1", "int8", "fixed8_3"])
def test_codes_equal_calc(spec):
    """decode of every code and encode of every value, against calc's decode and encode lines."""
    f = emutrain.Format(spec)
    codes = np.arange(2**f.width, dtype=np.uint32)
    values = f.decode(codes)
    want = [int(a, 16) for a in calc_batch([f"decode {spec} {c}" for c in codes])]
    assert_same_bits(values, np.array(want, dtype=np.uint32).view(np.float32), spec + " decode")
    finite = values[np.isfinite(values)]
    enc = f.encode(finite)
    want = [int(a, 16) for a in calc_batch([f"encode {spec} {h}" for h in hex32(finite)])]
    assert np.array_equal(enc.astype(np.uint64), np.array(want, dtype=np.uint64)), spec
    with pytest.raises(ValueError, match="have no code"):
        f.encode(np.array([0.1], dtype=np.float32))


def test_format_properties():
    """The numbers of `emutrain calc e5m2 info` (tests/calc.cmake, worked out by hand) and others."""
    f = emutrain.Format("e5m2")
    assert (f.name, f.width, f.max, f.min_normal, f.min_subnormal, f.min, f.epsilon) == ("e5m2", 8, 57344.0, 2.0**-14,
                                                                                          2.0**-16, 2.0**-16, 0.25)
    assert f.codes == {"finite": 248, "zero": 2, "nan": 6, "inf": 2}
    assert f.family == "ieee" and not f.stochastic and not f.accumulator_only and not f.is_block
    assert emutrain.Format("fp16") == emutrain.Format("e5m10")
    assert emutrain.Format("e4m3:sat:rtz").name == "e4m3:rtz:sat"
    assert repr(emutrain.Format("bf16")) == "Format('bf16')"
    p = emutrain.Format("posit16_1")
    assert p.family == "posit" and p.max == 2.0**28 and p.min == 2.0**-28
    i = emutrain.Format("int8")
    assert (i.family, i.max, i.lowest, i.epsilon) == ("fixed", 127.0, -128.0, 1.0)
    assert emutrain.Format("fp64").accumulator_only
    assert emutrain.Format("e5m2:sr").stochastic and emutrain.Format("e5m2:sr").rounding == "sr"
    m = emutrain.Format("mxfp8_e4m3")
    assert m.is_block and m.block_size == 32
    assert {"format", "acc", "mul", "chunk", "acc_outer", "fused", "sparsity"} <= set(emutrain.Policy.keys())


def mx_reference(x, elem, emax, lo=None, hi=None):
    """OCP MX conversion of docs/block_formats.md, one block: scale 2^s with s = floor(log2 amax)
    - emax, each element R_elem(x / 2^s) (from calc, binary32-exact here), clamped to [lo, hi]."""
    amax = np.max(np.abs(x.astype(np.float64)))
    s = max(-127, int(np.floor(np.log2(amax))) - emax)
    q = calc_quantize(elem, (x.astype(np.float64) / 2.0**s).astype(np.float32)).view(np.float32).astype(np.float64)
    if lo is not None:
        q = np.clip(q, lo, hi)
    return (q * 2.0**s).astype(np.float32)


@pytest.mark.parametrize("spec,elem,emax,clamp", [("mxfp8_e4m3", "fp8_e4m3:sat", 8, None),
                                                  ("mxfp4", "fp4_e2m1:sat", 2, None),
                                                  ("mxint8", "fixed8_6", 0, (-127 / 64, 127 / 64))])
def test_block_formats(spec, elem, emax, clamp):
    """Blocks of 32 along the last dimension (a last partial block of 6), against the MX rule
    evaluated with calc's element rounding."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((3, 70)) * 2.0**rng.integers(-20, 20, size=(3, 1))).astype(np.float32)
    got = emutrain.quantize(x, spec)
    want = np.concatenate([
        mx_reference(x[r, k:k + 32], elem, emax, *(clamp or (None, None))) for r in range(3) for k in (0, 32, 64)
    ]).reshape(3, 70)
    assert_same_bits(got, want, spec)
    # An explicit layout: blocks down the columns (rows of the layout [1, 3, 70] run along dim 0).
    col = emutrain.quantize(x, spec, layout=(1, 3, 70))
    want_col = np.stack([mx_reference(x[:, j], elem, emax, *(clamp or (None, None))) for j in range(70)], axis=1)
    assert_same_bits(col, want_col, spec + " by columns")


def test_arguments_are_not_copied():
    """The engine sees the caller's memory (docs/python.md "Memory"): contiguous and strided
    float32 tensors and arrays alike; NumPy's negative strides are the one copy."""
    t = torch.randn(6, 5)
    assert emutrain._core._view(t) == (t.data_ptr(), [5, 1])
    assert emutrain._core._view(t.T) == (t.data_ptr(), [1, 5])
    assert emutrain._core._view(t[1:, 2:]) == (t[1:, 2:].data_ptr(), [5, 1])
    a = np.zeros((4, 3), np.float32)
    assert emutrain._core._view(a) == (a.ctypes.data, [3, 1])
    assert emutrain._core._view(a[:, 1]) == (a.ctypes.data + 4, [3])
    assert emutrain._core._view(a[::-1])[0] != a.ctypes.data + 9 * 4
