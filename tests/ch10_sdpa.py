#!/usr/bin/env python3
"""ch10_sdpa.py: PyTorch's scaled_dot_product_attention on the CUDA device, for
the shapes that ./ch10_gpu --bench measures, and the device's matrix-product
ceilings. Tangled from chapters/app_gpu_run.nw."""
import argparse
import datetime
import sys
def median_ms(torch, fn, repeats):
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    return times[len(times) // 2]

def ceilings(torch, out, repeats):
    torch.backends.cuda.matmul.allow_tf32 = False
    for dtype in (torch.float32, torch.bfloat16):
        a = torch.randn(8192, 8192, device="cuda", dtype=dtype)
        b = torch.randn(8192, 8192, device="cuda", dtype=dtype)
        ms = median_ms(torch, lambda: a @ b, repeats)
        out.write("# ceiling %s matmul 8192^3: %.1f TFLOP/s\n"
                  % (str(dtype).split(".")[-1], 2 * 8192 ** 3 / ms / 1e9))

def sweep(torch, out, repeats, header, point):
    out.write(header + "d N causal dtype ms tflops\n")
    for d in (64, 128):
        for n in (1024, 2048, 4096, 8192, 16384):
            for causal in (False, True):
                for dtype in (torch.float32, torch.bfloat16):
                    point(torch, out, repeats, d, n, causal, dtype)

def sdpa_point(torch, out, repeats, d, n, causal, dtype):
    sdpa = torch.nn.functional.scaled_dot_product_attention
    b, h = 16384 // n, 2048 // d
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=dtype) for _ in range(3))
    ms = median_ms(torch, lambda: sdpa(q, k, v, is_causal=causal), repeats)
    flops = 4 * b * h * n * n * d / (2 if causal else 1)
    out.write("%d %d %d %s %.4f %.2f\n" % (d, n, causal, str(dtype).split(".")[-1], ms,
                                          flops / ms / 1e9))
    out.flush()

def sdpa_backward_point(torch, out, repeats, d, n, causal, dtype):
    sdpa = torch.nn.functional.scaled_dot_product_attention
    b, h = 16384 // n, 2048 // d
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=dtype, requires_grad=True)
               for _ in range(3))
    o = sdpa(q, k, v, is_causal=causal)
    dout = torch.randn_like(o)
    ms = median_ms(torch, lambda: torch.autograd.grad(o, (q, k, v), dout, retain_graph=True),
                   repeats)
    flops = 2.5 * 4 * b * h * n * n * d / (2 if causal else 1)
    out.write("%d %d %d %s %.4f %.2f\n" % (d, n, causal, str(dtype).split(".")[-1], ms,
                                          flops / ms / 1e9))
    out.flush()

def main():
    parser = argparse.ArgumentParser(description="PyTorch SDPA on the CUDA device")
    parser.add_argument("--out", required=True, help="the data file to write")
    parser.add_argument("--repeats", type=int, default=10, help="timed calls per point")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("ch10_sdpa: error: no PyTorch here", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print("ch10_sdpa: error: PyTorch sees no CUDA device", file=sys.stderr)
        return 1
    with open(args.out, "w") as out:
        out.write("# %s, torch %s, %s\n" % (torch.cuda.get_device_name(0), torch.__version__,
                  datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")))
        ceilings(torch, out, args.repeats)
        sweep(torch, out, args.repeats, "# ", sdpa_point)
        sweep(torch, out, args.repeats, "# backward: ", sdpa_backward_point)
    return 0

if __name__ == "__main__":
    sys.exit(main())
