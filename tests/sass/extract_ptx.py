#!/usr/bin/env python3
"""The PTX that nvcc embedded in the objects of one build, written out as .ptx files.

    extract_ptx.py OUTDIR FILE...

FILE is a static library (an `ar` archive of objects, e.g. libemutrain_cuda.a)
or an object file. Each object compiled by nvcc for a virtual architecture
("90-virtual" in CMAKE_CUDA_ARCHITECTURES) carries the PTX of its kernels in
its fatbinary (section .nv_fatbin); the PTX is written to OUTDIR/<stem>.ptx,
<stem> being the object's name up to its first dot (conv.cu.o -> conv.ptx).
Objects without PTX (host-only C++) are skipped.

This is how the FMA check (check_fma.sh) and the kernel budget check
(kernel_budgets.py) read the PTX of the one compile that built the library:
no second nvcc pass, and it works when ccache served the object (the PTX is
in the cached object). The entries must be stored uncompressed: the library
is built with `--compress-mode=none` (CMakeLists.txt); a compressed entry is
an error that says so.

Fatbinary layout (CUDA's fatbinary_section.h and the fatbin entry header as
read by open-source tools such as cuda-fatbin-decompression): a container
header {u32 magic 0xBA55ED50, u16 version, u16 header size, u64 size of the
entries}, then entries {u16 kind (1 PTX, 2 ELF), u16, u32 header size,
u64 payload size, ..., u64 flags at offset 40, ...} each followed by its
payload. Flag 0x2000 marks a compressed payload.
"""
import os
import struct
import sys

FATBIN_MAGIC = 0xBA55ED50
KIND_PTX = 1
FLAG_COMPRESSED = 0x2000


def ar_members(data):
    """(name, bytes) of each member of a System V / GNU ar archive."""
    if not data.startswith(b"!<arch>\n"):
        raise ValueError("not an ar archive")
    pos, longnames = 8, b""
    while pos + 60 <= len(data):
        header = data[pos:pos + 60]
        name = header[:16].decode().rstrip()
        size = int(header[48:58].decode().strip())
        body = data[pos + 60:pos + 60 + size]
        pos += 60 + size + (size & 1)
        if name == "//":
            longnames = body
            continue
        if name in ("/", "/SYM64/"):
            continue
        if name.startswith("/") and name[1:].isdigit():
            off = int(name[1:])
            name = longnames[off:longnames.index(b"/\n", off)].decode()
        yield name.rstrip("/"), body


def fatbin_ptx(data, what):
    """Every PTX text in the fatbinaries found in data."""
    texts, pos = [], 0
    magic = struct.pack("<I", FATBIN_MAGIC)
    while True:
        pos = data.find(magic, pos)
        if pos < 0 or pos + 16 > len(data):
            return texts
        _, version, hsize, fsize = struct.unpack_from("<IHHQ", data, pos)
        if version != 1 or hsize != 16 or pos + hsize + fsize > len(data):
            pos += 4
            continue
        entry, end = pos + hsize, pos + hsize + fsize
        while entry + 48 <= end:
            kind, _, ehsize, psize = struct.unpack_from("<HHIQ", data, entry)
            flags = struct.unpack_from("<Q", data, entry + 40)[0]
            if ehsize < 48 or entry + ehsize + psize > end:
                break
            payload = data[entry + ehsize:entry + ehsize + psize]
            if kind == KIND_PTX:
                if flags & FLAG_COMPRESSED:
                    raise ValueError(f"{what}: its PTX is compressed in the fatbinary; build it with "
                                     "nvcc --compress-mode=none (CMakeLists.txt sets it for emutrain_cuda)")
                texts.append(payload.split(b"\0", 1)[0].decode())
            entry += ehsize + psize
        pos = end


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    outdir = argv[1]
    os.makedirs(outdir, exist_ok=True)
    # The PTX of this build only: files left by an earlier build (a kernel file
    # since renamed or batched) would be checked as if they were built.
    for old in os.listdir(outdir):
        if old.endswith(".ptx"):
            os.remove(os.path.join(outdir, old))
    written = 0
    for path in argv[2:]:
        for part in path.split(";"):  # CMake may hand a list as one argument
            if not part:
                continue
            with open(part, "rb") as f:
                data = f.read()
            members = ar_members(data) if data.startswith(b"!<arch>\n") else [(os.path.basename(part), data)]
            for name, body in members:
                texts = fatbin_ptx(body, f"{part}({name})")
                if not texts:
                    continue
                stem = name.split(".", 1)[0]
                with open(os.path.join(outdir, stem + ".ptx"), "w") as out:
                    out.write("\n".join(texts))
                written += 1
    if written == 0:
        sys.stderr.write(f"extract_ptx: no PTX in {' '.join(argv[2:])} (built without a virtual architecture?)\n")
        return 1
    print(f"extract_ptx: {written} PTX files in {outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
