#!/usr/bin/env python3
# make_goldens.py — tangled from chapters/app_torch.nw; edit that file instead.
"""Write PyTorch's own random draws and attention outputs for the C tests.

usage: python3 tests/goldens/make_goldens.py OUTDIR [--full]

Runs itself twice: with ATEN_CPU_CAPABILITY=default (PyTorch's portable
kernels) into OUTDIR/scalar.txt, and as PyTorch runs by default (on x86-64
with AVX2) into OUTDIR/avx2.txt. --full also writes every draw as .npy."""
import os, platform, subprocess, sys
SEEDS = (0, 1, 42)
SHAPES = ("1", "15", "16", "17", "4x2048", "2x4x1024x64")
CHAPTER_DRAWS = ("4x2048", "1x4x1000x64*3", "2x4x1024x64*3", "1x2x2048x64*3")
SDPA_SHAPES = ("1x1x16x8", "1x2x37x16", "1x2x64x32")
WINDOW_SHAPE, WINDOWS = "2x4x1024x64", (256, 64)
SAMPLE = 32   # a draw longer than 2 * SAMPLE keeps its first and last SAMPLE values
def shape_of(text):
    return tuple(int(n) for n in text.split("x"))


def draws_of(spec):
    """'1x4x1000x64*3' -> three draws of that shape after one seed."""
    shape, _, times = spec.partition("*")
    return [shape_of(shape)] * int(times or 1)
def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "--child":
        return child(sys.argv[2], sys.argv[3], "--full" in sys.argv)
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    os.makedirs(sys.argv[1], exist_ok=True)
    for path, capability in (("scalar", "default"), ("avx2", None)):
        env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
        if capability:
            env["ATEN_CPU_CAPABILITY"] = capability
        subprocess.run([sys.executable, __file__, "--child", path] + sys.argv[1:],
                       env=env, check=True)
def checksum(words):
    import numpy as np
    odd = 2 * np.arange(words.size, dtype=np.uint64) + 1
    return int((words.astype(np.uint64) * odd).sum(dtype=np.uint64))


def hex_words(words):
    return " ".join("%08x" % w for w in words.tolist())


def sample_of(words):
    import numpy as np
    if words.size <= 2 * SAMPLE:
        return words
    return np.concatenate([words[:SAMPLE], words[-SAMPLE:]])
def draw_line(torch, op, seed, spec, out, full, index, path):
    import numpy as np
    torch.manual_seed(seed)
    sampler = torch.randn if op == "randn" else torch.rand
    values = np.concatenate([sampler(*shape).numpy().ravel() for shape in draws_of(spec)])
    words = values.view(np.uint32)
    if full:
        np.save(os.path.join(out, "%s_%d.npy" % (path, index)), values)
    return "%s %d %s %d %016x %s" % (op, seed, spec, words.size, checksum(words),
                                     hex_words(sample_of(words)))
def sdpa_line(torch, seed, spec, causal):
    import numpy as np
    torch.manual_seed(seed)
    q, k, v = (torch.randn(*shape_of(spec)) for _ in range(3))
    o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    words = o.numpy().ravel().view(np.uint32)
    return "sdpa %d %s %d %d %s" % (seed, spec, int(causal), words.size, hex_words(words))
def window_line(torch, seed, spec, w):
    torch.manual_seed(seed)
    q, k, v = (torch.randn(*shape_of(spec)) for _ in range(3))
    i = torch.arange(q.shape[-2]).unsqueeze(1)
    j = torch.arange(q.shape[-2]).unsqueeze(0)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    causal = sdpa(q, k, v, is_causal=True)
    windowed = sdpa(q, k, v, attn_mask=(j <= i) & (j > i - w))
    return "window %d %s %d %.6f" % (seed, spec, w, (windowed - causal).abs().max().item())
def provenance(torch, path):
    cpu = platform.machine()
    if os.path.exists("/proc/cpuinfo"):
        names = [l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                 if l.startswith("model name")]
        cpu = names[0] if names else cpu
    return ["# %s.txt, written by tests/goldens/make_goldens.py (chapters/app_torch.nw)" % path,
            "# torch %s, CPU capability %s, ATEN_CPU_CAPABILITY=%s, %s, Python %s"
            % (torch.__version__, torch.backends.cpu.get_cpu_capability(),
               os.environ.get("ATEN_CPU_CAPABILITY", "unset"), cpu, platform.python_version()),
            "# lines: randn|rand seed shape[*times] count checksum words | "
            "sdpa seed shape causal count words | window seed shape w max-difference"]
def child(path, out, full):
    import torch
    torch.set_num_threads(1)
    if path == "avx2" and torch.backends.cpu.get_cpu_capability() not in ("AVX2", "AVX512"):
        print("make_goldens: PyTorch's default kernel here is not AVX2: no avx2.txt",
              file=sys.stderr)
        return
    specs = [(op, s, shape) for op in ("randn", "rand") for s in SEEDS for shape in SHAPES]
    specs += [("randn", 0, spec) for spec in CHAPTER_DRAWS]
    lines = provenance(torch, path)
    lines += [draw_line(torch, *spec, out, full, i, path) for i, spec in enumerate(specs)]
    lines += [sdpa_line(torch, 0, s, c) for s in SDPA_SHAPES for c in (False, True)]
    lines += [window_line(torch, 0, WINDOW_SHAPE, w) for w in WINDOWS]
    with open(os.path.join(out, path + ".txt"), "w") as f:
        f.write("\n".join(lines) + "\n")

if __name__ == "__main__":
    main()
