#!/usr/bin/env python3
"""Lists the path-looking references in comments and docs that name no file of the repository.

A reference is a word ending in .h .cpp .cu .md .cmake .yaml .py .sh in a comment
(// in C++/CUDA, # in CMake, shell, Python, YAML) or anywhere in a Markdown file. It
resolves when the path exists from the repository root, from the citing file's
folder, or (for a bare name) as the name of some tracked file. What is not a
citation of this repository is passed over: a *.yaml name without a folder or
from ../ (a user's file in an example), a name that starts with '_' (the tail of
a glob such as *_ops.cpp), the system and vendor files and placeholders in
EXTERNAL; tests/contract/ is skipped (its self-test cites bad files on purpose).
Run from the repository root; prints file:line: reference for each miss and
exits 1 when there is one.
"""
import os
import re
import subprocess
import sys

EXT = r"(?:h|cpp|cu|md|cmake|yaml|py|sh)"
REF = re.compile(r"(?<![\w./-])((?:\.\./|\./)?[A-Za-z0-9_][A-Za-z0-9_./-]*\." + EXT + r")(?![\w-]|\.\w)")
EXTERNAL = {"crt/host_defines.h", "curand_kernel.h", "curand_philox4x32_x.h", "cuda_runtime.h", "cblas.h",
            "gentests.py", "a.cpp"}
HASH_COMMENT = {".cmake", ".sh", ".py", ".yaml", ".yml", ".txt"}

files = subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True).stdout.split()
tracked = set(files)
names = {os.path.basename(f) for f in files}
dirs = set()
for f in files:
    d = os.path.dirname(f)
    while d:
        dirs.add(d)
        d = os.path.dirname(d)


def comment_text(path, line):
    ext = os.path.splitext(path)[1]
    if ext == ".md":
        return line
    if ext in (".h", ".cpp", ".cu", ".c", ".hpp", ".cuh"):
        i = line.find("//")
        if i >= 0:
            return line[i + 2:]
        s = line.strip()
        return s if s.startswith("*") or s.startswith("/*") else ""
    if ext in HASH_COMMENT or os.path.basename(path) == "CMakeLists.txt":
        i = line.find("#")
        return line[i + 1:] if i >= 0 else ""
    return None


def resolves(path, ref):
    r = ref.rstrip(".")
    if r in EXTERNAL or r.startswith("_") or (r.endswith(".yaml") and ("/" not in r or r.startswith("../"))):
        return True
    if r in tracked or r in dirs:
        return True
    here = os.path.normpath(os.path.join(os.path.dirname(path), r))
    if here in tracked:
        return True
    if "/" not in r and r in names:
        return True
    return False


misses = 0
for path in files:
    # tests/contract/ writes bad citations on purpose (its self-test), as check_citations.sh says.
    if path.startswith(("tests/fuzz/corpus/", "tests/fuzz/dict/", "tests/contract/")):
        continue
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except (UnicodeDecodeError, IsADirectoryError):
        continue
    if comment_text(path, "") is None:
        continue
    for n, line in enumerate(lines, 1):
        text = comment_text(path, line)
        if not text:
            continue
        for m in REF.finditer(text):
            ref = m.group(1)
            if "://" in text[max(0, m.start() - 80):m.start()] and "/" in ref:
                continue  # part of a URL
            if not resolves(path, ref):
                print(f"{path}:{n}: {ref}")
                misses += 1
print(f"{misses} unresolved", file=sys.stderr)
sys.exit(1 if misses else 0)
