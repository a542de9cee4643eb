#!/bin/sh
# cli_ch13_ring.sh — chapter 13's ring under mpirun (run from the repository root).
# Tangled from chapters/ch13_ring.nw.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Under make check SAN=1: Open MPI leaves its own allocations (some in
# components it has already unloaded, which no suppression can name) at
# MPI_Finalize; leak detection is off for these jobs, the rest of ASan on.
if [ -n "${FA_SAN:-}" ]; then export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"; fi
fail=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
ok() { echo "ok - $1"; }
bad() { echo "not ok - $1"; fail=1; }
ring() {   # ring RANKS TRANSPORT ARGS...: run the job, output in $tmp/out
    np=$1; tr=$2; shift 2
    timeout 60 mpirun -q -np "$np" --mca btl "$tr" ./ch13_ring "$@" > "$tmp/out" 2> "$tmp/err"
}
for np in 1 2 3 4; do
  for tr in self,vader tcp,self; do
    if [ $tr = self,vader ]; then
      cases="--seq=97:--seq-k=131:--dim=32 --seq=97:--seq-k=64:--dim=128:--causal"
    else
      cases="--seq=131:--dim=64:--causal:--layout=zigzag --seq=70:--seq-k=97:--dim=64:--causal"
    fi
    for case in $cases; do
      args=$(echo "$case" | tr ':=' '  ')
      if ring $np $tr --check --backward --heads 2 $args && grep -q '^agree  *yes' "$tmp/out"
      then ok "P = $np, $tr, $args: agrees with chapters 8 and 9"
      else bad "P = $np, $tr, $args"; cat "$tmp/out" "$tmp/err" | sed 's/^/#   /'; fi
    done
  done
done
args="--check --backward --causal --layout zigzag --seq 131 --seq-k 131 --dim 64 --heads 2"
ring 3 self,vader $args; a=$(grep '^digest' "$tmp/out")
ring 3 tcp,self $args; b=$(grep '^digest' "$tmp/out")
ring 2 self,vader $args; c=$(grep '^digest' "$tmp/out")
if [ -n "$a" ] && [ "$a" = "$b" ]; then ok "P = 3 twice (two transports): the same bits ($a)"
else bad "P = 3 twice: '$a' and '$b'"; fi
if [ -n "$c" ] && [ "$a" != "$c" ]; then ok "P = 2 and P = 3: different bits"
else bad "P = 2 and P = 3 should differ in their bits: '$a' and '$c'"; fi
./ch13_ring > "$tmp/receipts"
if grep -q '^zigzag_imbalance  *1.000$' "$tmp/receipts" && grep -q '^plain_imbalance  *1.750$' "$tmp/receipts"
then ok "zigzag balances the causal work; the plain ring's last rank does 1.75 times the mean"
else bad "the layouts' work"; sed 's/^/#   /' "$tmp/receipts"; fi
python3 - "$tmp" <<'EOF'
import struct, sys, random
def save(path, shape, seed):
    random.seed(seed); n = 1
    for s in shape: n *= s
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % "".join("%d, " % s for s in shape)
    hdr = hdr + " " * (63 - (len(hdr) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
        f.write(struct.pack("<%df" % n, *[random.gauss(0, 1) for _ in range(n)]))
d = sys.argv[1]
save(d + "/q.npy", (2, 50, 16), 1); save(d + "/k.npy", (2, 61, 16), 2)
save(d + "/v.npy", (2, 61, 16), 3); save(d + "/do.npy", (2, 50, 16), 4)
EOF
files="--q $tmp/q.npy --k $tmp/k.npy --v $tmp/v.npy --dout $tmp/do.npy --backward --causal"
if ring 3 self,vader $files --out "$tmp/o3.npy" --dq "$tmp/dq3.npy" --dk "$tmp/dk3.npy" --dv "$tmp/dv3.npy" &&
   ./ch13_ring $files --out "$tmp/o1.npy" --dq "$tmp/dq1.npy" --dk "$tmp/dk1.npy" --dv "$tmp/dv1.npy" > /dev/null 2>&1 &&
   python3 -c '
import struct, sys
def load(p):
    b = open(p, "rb").read(); n = struct.unpack("<H", b[8:10])[0]
    return struct.unpack("<%df" % ((len(b) - 10 - n) // 4), b[10 + n:])
worst = max(abs(a - b) for t in sys.argv[2:] for a, b in zip(load(sys.argv[1] + "/" + t + "3.npy"), load(sys.argv[1] + "/" + t + "1.npy")))
sys.exit(0 if worst <= 1e-5 else 1)' "$tmp" o dq dk dv
then ok "files: three ranks write what one process writes"
else bad "files under mpirun"; cat "$tmp/err" | sed 's/^/#   /'; fi
cp "$tmp/q.npy" "$tmp/keep.npy"
for args in "--q $tmp/keep.npy --k $tmp/k.npy --v $tmp/v.npy --out $tmp/keep.npy" \
            "--layout spiral" "--fault-rank 7" "--seq 1000000000 --seq-k 1000000000 --heads 1024"; do
  ring 2 self,vader $args; rc=$?
  lines=$(grep -c "^ch13_ring" "$tmp/err")
  if [ $rc -eq 2 ] && [ "$lines" -eq 1 ] && cmp -s "$tmp/q.npy" "$tmp/keep.npy"
  then ok "refused on rank 0, one line, exit 2: $args"
  else bad "bad input $args: exit $rc, $lines lines"; sed 's/^/#   /' "$tmp/err"; fi
done
start=$(date +%s)
ring 3 tcp,self $files --fault-rank 1 --out "$tmp/dead.npy" --dq "$tmp/dq.npy" --dk "$tmp/dk.npy" --dv "$tmp/dv.npy"
rc=$?; took=$(( $(date +%s) - start ))
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $took -lt 30 ] && ! ls "$tmp"/dead.npy* > /dev/null 2>&1
then ok "a killed rank ends the job: exit $rc in ${took}s, no output"
else bad "killed rank: exit $rc in ${took}s"; ls "$tmp" | sed 's/^/#   /'; fi
exit $fail
