# unusual_data.py write|check CASE DIR — one case of unusual data for the
# bad-input suite. Tangled from chapters/app_robustness.nw.
import math, struct, sys
def ordinary(n, d, salt):
    return [[((i * 7 + c * 3 + salt) % 11 - 5) / 4.0 for c in range(d)] for i in range(n)]

def spoil(t, rows, value, cols=None):
    for i in rows:
        for c in (cols if cols is not None else range(len(t[i]))):
            t[i][c] = value

CASES = {   # name: (n, causal, spoil q, k, v, dout in place)
    "nan_query": (8, False, lambda q, k, v, g: spoil(q, [2], math.nan)),
    "overflowing_scores": (8, True, lambda q, k, v, g: (spoil(q, range(8), 1e20),
                                                        spoil(k, range(8), -1e20))),
    "nan_key": (8, True, lambda q, k, v, g: spoil(k, [3], math.nan, [1])),
    "infinite_key": (8, True, lambda q, k, v, g: spoil(k, [3], math.inf, [1])),
    "nan_hidden_value": (8, True, lambda q, k, v, g: spoil(v, [5], math.nan, [0])),
    "infinite_hidden_value": (8, True, lambda q, k, v, g: spoil(v, [5], math.inf, [0])),
    "overflowing_sum": (300, False, lambda q, k, v, g: spoil(v, range(300), 2e38)),
    "nan_dout": (8, True, lambda q, k, v, g: spoil(g, [2], math.nan)),
}
D = 8

def inputs(case):
    n, causal, spoil_them = CASES[case]
    t = [ordinary(n, D, salt) for salt in range(4)]
    spoil_them(*t)
    return n, causal, [[[struct.unpack("<f", struct.pack("<f", x))[0] for x in row]
                        for row in m] for m in t]
def write_npy(path, rows):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (
        len(rows), len(rows[0]))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(b"".join(struct.pack("<f", x) for row in rows for x in row))

def read_npy(path, n):
    data = open(path, "rb").read()
    start = 10 + struct.unpack("<H", data[8:10])[0]
    flat = struct.unpack("<%df" % ((len(data) - start) // 4), data[start:])
    return [list(flat[i * D:(i + 1) * D]) for i in range(n)]
def nan_max(xs):
    return math.nan if any(math.isnan(x) for x in xs) else max(xs)

def reference(q, k, v, g, causal):
    n, scale = len(q), 1 / math.sqrt(D)
    o = [[0.0] * D for _ in range(n)]; dq = [[0.0] * D for _ in range(n)]
    dk = [[0.0] * D for _ in range(n)]; dv = [[0.0] * D for _ in range(n)]
    for i in range(n):
        seen = [j for j in range(n) if not (causal and j > i)]
        s = [scale * sum(q[i][c] * k[j][c] for c in range(D)) for j in seen]
        m = nan_max(s)
        w = [math.exp(x - m) for x in s]
        l = sum(w)
        p = [x / l for x in w]
        o[i] = [sum(p[t] * v[j][c] for t, j in enumerate(seen)) for c in range(D)]
        dsum = sum(g[i][c] * o[i][c] for c in range(D))
        for t, j in enumerate(seen):
            ds = p[t] * (sum(g[i][c] * v[j][c] for c in range(D)) - dsum) * scale
            for c in range(D):
                dv[j][c] += p[t] * g[i][c]
                dq[i][c] += ds * k[j][c]
                dk[j][c] += ds * q[i][c]
    return o, dq, dk, dv
def to_float32(x):
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)

def differences(name, got, want, values):
    for i, (a, b) in enumerate(zip(got, want)):
        b = [to_float32(x) for x in b]
        size = max([abs(x) for x in b if math.isfinite(x)] + [0.0])
        for c in range(D):
            if math.isnan(a[c]) != math.isnan(b[c]) or (math.isinf(a[c]) or math.isinf(b[c])) \
                    and a[c] != b[c]:
                return "%s[%d][%d] is %g, the reference %g" % (name, i, c, a[c], b[c])
            if values and math.isfinite(b[c]) and abs(a[c] - b[c]) > size / 64:
                return "%s[%d][%d] is %g, the reference %g" % (name, i, c, a[c], b[c])
    return None
def main(action, case, where):
    n, causal, (q, k, v, g) = inputs(case)
    if action == "write":
        for name, t in zip(("q", "k", "v", "dout"), (q, k, v, g)):
            write_npy("%s/%s.npy" % (where, name), t)
        print("--causal" if causal else "")
        return
    want = dict(zip(("o", "dq", "dk", "dv"), reference(q, k, v, g, causal)))
    for name in ("o", "dq", "dk", "dv"):
        try:
            got = read_npy("%s/%s.npy" % (where, name), n)
        except FileNotFoundError:
            continue
        problem = differences(name, got, want[name], name in ("o", "dv"))
        if problem:
            print(problem)
            return

main(*sys.argv[1:4])
