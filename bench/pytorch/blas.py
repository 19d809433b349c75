"""Which BLAS this PyTorch runs its matrix products on.

Why: Debian's python3-torch is built with BLAS_INFO=generic and calls whatever
libblas.so.3 the alternatives system points to. With only the reference
(netlib) BLAS installed, PyTorch's products are about ten times slower than on
OpenBLAS, and every ratio against it would flatter emutrain. So the baselines
say which file was loaded, read from /proc/self/maps after a product, and
warn when it is the reference one.
"""
import ctypes
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


# OpenBLAS core names by vector level (as tools/openblas_core.cpp): 3 AVX-512, 2 AVX2, 1 AVX, 0 SSE.
_CORE_LEVEL = {"SkylakeX": 3, "Cooperlake": 3, "SapphireRapids": 3, "Haswell": 2, "Zen": 2, "Sandybridge": 1,
               "Bulldozer": 1, "Piledriver": 1, "Steamroller": 1, "Excavator": 1}
_LEVEL_NAME = ["SSE", "AVX", "AVX2", "AVX-512"]


def cpu_vector_level():
    """0 SSE, 1 AVX, 2 AVX2 + FMA, 3 AVX-512 (F, BW, DQ, VL), from /proc/cpuinfo's flags."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            flags = next((set(l.split(":", 1)[1].split()) for l in f if l.startswith("flags")), set())
    except OSError:
        return 0
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        return 3
    if {"avx2", "fma"} <= flags:
        return 2
    return 1 if "avx" in flags else 0


def openblas_core(blas_file):
    """OpenBLAS's kernel name (openblas_get_corename of the loaded library), or None."""
    try:
        lib = ctypes.CDLL(blas_file)
        lib.openblas_get_corename.restype = ctypes.c_char_p
        return lib.openblas_get_corename().decode()
    except (OSError, AttributeError, TypeError):
        return None


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
    core = openblas_core(blas_file) if kind == "OpenBLAS" else None
    core_level, cpu_level = _CORE_LEVEL.get(core, 0), cpu_vector_level()
    forced = os.environ.get("OPENBLAS_CORETYPE")
    if core and core_level < cpu_level:
        why = f"OPENBLAS_CORETYPE={forced} forces" if forced else "OpenBLAS chose"
        warning = (f"WARNING: {why} OpenBLAS's {_LEVEL_NAME[core_level]} kernel ({core}) on a CPU with "
                   f"{_LEVEL_NAME[cpu_level]}: PyTorch's matrix products run slower than they can and every ratio "
                   f"flatters emutrain" + ("; unset it for this command (env -u OPENBLAS_CORETYPE -u "
                                           "OPENBLAS_L2_SIZE ...)" if forced else ""))
    return {"blas_info": info, "files": files, "blas_file": blas_file, "blas_kind": kind,
            "reference": kind == "reference", "mkldnn": bool(torch.backends.mkldnn.is_available()),
            "openblas_core": core, "openblas_core_forced": forced, "cpu_level": _LEVEL_NAME[cpu_level],
            "warning": warning}


def describe(d):
    """One line: the BLAS file and kind, and oneDNN (PyTorch's convolutions go there, not to the BLAS)."""
    ref = "the reference BLAS" if d["reference"] else "not the reference BLAS"
    if d.get("openblas_core"):
        how = f"OPENBLAS_CORETYPE={d['openblas_core_forced']}" if d["openblas_core_forced"] else "its own choice"
        ref += f", kernel {d['openblas_core']} ({how}; CPU {d['cpu_level']})"
    return (f"BLAS: {d['blas_kind']} ({ref}), {d['blas_file']}; PyTorch BLAS_INFO={d['blas_info']}; "
            f"oneDNN (mkldnn) {'on' if d['mkldnn'] else 'off'} for convolutions")
