#!/bin/sh
# cli_ch11_amx.sh — command-line tests of ./ch11_amx (run from the repository
# root). Tangled from chapters/ch11_amx.nw.
set -u
prog=./ch11_amx
. "$(dirname "$0")/shell_helpers.sh"
./ch04_tiled --batch 1 --heads 2 --seq 70 --seq-k 90 --dim 40 --seed 4 --save "$tmp/s" > /dev/null
in="--q $tmp/s/q.npy --k $tmp/s/k.npy --v $tmp/s/v.npy"
./ch04_tiled $in --out "$tmp/r.npy" --reference > /dev/null
for kernel in emulated auto; do
    $prog $in --out "$tmp/t.npy" --kernel $kernel --threads 2 > /dev/null 2> "$tmp/err.txt"
    diff=$(max_diff "$tmp/t.npy" "$tmp/r.npy" $((2 * 70 * 40)))
    check "$kernel is within bf16's error of the reference ($diff)" below "$diff" 0.05
done
$prog $in --out "$tmp/a.npy" --kernel emulated > /dev/null
FA_ISA=avx2 $prog $in --out "$tmp/b.npy" > /dev/null 2> "$tmp/err.txt"
check "FA_ISA=avx2 --kernel auto runs the model, saying so in one line" \
    test "$(wc -l < "$tmp/err.txt")" -eq 1
check "... and gives the model's bits" cmp -s "$tmp/a.npy" "$tmp/b.npy"
FA_ISA=avx2 refuse "--kernel amx under FA_ISA=avx2" $in --out "$tmp/out.npy" --kernel amx
good="--k $tmp/s/k.npy --v $tmp/s/v.npy --out $tmp/out.npy"
refuse "an unknown kernel" --q "$tmp/s/q.npy" $good --kernel fast
./ch04_tiled --heads 1 --seq 4 --dim 130 --save "$tmp/w" > /dev/null
refuse "a head dimension above 128" --q "$tmp/w/q.npy" --k "$tmp/w/k.npy" --v "$tmp/w/v.npy" \
    --out "$tmp/out.npy"
refuse "zero threads" --q "$tmp/s/q.npy" $good --threads 0
refuse "--q without --out" --q "$tmp/s/q.npy" --k "$tmp/s/k.npy" --v "$tmp/s/v.npy"
refuse "a missing machine profile" --quick --machine "$tmp/none.txt"
check "--help exits 0" $prog --help > /dev/null
./ch01_memory_ladder --quick --max-mib 1 --data "$tmp/m" > /dev/null 2>&1 ||
    bad "./ch01_memory_ladder --data"
sed -e 's/^fma_gflops_one = .*/fma_gflops_one = 1000/' "$tmp/m/ch01_machine.txt" > "$tmp/m/p.txt"
check "--machine FILE gives the fp32 peak of FILE" sh -c \
    "$prog --seq 64 --heads 1 --dim 16 --machine $tmp/m/p.txt --json |
     grep -q '\"fp32_peak\": \"1000\"'"
finish ch11_amx
