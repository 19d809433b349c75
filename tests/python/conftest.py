"""Helpers of the Python module's tests (tests/python.cmake sets PYTHONPATH and EMUTRAIN_CLI)."""
import os
import subprocess

import numpy as np
import pytest

import emutrain


def cli():
    """The emutrain command line tool of this build: the independent answer key."""
    path = os.environ.get("EMUTRAIN_CLI")
    if not path or not os.path.exists(path):
        pytest.skip("EMUTRAIN_CLI (the built emutrain tool) is not set; run through ctest")
    return path


def calc_batch(lines, seed=0):
    """`emutrain calc --batch --seed SEED`: one answer per line (docs/calc.md)."""
    text = "".join(line + "\n" for line in lines)
    r = subprocess.run([cli(), "calc", "--batch", "--seed", str(seed)], input=text, capture_output=True, text=True)
    answers = r.stdout.splitlines()
    assert len(answers) == len(lines), r.stderr
    bad = [(line, a) for line, a in zip(lines, answers) if a.startswith("error")]
    assert not bad, bad[:3]
    return answers


def hex32(values):
    """float32 values as calc's binary32 arguments ("0x%08x")."""
    return [f"0x{b:08x}" for b in np.asarray(values, dtype=np.float32).view(np.uint32).ravel()]


def bits(a):
    """The binary32 bit patterns of a float32 array or tensor (NaN payloads and signed zeros included)."""
    if hasattr(a, "detach"):
        a = a.detach().contiguous().numpy()
    return np.ascontiguousarray(np.asarray(a, dtype=np.float32)).view(np.uint32)


def assert_same_bits(got, want, what=""):
    g, w = bits(got), bits(want)
    assert g.shape == w.shape, f"{what}: shape {g.shape} vs {w.shape}"
    diff = np.flatnonzero(g.ravel() != w.ravel())
    if diff.size:
        i = diff[0]
        raise AssertionError(f"{what}: {diff.size} of {g.size} elements differ; first at flat index {i}: "
                             f"0x{g.ravel()[i]:08x} vs 0x{w.ravel()[i]:08x}")


@pytest.fixture(autouse=True)
def _cpu_device_and_threads():
    """Every test starts on the CPU backend with the threads it had."""
    threads = emutrain.threads()
    emutrain.set_device("cpu")
    yield
    emutrain.set_threads(threads)
    emutrain.set_device("cpu")
