#!/usr/bin/env python3
"""ch10_sass.py: chapter 10's kernels read in their machine code (SASS), without a GPU.
Counts what each warp issues per key tile in the tensor-core kernels' main loop, the
registers, spills, shared-memory bytes per MMA and blocks per SM, holds them to the
chapter's budgets (--check), and writes them as receipts (--json).
Tangled from chapters/ch10_gpu.nw."""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
SM_LIMITS = {
    "sm_80": {"regs": 65536, "smem": 167936, "threads": 2048, "blocks": 32},
    "sm_90": {"regs": 65536, "smem": 233472, "threads": 2048, "blocks": 32},
}
RESERVED_SMEM = 1024          # per block, kept by the CUDA runtime
REG_UNIT = 256                # registers are given to a warp in units of 256
KERNELS = {                   # name: (mangled name, threads, dynamic shared bytes, width)
    "tc_forward_64": ("_Z17gpu_tc_forward_648gpu_args", 128, 2 * 2 * 64 * (64 + 8) * 2, 64),
    "tc_forward_128": ("_Z18gpu_tc_forward_1288gpu_args", 256, 2 * 2 * 64 * (128 + 8) * 2, 128),
    "fused_forward": ("_Z17gpu_fused_forward8gpu_args", 128, 0, None),
    "bwd_keys": ("_Z12gpu_bwd_keys12gpu_bwd_args", 128, 0, None),
    "tc_backward_64": ("_Z18gpu_tc_backward_6412gpu_bwd_args", 128,
                       (4 * 64 * (64 + 8) + 64 * 72) * 2, 64),
    "tc_backward_128": ("_Z19gpu_tc_backward_12812gpu_bwd_args", 128,
                        (4 * 64 * (128 + 8) + 64 * 72) * 2, 128),
}
CLASSES = ("HMMA", "LDSM", "LDGSTS", "MUFU", "RED")

def read_sass(text):
    """{arch: {function: [(address, opcode, operands)]}} from cuobjdump -sass."""
    out, arch, fn = {}, None, None
    for line in text.splitlines():
        m = re.match(r"\s*arch = (sm_\d+)", line)
        if m:
            arch = m.group(1); out.setdefault(arch, {}); fn = None; continue
        m = re.match(r"\s*Function : (\S+)", line)
        if m and arch:
            fn = m.group(1); out[arch][fn] = []; continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if m and fn:
            body = m.group(2).strip()
            pred = ""
            if body.startswith("@"):
                pred, body = body.split(None, 1)
            op, _, rest = body.partition(" ")
            out[arch][fn].append((int(m.group(1), 16), pred, op, rest))
    return out


def read_usage(text):
    """{(arch, function): {"regs": r, "spill": bytes, "smem": static bytes}} from ptxas."""
    out, key = {}, None
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '(\S+)' for '(sm_\d+)'", line)
        if m:
            key = (m.group(2), m.group(1)); out[key] = {"regs": 0, "spill": 0, "smem": 0}
            continue
        if key is None:
            continue
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            out[key]["spill"] = int(m.group(1)) + int(m.group(2))
        m = re.search(r"Used (\d+) registers", line)
        if m:
            out[key]["regs"] = int(m.group(1))
        m = re.search(r"(\d+) bytes smem", line)
        if m:
            out[key]["smem"] = int(m.group(1))
    return out

def branch_target(ins):
    m = re.search(r"(0x[0-9a-f]+)$", ins[3].strip())   # "0x...", or "P3, 0x..."
    return int(m.group(1), 16) if ins[2].startswith("BRA") and m else None


def main_loop(code):
    """The loop over key tiles: of the loops (backward branches), the one holding
    the most tensor-core instructions. Returns its instructions and its back branch."""
    best = None
    for i, ins in enumerate(code):
        t = branch_target(ins)
        if t is None or t >= ins[0]:
            continue
        body = [x for x in code if t <= x[0] <= ins[0]]
        hmma = sum(x[2].startswith("HMMA") for x in body)
        if hmma and (best is None or hmma > best[0]):
            best = (hmma, body)
    return best[1] if best else None

def tile_path(body):
    """The instructions a warp issues for an interior tile: of the paths through
    the loop body, the one that issues the next tile's copies (most LDGSTS), does
    all of its exponentials and atomic adds, and among those is the shortest
    (no mask to apply)."""
    start, end = body[0][0], body[-1][0]
    leaders = {start}
    for k, ins in enumerate(body):
        t = branch_target(ins)
        if t is not None or ins[2].startswith("EXIT"):
            if t is not None and start <= t <= end:
                leaders.add(t)
            if k + 1 < len(body):
                leaders.add(body[k + 1][0])
    blocks, cur = [], []
    for ins in body:
        if ins[0] in leaders and cur:
            blocks.append(cur); cur = []
        cur.append(ins)
    blocks.append(cur)
    index = {b[0][0]: n for n, b in enumerate(blocks)}
    best = {0: (path_score(blocks[0]), [0])}
    for n, b in enumerate(blocks):
        if n not in best or b[-1][0] == end:
            continue
        last, succ = b[-1], []
        t = branch_target(last)
        if t is None or last[1]:
            succ.append(n + 1)
        if t is not None and start < t <= end and t > last[0]:
            succ.append(index[t])
        for s in succ:
            sb = blocks[s]
            score = tuple(a + b for a, b in zip(best[n][0], path_score(sb)))
            if s not in best or score > best[s][0]:
                best[s] = (score, best[n][1] + [s])
    final = index[max(k for k in index if k <= end)]
    return [ins for n in best[final][1] for ins in blocks[n]]



def path_score(block):
    """What a block adds to a path, compared in this order: copies, work, brevity."""
    return (sum(x[2].startswith("LDGSTS") for x in block),
            sum(x[2].startswith(("MUFU", "RED")) for x in block), -len(block))

def smem_bytes(ins):
    """Bytes a warp reads from shared memory with one instruction."""
    op = ins[2]
    if op.startswith("LDSM"):
        return 128 * (4 if op.endswith(".4") else 2 if op.endswith(".2") else 1)
    if op.startswith("LDS"):
        m = re.search(r"\.(64|128)\b", op)
        return 32 * (int(m.group(1)) // 8 if m else 4)
    return 0


def tile_counts(path):
    counts = {c: sum(x[2].startswith(c) for x in path) for c in CLASSES}
    counts["rest"] = len(path) - sum(counts.values())
    counts["issued"] = len(path)
    counts["smem_per_mma"] = sum(smem_bytes(x) for x in path) / max(counts["HMMA"], 1)
    return counts


def blocks_per_sm(arch, regs, threads, smem):
    lim = SM_LIMITS[arch]
    warps = threads // 32
    per_warp = -(-regs * 32 // REG_UNIT) * REG_UNIT
    by_regs = lim["regs"] // (warps * per_warp)
    by_smem = lim["smem"] // (smem + RESERVED_SMEM) if smem else lim["blocks"]
    return min(by_regs, by_smem, lim["threads"] // threads, lim["blocks"])

def measure(sass, usage):
    rows = []
    for arch in sorted(sass):
        for name, (mangled, threads, dyn, width) in KERNELS.items():
            u = usage.get((arch, mangled))
            if u is None or mangled not in sass[arch]:
                continue
            smem = u["smem"] + dyn
            row = {"kernel": name, "arch": arch, "width": width, "regs": u["regs"],
                   "spill": u["spill"], "smem": smem,
                   "blocks": blocks_per_sm(arch, u["regs"], threads, smem)}
            if width:
                body = main_loop(sass[arch][mangled])
                row.update(tile_counts(tile_path(body)))
            rows.append(row)
    return rows

BUDGETS = {
    # registers at most, blocks per SM at least; for tc_forward_*: the rest
    # per key tile at most, on sm_80 and sm_90
    "tc_forward_64": {"regs": 168, "blocks": 3, "rest": {"sm_80": 266, "sm_90": 274}},
    "tc_forward_128": {"regs": 255, "blocks": 1, "rest": {"sm_80": 293, "sm_90": 307}},
    "fused_forward": {"regs": 255, "blocks": 2},
    "bwd_keys": {"regs": 255, "blocks": 2},
    "tc_backward_64": {"regs": 255, "blocks": 2},
    "tc_backward_128": {"regs": 255, "blocks": 2},
}
SMEM_PER_MMA = 272        # bytes of shared memory a warp reads per HMMA, at most


def tile_budget(w):
    """What the algorithm asks of a warp per key tile of 64 keys at width w."""
    return {"HMMA": w, "LDSM": w // 2, "LDGSTS": 8, "MUFU": 2 * 16 + 2}

BUDGETS["tc_backward_64"]["rest"] = {"sm_80": 1009, "sm_90": 967}
BUDGETS["tc_backward_128"]["rest"] = {"sm_80": 1586, "sm_90": 1601}


def backward_tile_budget(w):
    """What the algorithm asks of a warp per query tile of 64 queries at width w."""
    return {"HMMA": 5 * w // 2, "LDSM": 5 * w // 4 + 2 * (w // 16) + 4, "LDGSTS": w // 8,
            "MUFU": 16 * 64 // 32, "RED": w // 2}


def budget_per_tile(kernel, w):
    return backward_tile_budget(w) if kernel.startswith("tc_backward") else tile_budget(w)

def verdicts(rows):
    """(ok, text) for every budget of every row."""
    out = []
    for r in rows:
        b, name = BUDGETS[r["kernel"]], "%s %s" % (r["kernel"], r["arch"])
        out.append((r["spill"] == 0, "%s: %d bytes spilled" % (name, r["spill"])))
        out.append((r["regs"] <= b["regs"], "%s: %d registers <= %d" % (name, r["regs"], b["regs"])))
        out.append((r["blocks"] >= b["blocks"], "%s: %d blocks per SM >= %d"
                    % (name, r["blocks"], b["blocks"])))
        if r["width"]:
            for c, want in budget_per_tile(r["kernel"], r["width"]).items():
                out.append((r[c] == want, "%s: %d %s per tile == %d" % (name, r[c], c, want)))
            rest = b["rest"][r["arch"]]
            out.append((r["rest"] <= rest, "%s: %d other instructions per tile <= %d"
                        % (name, r["rest"], rest)))
            if r["kernel"].startswith("tc_forward"):
                out.append((r["smem_per_mma"] <= SMEM_PER_MMA, "%s: %.0f shared bytes per MMA <= %d"
                            % (name, r["smem_per_mma"], SMEM_PER_MMA)))
    return out

PEAK = 989.4              # TFLOP/s, dense bf16, H100/H200 SXM datasheet
SMS, SUBS = 132, 4        # SMs, schedulers (and tensor cores) per SM
CLOCK = PEAK * 1e12 / (SMS * SUBS * 1024)   # the clock at which 1024 FLOP/clock give PEAK
MMA_CLOCKS = 6            # mma.sync at two thirds of the datasheet rate (an assumption)
FA2_H100_D128 = 370       # TFLOP/s: FlashAttention-2's forward, H100 SXM5, d = 128, N = 16k,
                          # no mask (as published with FlashAttention-3, Shah et al. 2024)


def model(r):
    """TFLOP/s per the model: serial (issue, then tensor, never overlapped) and
    overlapped (the larger of the two only)."""
    useful = 4096 * r["HMMA"] / 1024          # clocks of tensor work at the datasheet rate
    serial = r["issued"] - r["HMMA"] + MMA_CLOCKS * r["HMMA"]
    overlap = max(r["issued"], MMA_CLOCKS * r["HMMA"])
    return PEAK * useful / serial, PEAK * useful / overlap

def fmt(x):
    return "n/a" if x is None else "%.0f" % x


def steps_table(path, rows):
    """The recorded steps of tuning (kernel, arch, registers, issued, rest per tile),
    and this build's reading as the last row."""
    out = []
    with open(path) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                out.append([c.strip() for c in line.split("|")])
    for r in rows:
        if r["width"] and r["arch"] == "sm_90":
            out.append(["this build", r["kernel"], r["arch"], fmt(r["regs"]), fmt(r["issued"]),
                        fmt(r["rest"])])
    return {"title": "The tensor-core kernels' machine code, step by step (sm_90, per warp and key tile)",
            "columns": ["step", "kernel", "arch", "registers", "issued", "rest"], "rows": out}


def receipts(rows, why=None, steps=None):
    """The receipts: a fact per figure, the table of the machine code, the model."""
    facts, sass_rows, model_rows = {}, [], []
    facts["read"] = why or "read"
    for r in rows:
        key = "%s_%s" % (r["kernel"], r["arch"])
        for f in ("regs", "spill", "blocks", "smem"):
            facts["%s_%s" % (key, f)] = fmt(r[f])
        if r["width"]:
            for f in CLASSES + ("rest", "issued", "smem_per_mma"):
                facts["%s_%s" % (key, f)] = fmt(r[f])
        sass_rows.append([r["kernel"], r["arch"]] + [fmt(r[f]) for f in ("regs", "spill", "blocks")] +
                         ([fmt(r[c]) for c in CLASSES + ("rest", "issued", "smem_per_mma")]
                          if r["width"] else ["—"] * (len(CLASSES) + 3)))
        if r["width"] and r["arch"] == "sm_90":
            serial, overlap = model(r) if r["issued"] is not None else (None, None)
            facts[key + "_model_serial"] = fmt(serial)
            facts[key + "_model_overlap"] = fmt(overlap)
            facts[key + "_limit"] = "n/a" if serial is None else (
                "instruction issue" if r["issued"] > MMA_CLOCKS * r["HMMA"] else "the tensor cores")
            facts[key + "_of_fa2"] = "n/a" if serial is None else "%.2f–%.2f" % (
                serial / FA2_H100_D128, overlap / FA2_H100_D128)
            model_rows.append([r["kernel"], fmt(r["issued"]), fmt(r["HMMA"]),
                               fmt(r["HMMA"] and MMA_CLOCKS * r["HMMA"]), fmt(serial), fmt(overlap)])
    facts["clock_ghz"] = "%.2f" % (CLOCK / 1e9)
    facts["mma_clocks"] = "%d" % MMA_CLOCKS
    facts["forward_speed"] = speed_statement(facts, why)
    tables = {
        "sass": {"title": "Chapter 10's kernels in their machine code (nvcc's SASS): per warp and key tile of the main loop",
                 "columns": ["kernel", "arch", "registers", "spilled bytes", "blocks per SM"] +
                            list(CLASSES) + ["rest", "issued", "shared bytes per MMA"],
                 "rows": sass_rows},
        "model": {"title": "The model's TFLOP/s on an H200 (a model, not a measurement)",
                  "columns": ["kernel", "issued per tile", "HMMA per tile", "tensor clocks per tile",
                              "serial TFLOP/s", "overlapped TFLOP/s"],
                  "rows": model_rows},
        "steps": steps_table(steps, rows),
    }
    text = "".join("%s\n" % " ".join(row) for row in sass_rows)
    return {"program": "ch10_sass", "facts": facts, "tables": tables, "text": text}

def speed_statement(facts, why, recorded="chapters/recorded/ch10_gpu_speed.txt"):
    """The speed of the tensor-core forward, as the chapter states it."""
    if os.path.exists(recorded):
        with open(recorded) as f:
            lines = [l.strip() for l in f if l.strip() and not l.startswith("#")]
        if lines:
            return "measured: " + lines[0]
    k = "tc_forward_128_sm_90"
    if facts.get(k + "_model_serial", "n/a") == "n/a":
        return "not modelled here: the kernels' machine code was not read (%s)" % (why or "n/a")
    return ("modelled, not measured: %s to %s TFLOP/s on an H200, %s times FlashAttention-2's "
            "%d, from %s instructions issued and %s HMMA of %s clocks per warp and key tile, "
            "with every scheduler always holding a ready warp" % (
                facts[k + "_model_serial"], facts[k + "_model_overlap"],
                facts[k + "_of_fa2"].replace("–", " to "), FA2_H100_D128,
                facts[k + "_issued"], facts[k + "_HMMA"], facts["mma_clocks"]))

def find_cuobjdump(cuda_home):
    places = ([os.path.join(cuda_home, "bin", "cuobjdump")] if cuda_home else []) + \
        [shutil.which("cuobjdump") or ""] + \
        sorted(glob.glob(".build/sass-venv/lib/python3*/site-packages/nvidia/cu*/bin/cuobjdump"))
    return next((p for p in places if p and os.access(p, os.X_OK)), None)

def unread_rows():
    """Every row with its figures unknown: the receipts' shape when nothing was read."""
    rows = []
    for arch in sorted(SM_LIMITS):
        for name, (_, _, _, width) in KERNELS.items():
            r = {"kernel": name, "arch": arch, "width": width}
            for f in ("regs", "spill", "blocks", "smem", "smem_per_mma", "issued") + CLASSES + ("rest",):
                r[f] = None
            rows.append(r)
    return rows


def main():
    ap = argparse.ArgumentParser(description="chapter 10's kernels in their machine code")
    ap.add_argument("--cuda-home", default="", help="where nvcc's toolkit is")
    ap.add_argument("--object", help="the CUDA object file, built for sm_80 and sm_90")
    ap.add_argument("--usage", help="ptxas's resource report for that object")
    ap.add_argument("--check", action="store_true", help="hold the figures to the budgets")
    ap.add_argument("--json", action="store_true", help="print the receipts as JSON")
    ap.add_argument("--why", default="", help="with no cuobjdump: why, for the receipts")
    ap.add_argument("--steps", default="chapters/recorded/ch10_sass_steps.txt",
                    help="the recorded steps of tuning")
    a = ap.parse_args()
    a.cuobjdump = None if a.why else find_cuobjdump(a.cuda_home)
    a.why = a.why or "no cuobjdump in %s/bin, on PATH or in .build/sass-venv" % a.cuda_home
    if not a.cuobjdump:
        if a.json:
            print(json.dumps(receipts(unread_rows(), "not read (%s)" % a.why, a.steps)))
        else:
            print("check-sass: skipped: %s" % a.why)
        return 0
    sass = read_sass(subprocess.run([a.cuobjdump, "-sass", a.object], capture_output=True,
                                    text=True, check=True).stdout)
    with open(a.usage) as f:
        rows = measure(sass, read_usage(f.read()))
    if a.json:
        print(json.dumps(receipts(rows, None, a.steps)))
    if not a.check:
        return 0
    failed = 0
    for ok, text in verdicts(rows):
        print("%s - %s" % ("ok" if ok else "not ok", text))
        failed += not ok
    print("# %d budget(s) exceeded" % failed if failed else "# every budget kept")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

