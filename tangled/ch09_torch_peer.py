"""ch09_torch_peer.py: PyTorch's CPU backward of scaled_dot_product_attention,
median seconds on one line. Tangled from chapters/ch09_backward.nw."""
import argparse, statistics, sys, time
def main():
    a = argparse.ArgumentParser()
    a.add_argument("--heads", type=int, required=True)
    a.add_argument("--dim", type=int, required=True)
    a.add_argument("--points", nargs="+", required=True, help="N:THREADS:REPEATS")
    args = a.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit(1)
    for point in args.points:
        n, threads, repeats = (int(x) for x in point.split(":"))
        torch.set_num_threads(threads)
        times = backward_times(torch, n, args.heads, args.dim, repeats)
        print("%d %d %.6f" % (n, threads, statistics.median(times)), flush=True)
def backward_times(torch, n, heads, dim, repeats):
    shape = (1, heads, n, dim)
    q, k, v = (torch.randn(shape, requires_grad=True) for _ in range(3))
    dout, times = torch.randn(shape), []
    for i in range(repeats + 1):
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        start = time.perf_counter()
        o.backward(dout)
        times.append(time.perf_counter() - start)
        q.grad = k.grad = v.grad = None
    return times[1:]

main()
