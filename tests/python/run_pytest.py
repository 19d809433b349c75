"""Runs one test file of tests/python with pytest (tests/python.cmake registers one per file).

Prints "SKIP: <why>" and exits 0, which CTest reports as Skipped, where what the tests need is
missing: pytest, NumPy, or PyTorch (Debian: python3-pytest, python3-numpy, python3-torch).
"""
import importlib.util
import sys

missing = [m for m in ("pytest", "numpy", "torch") if importlib.util.find_spec(m) is None]
if missing:
    print(f"SKIP: {', '.join(missing)} not importable by {sys.executable} "
          "(apt install python3-pytest python3-numpy python3-torch)")
    sys.exit(0)

import pytest  # noqa: E402

# -p no:cacheprovider: no .pytest_cache in the source tree.
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "-rs", *sys.argv[1:]]))
