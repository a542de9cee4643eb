"""ch09_torch_peer.py: PyTorch's CPU backward of scaled_dot_product_attention,
median seconds on one line. Tangled from chapters/ch09_backward.nw."""
import argparse, statistics, sys, time
def main():
    a = argparse.ArgumentParser()
    for name in ("n", "heads", "dim", "threads", "repeats"):
        a.add_argument("--" + name, type=int, required=True)
    args = a.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit(1)
    torch.set_num_threads(args.threads)
    print("%.6f" % statistics.median(backward_times(torch, args)))
def backward_times(torch, args):
    shape = (1, args.heads, args.n, args.dim)
    q, k, v = (torch.randn(shape, requires_grad=True) for _ in range(3))
    dout, times = torch.randn(shape), []
    for i in range(args.repeats + 1):          # the first is a warm-up
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        start = time.perf_counter()
        o.backward(dout)
        times.append(time.perf_counter() - start)
        q.grad = k.grad = v.grad = None
    return times[1:]

main()
