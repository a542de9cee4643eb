#!/bin/sh
# cli_ch10_gpu.sh — command-line tests of ./ch10_gpu (run from the repository root).
# Tangled from chapters/app_gpu_run.nw.
set -u
prog=./ch10_gpu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
pass() { echo "ok - $1"; }
fail() { echo "not ok - $1"; failures=$((failures + 1)); }
largest_diff() {   # largest_diff A.npy B.npy COUNT
    tail -c $(($3 * 4)) "$1" | od -An -v -tf4 -w4 > "$tmp/a.txt"
    tail -c $(($3 * 4)) "$2" | od -An -v -tf4 -w4 > "$tmp/b.txt"
    paste "$tmp/a.txt" "$tmp/b.txt" |
        awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d } END { printf "%.3e\n", m }'
}
smaller() { awk -v x="$1" -v y="$2" 'BEGIN { exit !(x + 0 < y + 0) }'; }

refuses() {   # refuses NAME ARGS...
    name=$1; shift
    rm -f "$tmp/out.npy"
    $prog "$@" > /dev/null 2> "$tmp/err.txt"; status=$?
    lines=$(wc -l < "$tmp/err.txt")
    if [ "$status" -eq 2 ] && [ "$lines" -eq 1 ] && [ ! -e "$tmp/out.npy" ]; then
        pass "refuses $name: $(cat "$tmp/err.txt")"
    else
        fail "refuses $name (status $status, $lines stderr lines)"
    fi
}

./ch04_tiled --batch 2 --heads 3 --seq 37 --seq-k 45 --dim 5 --seed 4 \
    --save "$tmp/s" > /dev/null || { fail "./ch04_tiled --save (is it built?)"; exit 1; }
files="--q $tmp/s/q.npy --k $tmp/s/k.npy --v $tmp/s/v.npy"
for flags in "" "--causal"; do
    ./ch04_tiled $files --out "$tmp/ref.npy" --reference $flags > /dev/null
    for kernel in naive fused; do
        rm -f "$tmp/o.npy"
        $prog --device cpu --kernel $kernel $files --out "$tmp/o.npy" $flags > /dev/null
        [ -s "$tmp/o.npy" ] && [ -s "$tmp/ref.npy" ] || { fail "$kernel '$flags' wrote no output"; continue; }
        diff=$(largest_diff "$tmp/o.npy" "$tmp/ref.npy" $((2 * 3 * 37 * 5)))
        if smaller "$diff" 1e-5; then pass "$kernel '$flags' equals the reference ($diff)"
        else fail "$kernel '$flags' differs from the reference by $diff"; fi
    done
done

./ch04_tiled --heads 2 --seq 70 --seq-k 90 --dim 16 --seed 5 --save "$tmp/t" > /dev/null ||
    fail "./ch04_tiled --save"
tc_files="--q $tmp/t/q.npy --k $tmp/t/k.npy --v $tmp/t/v.npy"
for flags in "" "--causal"; do
    ./ch04_tiled $tc_files --out "$tmp/ref.npy" --reference $flags > /dev/null
    rm -f "$tmp/o.npy"
    $prog --device cpu --kernel tc $tc_files --out "$tmp/o.npy" $flags > /dev/null
    diff=$(largest_diff "$tmp/o.npy" "$tmp/ref.npy" $((2 * 70 * 16)))
    if [ -s "$tmp/o.npy" ] && smaller "$diff" 0.015625; then pass "tc '$flags' near the reference ($diff)"
    else fail "tc '$flags' differs from the reference by $diff"; fi
done

json=$($prog --device cpu --seq 20 --dim 8 --json)
if printf '%s' "$json" | grep -q '"fused_error": "'; then pass "--json reports fused_error"
else fail "--json has no fused_error"; fi
if $prog --help > /dev/null; then pass "--help exits 0"; else fail "--help"; fi

./ch04_tiled --seq 4 --dim 200 --save "$tmp/wide" > /dev/null || fail "./ch04_tiled --save"
head -c 70 "$tmp/s/q.npy" > "$tmp/short.npy"
out="--out $tmp/out.npy"
refuses "an unknown device" --device tpu $files $out
refuses "an unknown kernel" --device cpu --kernel slow $files $out
refuses "--dim past 128" --device cpu --dim 200
refuses "d = 200 in a file" --device cpu --q "$tmp/wide/q.npy" --k "$tmp/wide/k.npy" \
    --v "$tmp/wide/v.npy" $out
refuses "a missing file" --device cpu --q "$tmp/none.npy" --k "$tmp/s/k.npy" \
    --v "$tmp/s/v.npy" $out
refuses "a truncated file" --q "$tmp/short.npy" --k "$tmp/s/k.npy" --v "$tmp/s/v.npy" $out
refuses "q and k that do not fit" --device cpu --q "$tmp/wide/q.npy" --k "$tmp/s/k.npy" \
    --v "$tmp/s/v.npy" $out
refuses "--q without --out" --device cpu $files
refuses "tc with d = 5" --device cpu --kernel tc $files $out

if ! $prog --cuda-info > /dev/null; then
    refuses "--device cuda without a device" --device cuda $files $out
    refuses "--bench without a device" --bench
fi
./ch09_backward --batch 2 --heads 3 --seq 37 --seq-k 45 --dim 5 --seed 4 \
    --save "$tmp/b" > /dev/null || fail "./ch09_backward --save (is it built?)"
bin="--q $tmp/b/q.npy --k $tmp/b/k.npy --v $tmp/b/v.npy --dout $tmp/b/dout.npy"
for flags in "" "--causal"; do
    ./ch09_backward $bin --out "$tmp/c9.o" --dq "$tmp/c9.dq" --dk "$tmp/c9.dk" \
        --dv "$tmp/c9.dv" --threads 1 $flags > /dev/null || fail "./ch09_backward '$flags'"
    $prog --device cpu --backward $bin --out "$tmp/g.o" --dq "$tmp/g.dq" --dk "$tmp/g.dk" \
        --dv "$tmp/g.dv" $flags > /dev/null || fail "--backward '$flags' failed"
    for pair in "o 1110" "dq 1110" "dk 1350" "dv 1350"; do
        set -- $pair
        diff=$(largest_diff "$tmp/g.$1" "$tmp/c9.$1" $2)
        if smaller "$diff" 1e-5; then pass "--backward '$flags': $1 as chapter 9's ($diff)"
        else fail "--backward '$flags': $1 differs from chapter 9's by $diff"; fi
    done
done
bout="--out $tmp/out.npy --dq $tmp/x.dq --dk $tmp/x.dk --dv $tmp/x.dv"
refuses "--backward without files" --device cpu --backward
refuses "--dv missing" --device cpu $bin --out "$tmp/out.npy" --dq "$tmp/x.dq" --dk "$tmp/x.dk"
refuses "dout of the wrong shape" --device cpu --q "$tmp/b/q.npy" --k "$tmp/b/k.npy" \
    --v "$tmp/b/v.npy" --dout "$tmp/b/k.npy" $bout
refuses "a truncated dout" --device cpu --q "$tmp/b/q.npy" --k "$tmp/b/k.npy" \
    --v "$tmp/b/v.npy" --dout "$tmp/short.npy" $bout
refuses "k and v that differ" --device cpu --backward --q "$tmp/b/q.npy" --k "$tmp/b/k.npy" \
    --v "$tmp/b/q.npy" --dout "$tmp/b/dout.npy" $bout
refuses "--dq onto --q" --device cpu $bin --out "$tmp/out.npy" --dq "$tmp/b/q.npy" \
    --dk "$tmp/x.dk" --dv "$tmp/x.dv"
refuses "--dv in no directory" --device cpu $bin --out "$tmp/out.npy" --dq "$tmp/x.dq" \
    --dk "$tmp/x.dk" --dv "$tmp/no/dir/dv.npy"
if [ -e "$tmp/x.dq" ] || [ -e "$tmp/x.dk" ]; then fail "--dv in no directory left a partial result"
else pass "--dv in no directory leaves no partial result"; fi
[ "$failures" -eq 0 ] || { echo "# $failures command-line test(s) failed"; exit 1; }
echo "# all command-line tests of ch10_gpu passed"
