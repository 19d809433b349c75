#!/usr/bin/env python3
"""The kernel budget check (issue 32): what the hot CUDA kernels cost, without a GPU.

    kernel_budgets.py --ptx DIR --budgets FILE --ptxas PTXAS --occupancy TOOL
                      [--table FILE] [--doc docs/cuda_kernels.md] [--no-check]
    kernel_budgets.py --self-test --nvcc NVCC --ptxas PTXAS --occupancy TOOL --budgets FILE --ptx DIR

For every kernel of the budgets file (tests/sass/kernel_budgets.txt) it reads:
  * `ptxas -v` for sm_90 on the kernel's PTX (the PTX of the build's one nvcc
    compile, extracted by extract_ptx.py): registers, stack frame, spill
    stores and loads, static shared memory;
  * occupancy: resident warps per SM over 64, by CUDA's calculator
    (cuda_occupancy.h, through tests/sass/occupancy.cpp);
  * the PTX instructions per multiply-accumulate of the steady-state k loop,
    by class. The loop is marked in the source (backends/cuda/ops/ptx_marks.h:
    tagged moves, which survive in the fatbinary's PTX, which drops comments):
      tile begin (M MACs) .. tile end   one k tile of the steady state, M MACs per thread;
      step begin (S MACs) .. step end   one k step inside it; a step that the compiler
                                        unrolled appears once per copy, a step left as a
                                        loop once;
      slow begin .. slow end            code that the steady state does not run (a partial
                                        tile, the checked loop of a tile with Inf, NaN or a
                                        possible overflow);
    per MAC = (tile instructions outside the steps) / M + (mean step copy) / S,
    slow regions left out. A step loop's own counter and branch count once per
    tile, not per step (at most 3 instructions per tile).

It fails (exit 1) when a kernel exceeds its per-MAC budget, spills, has a stack
frame or local loads/stores where its budget says local=0, runs fp64
instructions in the loop where fp64=0, or when a budgeted kernel or its
markers cannot be found. --table writes the markdown table; --doc replaces the
table between the markers `<!-- kernel-budgets begin -->` and `<!-- kernel-budgets end -->`.

--self-test plants regressions and checks that each one fails: an fp64 multiply
put into the marked loop of a real fp32 kernel's PTX, and small kernels built
here by nvcc with an fp64 product, a spilling local array and a loop over budget;
the same kernels without the fault must pass.
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

SOURCE_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# A mark (backends/cuda/ops/ptx_marks.h): mov.b32 into a scoped register of 0xEB000000 | kind << 20 |
# begin << 16 | MACs, printed as a signed or unsigned decimal or in hex.
MARK = re.compile(r"^mov\.b32\s+emu_mark,\s*(-?(?:0[xX][0-9a-fA-F]+|\d+))U?;")
MARK_KINDS = {1: "tile", 2: "step", 3: "slow"}
ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)*\.entry\s+([\w$]+)")
CLASSES = ["fp32", "fp64", "int", "logic", "move", "ld.shared", "st.shared", "ld.global", "st.global",
           "local", "branch", "barrier", "other"]
LOGIC = {"and", "or", "xor", "not", "lop3", "selp", "prmt", "shf", "bfe", "bfi", "cnot", "slct"}
INTEGER = {"add", "sub", "mul", "mad", "min", "max", "shl", "shr", "setp", "set", "cvt", "neg", "abs", "div",
           "rem", "clz", "popc", "brev", "mul24", "mad24", "sad", "bfind", "fns", "redux", "vote", "activemask"}


def instr_class(op):
    parts = op.split(".")
    base = parts[0]
    if base in ("ld", "ldu", "st", "atom", "red", "prefetch", "cp"):
        space = "global" if "global" in parts else "shared" if "shared" in parts else \
            "local" if "local" in parts else parts[1] if len(parts) > 1 else "generic"
        if space == "local":
            return "local"
        if space in ("shared", "global"):
            return ("st." if base in ("st", "red", "atom") else "ld.") + space
        if space == "param" and base == "ld":
            return "move"  # a kernel parameter: a constant-bank operand in SASS
        return "other"
    if base in ("bra", "call", "ret", "exit", "brx"):
        return "branch"
    if base in ("bar", "barrier", "membar", "fence"):
        return "barrier"
    if op == "mov.sreg":
        return "int"
    if base == "mov":
        return "move"  # a copy, bit cast or constant: no SASS instruction after register allocation
    if "f64" in parts:
        return "fp64"
    if "f32" in parts or "f16" in parts or "bf16" in parts or "f16x2" in parts:
        return "fp32"
    if base in LOGIC:
        return "logic"
    if base in INTEGER:
        return "int"
    return "other"


def parse_ptx(text):
    """{entry: [('instr', opcode) | ('mark', kind, begin/end, macs)]} in PTX order."""
    funcs, cur, depth, stmt = {}, None, 0, ""
    for line in text.splitlines():
        m = ENTRY.match(line)
        if m:
            cur, depth, stmt = m.group(1), 0, ""
            funcs[cur] = []
            continue
        if cur is None:
            continue
        if stmt.strip().endswith(":"):
            funcs[cur].append(("label", stmt.strip()[:-1].strip()))
            stmt = ""  # a label on its own line
        # Statements end with ';'. A brace that starts a statement opens or closes a scope (the
        # function body, an inline asm block); braces inside one are a vector operand.
        for part in re.split(r"([{};])", line.split("//", 1)[0]):
            if part == "{" and (depth == 0 or not stmt.strip()):
                depth, stmt = depth + 1, ""
            elif part == "}" and not stmt.strip():
                depth -= 1
                if depth == 0:
                    cur = None
                    break
            elif part == ";":
                add_statement(funcs[cur], stmt.strip(), depth)
                stmt = ""
            else:
                stmt += part
    return funcs


def add_statement(items, st, depth):
    if not st or depth == 0 or st.startswith("."):
        return  # the parameter list, directives (.reg, .loc, ...)
    while ":" in st.split()[0]:  # a label before the statement
        label, st = st.split(":", 1)
        items.append(("label", label.strip()))
        st = st.strip()
        if not st:
            return
    mk = MARK.match(st + ";")
    if mk:
        v = int(mk.group(1), 0) & 0xFFFFFFFF
        if v >> 24 == 0xEB and (v >> 20) & 0xF in MARK_KINDS:
            items.append(("mark", MARK_KINDS[(v >> 20) & 0xF], "begin" if (v >> 16) & 1 else "end", v & 0xFFFF))
            return
    tok = st.split(None, 1)
    predicated = tok[0].startswith("@")
    if predicated:
        tok = tok[1].split(None, 1) if len(tok) > 1 else []
    if tok:
        op = tok[0]
        if op.startswith("mov") and len(tok) > 1 and re.search(r",\s*%(tid|ntid|ctaid|nctaid|laneid|warpid|smid|clock)",
                                                            tok[1]):
            op = "mov.sreg"  # a special register read: a real instruction (S2R)
        target = tok[1].strip() if op.startswith("bra") and len(tok) > 1 else None
        items.append(("instr", op, target, predicated))


def successors(items, labels, i):
    it = items[i]
    if it[0] != "instr" or not it[1].startswith(("bra", "ret", "exit")):
        return [i + 1] if i + 1 < len(items) else []
    if it[1].startswith("bra"):
        t = labels.get(it[2])
        nxt = [t] if t is not None else []
        return nxt + ([i + 1] if it[3] and i + 1 < len(items) else [])  # a predicated branch falls through
    return [i + 1] if it[3] and i + 1 < len(items) else []  # ret, exit


def region(items, labels, start, kind):
    """The item indices reachable from mark `start` (a begin of `kind`) before an end of `kind`:
    the region in the control-flow graph, whatever the block order of the PTX."""
    seen, todo = set(), [start + 1]
    while todo:
        i = todo.pop()
        if i in seen or i >= len(items):
            continue
        it = items[i]
        if it[0] == "mark" and it[1] == kind and it[2] == "end":
            continue
        seen.add(i)
        todo.extend(successors(items, labels, i))
    return seen


def loop_cost(items):
    """(per-MAC, {class: per MAC}, versions, whole-kernel fp64 count, local count), or per-MAC None
    without marks. Regions are followed through the control-flow graph. The compiler may version a
    loop (one copy per value of a loop-invariant condition): each marked tile is costed on its own
    and the most expensive one is reported."""
    instr = [i for i, it in enumerate(items) if it[0] == "instr"]
    whole_fp64 = sum(1 for i in instr if instr_class(items[i][1]) == "fp64")
    whole_local = sum(1 for i in instr if instr_class(items[i][1]) == "local")
    labels = {it[1]: i for i, it in enumerate(items) if it[0] == "label"}
    marks = [(i, it[1], it[3]) for i, it in enumerate(items) if it[0] == "mark" and it[2] == "begin"]
    slow = set()
    for i, kind, _ in marks:
        if kind == "slow":
            slow |= region(items, labels, i, "slow")
    tiles = []
    for i, kind, macs in marks:
        if kind != "tile" or i in slow:
            continue
        body = region(items, labels, i, "tile") - slow
        steps = [(m, region(items, labels, j, "step") - slow) for j, k, m in marks if k == "step" and j in body]
        in_steps = set().union(*[st for _, st in steps]) if steps else set()
        count = lambda idx: {c: sum(1 for x in idx if items[x][0] == "instr" and instr_class(items[x][1]) == c)
                             for c in CLASSES}
        outside = count(body - in_steps)
        per = {c: outside[c] / macs for c in CLASSES}
        if steps:
            smacs = steps[0][0]
            step_counts = [count(st) for _, st in steps]
            for c in CLASSES:
                per[c] += sum(sc[c] for sc in step_counts) / len(step_counts) / smacs
        tiles.append((sum(v for c, v in per.items() if c != "move"), per))  # moves listed, not counted
    if not tiles:
        return None, None, 0, whole_fp64, whole_local
    best = max(tiles, key=lambda t: t[0])
    return best[0], best[1], len(tiles), whole_fp64, whole_local


def demangle(names):
    if not names:
        return {}
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True)
    return dict(zip(names, out.stdout.splitlines()))


def ptxas_info(ptxas, ptx_file, entries):
    """{entry: dict(regs, stack, spill_st, spill_ld, smem, barriers)} from ptxas -v for sm_90."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [ptxas, "-arch=sm_90", "-v", "--fmad=false", "-e", ",".join(entries), "-o",
               os.path.join(tmp, "k.cubin"), ptx_file]
        r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"ptxas failed on {ptx_file}:\n{r.stderr}")
    info, cur = {}, None
    for line in r.stderr.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            cur = m.group(1)
            info[cur] = dict(regs=0, stack=0, spill_st=0, spill_ld=0, smem=0, barriers=0)
            continue
        m = re.search(r"Function properties for ([\w$]+)", line)
        if m:
            cur_props = m.group(1)
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and cur in info and cur_props == cur:
            info[cur].update(stack=int(m.group(1)), spill_st=int(m.group(2)), spill_ld=int(m.group(3)))
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and cur in info:
            info[cur]["regs"] = int(m.group(1))
            b = re.search(r"used (\d+) barriers", line)
            s = re.search(r"(\d+) bytes smem", line)
            info[cur]["barriers"] = int(b.group(1)) if b else 0
            info[cur]["smem"] = int(s.group(1)) if s else 0
    return info


def occupancy(tool, threads, regs, smem, barriers):
    r = subprocess.run([tool, str(threads), str(regs), str(smem), str(max(barriers, 1))], capture_output=True,
                       text=True, check=True)
    blocks, warps, occ, limit = r.stdout.split()
    return int(warps), float(occ), limit


def read_budgets(path):
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            head, sep, pattern = line.partition(" match=")
            if not sep:
                raise ValueError(f"{path}:{n}: no ' match=REGEX' at the end")
            tok = head.split()
            row = dict(label=tok[0], pattern=pattern.strip(), line=n)
            for t in tok[1:]:
                k, _, v = t.partition("=")
                if k not in ("file", "class", "threads", "per_mac", "fp64", "local"):
                    raise ValueError(f"{path}:{n}: unknown key '{k}'")
                row[k if k in ("file", "class", "threads") else k + "_budget"] = v
            for k in ("file", "class", "threads"):
                if k not in row:
                    raise ValueError(f"{path}:{n}: missing {k}=")
            rows.append(row)
    return rows


def measure(args, budgets, ptx_dir):
    """One result dict per budget row."""
    by_file, results = {}, []
    for b in budgets:
        by_file.setdefault(b["file"], []).append(b)
    for fname, rows in by_file.items():
        path = os.path.join(ptx_dir, fname + ".ptx")
        if not os.path.exists(path):
            for b in rows:
                results.append(dict(b, error=f"no PTX file {path}"))
            continue
        with open(path) as f:
            funcs = parse_ptx(f.read())
        names = demangle(list(funcs))
        chosen = {}
        for b in rows:
            hits = [m for m, d in names.items() if re.search(b["pattern"], d)]
            if len(hits) != 1:
                results.append(dict(b, error=f"{len(hits)} kernels of {fname}.ptx match '{b['pattern']}'"))
                continue
            chosen[id(b)] = hits[0]
        # One ptxas per kernel, side by side (each compiles only its entry and what it calls):
        # the slowest file, conv.ptx, holds ten budgeted kernels.
        entries = sorted(set(chosen.values()))
        info = {}
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            for part in pool.map(lambda e: ptxas_info(args.ptxas, path, [e]), entries):
                info.update(part)
        for b in rows:
            if id(b) not in chosen:
                continue
            entry = chosen[id(b)]
            res = dict(b, entry=entry, name=names[entry], **info.get(entry, {}))
            res["warps"], res["occ"], res["limit"] = occupancy(args.occupancy, int(b["threads"]), res["regs"],
                                                               res["smem"], res["barriers"])
            (res["per_mac_value"], res["by_class"], res["versions"], res["fp64_all"],
             res["local_all"]) = loop_cost(funcs[entry])
            results.append(res)
    return results


def check(res):
    """Violations of one row's budget."""
    if "error" in res:
        return [res["error"]]
    bad = []
    pm = res.get("per_mac_value")
    if res.get("per_mac_budget"):
        if pm is None:
            bad.append("no marked k loop (ptx_marks.h) in the kernel")
        elif pm > float(res["per_mac_budget"]) + 1e-9:
            bad.append(f"{pm:.2f} PTX instructions per MAC > budget {res['per_mac_budget']}")
    if res.get("fp64_budget") == "0" and res.get("by_class") and res["by_class"]["fp64"] > 0:
        bad.append(f"{res['by_class']['fp64']:.3f} fp64 instructions per MAC in the loop (budget: none)")
    if res.get("local_budget") == "0":
        if res.get("spill_st") or res.get("spill_ld"):
            bad.append(f"spills {res['spill_st']} B stores / {res['spill_ld']} B loads")
        if res.get("stack"):
            bad.append(f"{res['stack']} bytes stack frame (local memory)")
        if res.get("by_class") and res["by_class"]["local"] > 0:
            bad.append("local loads/stores in the loop")
    return bad


def run(args, ptx_dir, budgets):
    results = measure(args, budgets, ptx_dir)
    for r in results:
        r["violations"] = check(r)
    return results


def table(results):
    head = ("| kernel | class | regs | stack B | spill B st/ld | smem B | occupancy | PTX/MAC | fp32 | fp64 | int "
            "| logic | move | ld.shared | ld.global | branch | other | budget | |\n"
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n")
    lines = []
    for r in results:
        if "error" in r:
            lines.append(f"| {r['label']} | {r.get('class', '')} | {r['error']} |" + " |" * 17)
            continue
        c = r.get("by_class")
        f = (lambda k: f"{c[k]:.2f}") if c else (lambda k: "-")
        other = (c["other"] + c["barrier"] + c["st.shared"] + c["st.global"] + c["local"]) if c else None
        pm = r.get("per_mac_value")
        pm_text = "-" if pm is None else f"{pm:.2f}"
        if r.get("versions", 0) > 1:
            pm_text += f" (worst of {r['versions']} loop versions)"
        budget = []
        if r.get("per_mac_budget"):
            budget.append(f"<= {r['per_mac_budget']}")
        if r.get("fp64_budget") == "0":
            budget.append("no fp64")
        if r.get("local_budget") == "0":
            budget.append("no local")
        lines.append(
            f"| {r['label']} | {r['class']} | {r['regs']} | {r['stack']} | {r['spill_st']}/{r['spill_ld']} "
            f"| {r['smem']} | {r['occ']:.0%} ({r['warps']} warps, {r['limit']}) | "
            f"{pm_text} | {f('fp32')} | {f('fp64')} | {f('int')} | {f('logic')} | "
            f"{f('move')} | {f('ld.shared')} | {f('ld.global')} | {f('branch')} | "
            f"{'-' if other is None else f'{other:.2f}'} | {', '.join(budget) or '-'} | "
            f"{'FAIL: ' + '; '.join(r['violations']) if r['violations'] else 'ok'} |")
    return head + "\n".join(lines) + "\n"


# The H100 SXM5 figures of the time estimate (docs/cuda_kernels.md): 132 SMs at 1,980 MHz boost
# (NVIDIA H100 Tensor Core GPU datasheet: 67 TFLOPS FP32 = 132 SMs x 128 FMA lanes x 2 x 1.98 GHz);
# per SM and clock (CUDA C++ Programming Guide, "Arithmetic Instructions", compute capability 9.0):
# 128 fp32 add/mul/fma, 64 fp64, 64 32-bit integer add/compare/min/max and logical operations,
# and at most 4 warp instructions issued (128 thread instructions). Loads and branches are counted
# as issue slots only.
H100_SMS, H100_HZ = 132, 1.98e9
PIPES = {"fp32": (["fp32"], 128), "fp64": (["fp64"], 64), "int": (["int", "logic"], 64)}


def estimate_ms(by_class, macs):
    """Milliseconds for `macs` MACs on an H100 from PTX per MAC by class: the busiest of the issue
    slots and the fp32, fp64 and integer pipes. An estimate: PTX is not SASS."""
    issue = sum(v for c, v in by_class.items() if c != "move") / 128
    pipes = [sum(by_class[c] for c in cs) / lanes for cs, lanes in PIPES.values()]
    cycles_per_mac = max([issue] + pipes)  # per SM
    return macs * cycles_per_mac / H100_SMS / H100_HZ * 1e3


def estimate_table(results):
    head = ("| kernel | class | PTX/MAC | bound by | estimated 4096^3 time on an H100 SXM | vs cuBLAS SGEMM (2.7 ms) |\n"
            "|---|---|---:|---|---:|---:|\n")
    lines, macs = [], 4096.0 ** 3
    for r in results:
        c = r.get("by_class")
        if not c or r.get("per_mac_value") is None or r["class"] in ("generic", "generic-fused", "rounded",
                                                                      "ieee/fp32"):
            continue
        ms = estimate_ms(c, macs)
        issue = sum(v for k, v in c.items() if k != "move") / 128
        bound = max([("issue", issue)] + [(n, sum(c[x] for x in cs) / l) for n, (cs, l) in PIPES.items()],
                    key=lambda t: t[1])[0]
        lines.append(f"| {r['label']} | {r['class']} | {r['per_mac_value']:.2f} | {bound} | {ms:.1f} ms | "
                     f"{ms / 2.7:.1f}x |")
    return head + "\n".join(lines) + "\n"


def replace_in_doc(doc, text):
    with open(doc) as f:
        body = f.read()
    begin, end = "<!-- kernel-budgets begin -->", "<!-- kernel-budgets end -->"
    i, j = body.find(begin), body.find(end)
    if i < 0 or j < i:
        raise ValueError(f"{doc}: no '{begin}' ... '{end}' markers")
    with open(doc, "w") as f:
        f.write(body[:i + len(begin)] + "\n" + text + body[j:])


def report(results):
    bad = [r for r in results if r["violations"]]
    for r in results:
        state = "FAIL" if r["violations"] else "ok"
        pm = r.get("per_mac_value")
        print(f"kernel_budgets: {state:4} {r['label']}: " +
              ("; ".join(r["violations"]) if r["violations"] else
               f"{'-' if pm is None else f'{pm:.2f}'} PTX/MAC, {r['regs']} regs, stack {r['stack']} B, "
               f"occupancy {r['occ']:.0%}"))
    print(f"kernel_budgets: {len(results)} kernels, {len(bad)} over budget")
    return 1 if bad else 0


SELF_TEST_CU = r"""
#include "backends/cuda/ops/ptx_marks.h"
__global__ void __launch_bounds__(256) budget_probe(const float* a, const float* b, float* c, int K, int n) {
  float acc[4] = {0, 0, 0, 0};
#ifdef PLANT_LOCAL
  float big[64];  // indexed at run time: local memory
  for (int i = 0; i < 64; ++i) big[i] = a[i * n];
#endif
  for (int k = 0; k < K; k += 4) {
    EMU_BUDGET_BEGIN(kTile, 16);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      EMU_BUDGET_BEGIN(kStep, 4);
      for (int j = 0; j < 4; ++j) {
#ifdef PLANT_FP64
        acc[j] = (float)__dadd_rn((double)acc[j], (double)__fmul_rn(a[k + kk], b[j]));
#elif defined(PLANT_SLOW)
        acc[j] = __fadd_rn(acc[j], __fdiv_rn(__fmul_rn(a[k + kk], b[j]), b[j + 4]));
#else
        acc[j] = __fadd_rn(acc[j], __fmul_rn(a[k + kk], b[j]));
#endif
      }
      EMU_BUDGET_END(kStep);
    }
    EMU_BUDGET_END(kTile);
  }
#ifdef PLANT_LOCAL
  acc[0] += big[n & 63];
#endif
  for (int j = 0; j < 4; ++j) c[threadIdx.x * 4 + j] = acc[j];
}
"""
SELF_TEST_BUDGET = ("probe file=probe threads=256 class=fp32 per_mac={} fp64=0 local=0 "
                    "match=budget_probe\n")


def self_test(args):
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        cu = os.path.join(tmp, "probe.cu")
        with open(cu, "w") as f:
            f.write(SELF_TEST_CU)
        budgets = os.path.join(tmp, "budgets.txt")
        with open(budgets, "w") as f:
            f.write(SELF_TEST_BUDGET.format("4"))
        # Each variant: (define, must fail)
        for define, must_fail in (("", False), ("PLANT_FP64", True), ("PLANT_LOCAL", True), ("PLANT_SLOW", True)):
            d = os.path.join(tmp, define or "clean")
            os.makedirs(d)
            cmd = [args.nvcc, "-arch=compute_90", "--fmad=false", "-I", SOURCE_ROOT, "-ptx", "-o",
                   os.path.join(d, "probe.ptx"), cu]
            if define:
                cmd.insert(1, "-D" + define)
            subprocess.run(cmd, check=True)
            results = run(args, d, read_budgets(budgets))
            failed = any(r["violations"] for r in results)
            print(f"self-test {define or 'clean'}: " + ("; ".join(v for r in results for v in r["violations"])
                                                        or f"{results[0]['per_mac_value']:.2f} PTX/MAC, passes"))
            if failed != must_fail:
                failures.append(f"{define or 'clean'} {'passed' if failed is False else 'failed'} the check")
        # An fp64 multiply planted into the marked loop of a real fp32 kernel's PTX.
        real = [b for b in read_budgets(args.budgets) if b.get("fp64_budget") == "0" and b.get("per_mac_budget")]
        if not real:
            failures.append("no budget row with fp64=0 and a per-MAC budget to plant into")
        else:
            b = real[0]
            src = os.path.join(args.ptx, b["file"] + ".ptx")
            with open(src) as f:
                text = f.read()
            names = demangle(list(parse_ptx(text)))
            entry = next((m for m, dn in names.items() if re.search(b["pattern"], dn)), None)
            at = text.find(".entry " + entry) if entry else -1
            step = None
            if at >= 0:
                for m in re.finditer(r"mov\.b32\s+emu_mark,\s*(-?\d+|0[xX][0-9a-fA-F]+);", text[at:]):
                    if (int(m.group(1), 0) & 0xFFFF0000) == 0xEB210000:
                        step = at + m.start()
                        break
            if step is None:
                failures.append(f"no step mark of {b['label']} in {src}")
            else:
                # After the step mark's statement (and its inline asm block, if any), inside the step.
                eol = text.index("\n", step)
                planted = text[:eol + 1] + "\tmul.rn.f64 \t%fd_planted, %fd_planted, %fd_planted;\n" + text[eol + 1:]
                body = planted.index("{", planted.index(".entry " + entry))
                planted = planted[:body + 1] + "\n\t.reg .f64 %fd_planted;" + planted[body + 1:]
                d = os.path.join(tmp, "real")
                os.makedirs(d)
                with open(os.path.join(d, b["file"] + ".ptx"), "w") as f:
                    f.write(planted)
                # Only the planted kernel: ptxas on every kernel of the file adds ~30 s and checks nothing more.
                rows = [dict(b)]
                results = run(args, d, rows)
                hit = [r for r in results if r["violations"]]
                print(f"self-test planted fp64 in {b['file']}.ptx: " +
                      "; ".join(f"{r['label']}: {', '.join(r['violations'])}" for r in hit))
                if not any("fp64" in v for r in hit for v in r["violations"]):
                    failures.append(f"an fp64 multiply planted in {b['file']}.ptx was not detected")
    for f in failures:
        print("kernel_budgets self-test FAILED: " + f, file=sys.stderr)
    print("kernel_budgets self-test: " + ("FAILED" if failures else
                                            "planted fp64, local memory and an over-budget loop all fail; "
                                            "the clean kernel passes"))
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ptx", required=True)
    ap.add_argument("--budgets", required=True)
    ap.add_argument("--ptxas", required=True)
    ap.add_argument("--occupancy", required=True)
    ap.add_argument("--nvcc")
    ap.add_argument("--table")
    ap.add_argument("--doc")
    ap.add_argument("--no-check", action="store_true", help="report only; exit 0 over budget")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--files", help="only the rows of these kernel files (comma-separated stems, e.g. conv,gemm): "
                    "one ctest per group, side by side")
    ap.add_argument("--kernels", help="only the rows whose label before the dot is one of these (comma-separated, "
                    "e.g. conv-gi,conv-gw): splits a file's rows between ctests")
    args = ap.parse_args()
    if args.self_test:
        if not args.nvcc:
            ap.error("--self-test needs --nvcc")
        return self_test(args)
    budgets = read_budgets(args.budgets)
    if args.files:
        wanted = set(args.files.split(","))
        unknown = wanted - {b["file"] for b in budgets}
        if unknown:
            ap.error(f"--files: no row of {args.budgets} has file={','.join(sorted(unknown))}")
        budgets = [b for b in budgets if b["file"] in wanted]
    if args.kernels:
        wanted = set(args.kernels.split(","))
        unknown = wanted - {b["label"].split(".")[0] for b in budgets}
        if unknown:
            ap.error(f"--kernels: no selected row of {args.budgets} is labelled {','.join(sorted(unknown))}.*")
        budgets = [b for b in budgets if b["label"].split(".")[0] in wanted]
    results = run(args, args.ptx, budgets)
    text = table(results)
    if args.table:
        with open(args.table, "w") as f:
            f.write(text)
    if args.doc:
        replace_in_doc(args.doc, text + "\nEstimated time of a 4096 x 4096 x 4096 product from these counts "
                       "(see \"The time estimate\" below; an estimate, not a measurement):\n\n" +
                       estimate_table(results))
    rc = report(results)
    return 0 if args.no_check else rc


if __name__ == "__main__":
    sys.exit(main())
