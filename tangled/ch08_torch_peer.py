"""ch08_torch_peer.py - PyTorch's CPU scaled_dot_product_attention, timed as the
peer of chapter 8's benchmark. Tangled from chapters/app_timing.nw.
Usage: python ch08_torch_peer.py HEADS n,d,causal,threads,runs,warmup[,bits] ...
   or: python ch08_torch_peer.py decode nq,nk,heads,kv_heads,d,threads,runs,warmup,bits ...
   (decoding; prints: decode nk kv_heads threads bits runs median_s min_s max_s)
(bits: 32 for float32, the default, or 16 for bfloat16, which chapter 11 uses)
Prints: n d causal threads runs median_s min_s max_s   (one line each)."""
import statistics, sys, time
try:
    import torch
except Exception as e:  # no torch: say so in one line, exit 3
    print("# torch not available: %s" % e)
    sys.exit(3)
if sys.argv[1] == "decode":
    sdpa = torch.nn.functional.scaled_dot_product_attention
    for spec in sys.argv[2:]:
        nq, nk, heads, kv, d, threads, runs, warmup, bits = (int(x) for x in spec.split(","))
        dtype = torch.bfloat16 if bits == 16 else torch.float32
        torch.set_num_threads(threads)
        torch.manual_seed(0)
        q = torch.randn(1, heads, nq, d).to(dtype)
        k, v = (torch.randn(1, kv, nk, d).to(dtype) for _ in range(2))
        try:
            step = lambda: sdpa(q, k, v, enable_gqa=kv != heads)
            step()
        except TypeError:  # no enable_gqa: repeat K and V per query head
            ke, ve = (x.repeat_interleave(heads // kv, dim=1) for x in (k, v))
            step = lambda: sdpa(q, ke, ve)
        seconds = []
        for i in range(warmup + runs):
            start = time.perf_counter()
            step()
            if i >= warmup:
                seconds.append(time.perf_counter() - start)
        print("decode", nk, kv, threads, bits, runs, statistics.median(seconds), min(seconds),
              max(seconds), flush=True)
    sys.exit(0)
heads = int(sys.argv[1])
sdpa = torch.nn.functional.scaled_dot_product_attention
for spec in sys.argv[2:]:
    n, d, causal, threads, runs, warmup, *bits = (int(x) for x in spec.split(","))
    dtype = torch.bfloat16 if bits and bits[0] == 16 else torch.float32
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, heads, n, d).to(dtype) for _ in range(3))
    seconds = []
    for i in range(warmup + runs):
        start = time.perf_counter()
        sdpa(q, k, v, is_causal=bool(causal))
        if i >= warmup:
            seconds.append(time.perf_counter() - start)
    print(n, d, causal, threads, runs, statistics.median(seconds), min(seconds), max(seconds),
          flush=True)
    print("bench: torch n=%d d=%d causal=%d threads=%d: %.3f s" % (
        n, d, causal, threads, statistics.median(seconds)), file=sys.stderr, flush=True)
