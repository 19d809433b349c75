"""`cmake --install` puts the package under <prefix>/lib/python3.X/site-packages (docs/python.md),
and it imports and computes from there."""
import os
import subprocess
import sys

import pytest


def test_install_component(tmp_path):
    build = os.environ.get("EMUTRAIN_BUILD_DIR")
    if not build:
        pytest.skip("EMUTRAIN_BUILD_DIR is not set; run through ctest")
    subprocess.run(["cmake", "--install", build, "--prefix", str(tmp_path), "--component", "python"], check=True,
                   capture_output=True)
    site = tmp_path / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    assert (site / "emutrain" / "torch.py").exists()
    code = ("import emutrain, numpy; print(emutrain.__file__); "
            "print(emutrain.quantize(numpy.array([0.3], numpy.float32), 'e4m3')[0])")
    env = dict(os.environ, PYTHONPATH=str(site))
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env,
                         cwd=tmp_path).stdout.split()
    assert out[0].startswith(str(site))
    assert out[1] == "0.3125"  # 0.3 in e4m3: neighbours 0.28125 and 0.3125, nearer the second
