"""Which BLAS this PyTorch runs its matrix products on.

Why: Debian's python3-torch is built with BLAS_INFO=generic and calls whatever
libblas.so.3 the alternatives system points to. With only the reference
(netlib) BLAS installed, PyTorch's products are about ten times slower than on
OpenBLAS, and every ratio against it would flatter emutrain. So the baselines
say which file was loaded, read from /proc/self/maps after a product, and
warn when it is the reference one.
"""
import os
import re

import torch

_BLAS_NAME = re.compile(r"lib(open)?blas[^/]*\.so|libmkl_(rt|core)[^/]*\.so|libblis[^/]*\.so|libsatlas|libtatlas")


def _config_value(key):
    m = re.search(rf"{key}=([^,\s]+)", torch.__config__.show())
    return m.group(1) if m else None


def _loaded_libraries():
    try:
        with open("/proc/self/maps", encoding="utf-8") as f:
            paths = {line.split()[-1] for line in f if "/" in line.split()[-1]}
    except OSError:  # not Linux: nothing to read
        return []
    return sorted(paths)


def _kind(path):
    base, parent = os.path.basename(path), os.path.basename(os.path.dirname(path))
    if "openblas" in path:
        return "OpenBLAS"
    if "mkl" in base:
        return "MKL"
    if "blis" in path:
        return "BLIS"
    if "atlas" in path:
        return "ATLAS"
    if base.startswith("libblas") and parent == "blas":
        return "reference"  # Debian's libblas3: /usr/lib/<triplet>/blas/libblas.so.3
    return "unknown"


def detect():
    """{'blas_info', 'files', 'blas_file', 'blas_kind', 'reference', 'mkldnn', 'warning'} after a product."""
    a = torch.ones(64, 64)
    (a @ a).sum().item()  # loads the BLAS if it is loaded lazily
    files = [p for p in _loaded_libraries() if _BLAS_NAME.search(os.path.basename(p))]
    info = _config_value("BLAS_INFO")
    # The BLAS proper: libblas.so.3 (the alternatives' choice) first, else the first BLAS-like file.
    blas_file = next((p for p in files if os.path.basename(p).startswith("libblas")), files[0] if files else None)
    if blas_file:
        kind = _kind(blas_file)
        if kind == "unknown" and any("openblas" in p for p in files):
            kind = "OpenBLAS"
    elif info == "mkl":
        kind, blas_file = "MKL", "(linked into libtorch)"
    else:
        kind, blas_file = "unknown", "(no BLAS library mapped)"
    warning = None
    if kind == "reference":
        m = re.match(r"/usr/lib/([^/]+)/", blas_file)
        triplet = m.group(1) if m else "x86_64-linux-gnu"
        warning = (f"WARNING: PyTorch runs on the reference BLAS (netlib, {blas_file}), about ten times slower "
                   f"than OpenBLAS: every ratio against it flatters emutrain. On Debian: "
                   f"apt-get install libopenblas0-pthread, or choose openblas-pthread with "
                   f"update-alternatives --config libblas.so.3-{triplet}")
    return {"blas_info": info, "files": files, "blas_file": blas_file, "blas_kind": kind,
            "reference": kind == "reference", "mkldnn": bool(torch.backends.mkldnn.is_available()),
            "warning": warning}


def describe(d):
    """One line: the BLAS file and kind, and oneDNN (PyTorch's convolutions go there, not to the BLAS)."""
    ref = "the reference BLAS" if d["reference"] else "not the reference BLAS"
    return (f"BLAS: {d['blas_kind']} ({ref}), {d['blas_file']}; PyTorch BLAS_INFO={d['blas_info']}; "
            f"oneDNN (mkldnn) {'on' if d['mkldnn'] else 'off'} for convolutions")
