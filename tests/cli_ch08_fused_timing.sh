#!/bin/sh
# cli_ch08_fused_timing.sh — command-line tests of ./ch08_fused_timing (run from the
# repository root). Tangled from chapters/app_timing.nw.
set -u
prog=./ch08_fused_timing
. "$(dirname "$0")/shell_helpers.sh"
./ch04_tiled --batch 2 --heads 3 --seq 97 --seq-k 130 --dim 59 --seed 4 \
    --save "$tmp/s" > /dev/null
in="--q $tmp/s/q.npy --k $tmp/s/k.npy --v $tmp/s/v.npy"
for flags in "" "--block-q 5 --block-k 11 --scale 0.3" "--block-q 32"; do
    ./ch04_tiled $in --out "$tmp/r.npy" $flags --reference > /dev/null
    for kernel in fused naive tiled; do
        $prog $in --out "$tmp/t.npy" --kernel $kernel $flags --threads 2 > /dev/null
        diff=$(max_diff "$tmp/t.npy" "$tmp/r.npy" $((2 * 3 * 97 * 59)))
        check "$kernel '$flags' equals the reference ($diff)" below "$diff" 1e-5
    done
done
./ch04_tiled --heads 2 --seq 150 --dim 64 --seed 5 --save "$tmp/c" > /dev/null
in="--q $tmp/c/q.npy --k $tmp/c/k.npy --v $tmp/c/v.npy"
for mask in "--causal" "--window 20"; do
    ./ch04_tiled $in --out "$tmp/r.npy" $mask --reference > /dev/null
    for extra in "" "--isa avx2 --block-q 7 --threads 3"; do
        $prog $in --out "$tmp/t.npy" $mask $extra > /dev/null
        diff=$(max_diff "$tmp/t.npy" "$tmp/r.npy" $((2 * 150 * 64)))
        check "fused '$mask $extra' equals the reference ($diff)" below "$diff" 1e-5
    done
done
good="--k $tmp/s/k.npy --v $tmp/s/v.npy --out $tmp/out.npy"
head -c 70 "$tmp/s/q.npy" > "$tmp/short.npy"
printf 'not a numpy file at all\n' > "$tmp/junk.npy"
refuse "a missing file" --q "$tmp/none.npy" $good
refuse "a truncated file" --q "$tmp/short.npy" $good
refuse "a file that is not .npy" --q "$tmp/junk.npy" $good
refuse "q and k of different d" --q "$tmp/c/q.npy" $good
refuse "--q without --out" --q "$tmp/s/q.npy" --k "$tmp/s/k.npy" --v "$tmp/s/v.npy"
refuse "an unknown kernel" --q "$tmp/s/q.npy" $good --kernel fast
refuse "an unknown instruction set" --q "$tmp/s/q.npy" $good --isa sse
refuse "a negative key block size" --q "$tmp/s/q.npy" $good --block-k -1
refuse "query block size 5000" --q "$tmp/s/q.npy" $good --block-q 5000
refuse "zero threads" --q "$tmp/s/q.npy" $good --threads 0
refuse "an unknown option" --q "$tmp/s/q.npy" $good --fast
refuse "a profile run of an unknown kernel" --profile-run tiled
refuse "an output in a missing directory" --q "$tmp/s/q.npy" --k "$tmp/s/k.npy" \
    --v "$tmp/s/v.npy" --out "$tmp/no/such/dir/o.npy"
check "--help exits 0" sh -c "$prog --help > /dev/null"
for cache in fp32 bf16; do
    $prog --seq-q 3 --seq-k 3000 --heads 8 --kv-heads 2 --cache $cache --threads 3 \
        --repeats 1 --json > "$tmp/d.json" 2> /dev/null
    err=$(sed -n 's/.*"decode_error": "\([^"]*\)".*/\1/p' "$tmp/d.json")
    check "decoding, $cache cache, equals float64 ($err)" below "${err:-1}" 1e-5
    check "decoding, $cache cache, has one thread's bits" grep -q \
        '"decode_bits_of_one_thread": "yes"' "$tmp/d.json"
done
refuse "zero query rows" --seq-q 0 --seq-k 100
refuse "17 query rows" --seq-q 17 --seq-k 100
refuse "131073 keys" --seq-k 131073
refuse "K/V heads that do not divide the heads" --seq-k 100 --heads 8 --kv-heads 3
refuse "an unknown cache" --seq-k 100 --cache fp16
refuse "AVX-512 decoding with d = 40" --seq-k 100 --dim 40 --isa avx512
refuse "decoding on the tiles with an fp32 cache" --seq-k 100 --cache fp32 --isa tiles
refuse "decoding on the tiles with d = 48" --seq-k 100 --dim 48 --cache bf16 --isa tiles
refuse "the tiles for the fused kernel" --seq 64 --isa tiles
refuse "decoding options with files" --seq-k 100 --q "$tmp/s/q.npy" $good
refuse "a decoding cache larger than memory" --seq-k 131072 --heads 64 --kv-heads 64 \
    --dim 1024
OPENBLAS_CORETYPE=Haswell $prog --bench --max-seq 512 --naive-max-seq 0 --tiled-max-seq 0 \
    --decode-max-seq 4096 > "$tmp/bench.txt" 2> /dev/null
check "a hand-set OPENBLAS_CORETYPE is kept and named" \
    grep -q 'OpenBLAS with its Haswell kernels' "$tmp/bench.txt"
check "the benchmark decodes on both caches, G = 1 and 8" sh -c \
    "[ \$(grep -cE '^ch08_fused_timing decode-(fp32|bf16) 4096 1 8 (1|8) ' $tmp/bench.txt) \
       -eq $(( $(nproc) > 1 ? 8 : 4 )) ]"
./ch01_memory_ladder --quick --max-mib 1 --data "$tmp/m" > /dev/null 2>&1 ||
    bad "./ch01_memory_ladder --data"
sed -e 's/^fma_gflops_one = .*/fma_gflops_one = 1000/' \
    -e 's/^fma_gflops_all = .*/fma_gflops_all = 2000/' "$tmp/m/ch01_machine.txt" > "$tmp/m/p.txt"
check "--machine FILE gives the peaks of FILE" sh -c \
    "$prog --seq 64 --heads 1 --dim 8 --repeats 1 --machine $tmp/m/p.txt --json |
     grep -q '\"peak_all\": \"2000 '"
check "FA_MACHINE names the profile too" sh -c \
    "FA_MACHINE=$tmp/m/p.txt $prog --seq 64 --heads 1 --dim 8 --repeats 1 --json |
     grep -q '\"peak_one\": \"1000 '"
refuse "a missing profile" --seq 64 --heads 1 --dim 8 --machine "$tmp/none.txt"
report_on_record() {   # report_on_record OUT.json LINE...
    out=$1; shift
    { echo "# make bench: date 2026-01-01T00:00Z commit 0000000"
      for line in "$@"; do echo "$line"; done; } > "$tmp/bench-made-up.txt"
    $prog --seq 64 --heads 1 --dim 8 --repeats 1 --machine "$tmp/m/p.txt" --json \
        --recorded "$tmp/bench-made-up.txt" > "$out" 2> /dev/null
}
r="ch08_fused_timing"
report_on_record "$tmp/goals.json" \
    "$r naive 1024 64 0 1 5 0.040 0.040 0.040 50.00 20.0 1.00 0.40" \
    "$r fused 1024 64 0 1 5 0.010 0.010 0.010 200.00 80.0 4.00 2.00" \
    "$r torch 1024 64 0 1 5 0.020 0.020 0.020 100.00 40.0 2.00 1.00" \
    "$r fused 1024 64 1 1 5 0.004 0.004 0.004 250.00 90.0 - -" \
    "$r fused 2048 64 0 1 5 0.080 0.080 0.080 100.00 40.0 - 0.50" \
    "$r torch 2048 64 0 1 5 0.040 0.040 0.040 200.00 80.0 - 1.00"
check "the goals are counted from the record" grep -q \
    "PyTorch's speed in 1 of 2 configurations, the worst 0.50x (n = 2048, d = 64, no mask, 1 thread); at least 2.5x naive attention in 1 of 1 configurations, the worst 4.00x .*causal speed-up of at least 1.8x in 1 of 1 configurations, the worst 2.50x" \
    "$tmp/goals.json"
check "one miss on one thread is named, without a word on threads" grep -q \
    '"recorded_misses": "1 configuration fell short of PyTorch.s speed, at n up to 2048."' \
    "$tmp/goals.json"
report_on_record "$tmp/decoding.json" \
    "$r decode-fp32 4096 1 8 8 1 5 0.001 0.001 0.001 5.00 30.0 0.10 32.00 15.6" \
    "$r decode-torch-fp32 4096 1 8 8 1 5 0.001 0.001 0.001 50.00 30.0 - 32.00 156.2" \
    "$r decode-fp32 16384 1 8 8 1 5 0.002 0.002 0.002 30.00 190.0 1.20 32.00 93.8" \
    "$r decode-torch-fp32 16384 1 8 8 1 5 0.002 0.002 0.002 25.00 160.0 - 32.00 78.1" \
    "$r decode-fp32 16384 1 8 1 1 5 0.001 0.001 0.001 20.00 120.0 2.00 32.00 62.5" \
    "$r decode-torch-fp32 16384 1 8 1 1 5 0.002 0.002 0.002 10.00 60.0 - 32.00 31.2"
check "decoding's goals are counted at 16k keys and more, a miss set against the limit" grep -q \
    '"recorded_decoding": "In the record, at n_k of 16384 and more: at least 1.5x PyTorch.s SDPA in 1 of 2 configurations, the worst 1.20x (n_k = 16384, G = 8, fp32 cache, 1 thread); at least 85% of the limit in 1 of 2 configurations, the worst 62% (n_k = 16384, G = 1, fp32 cache, 1 thread). Where 1.5x PyTorch was missed, PyTorch itself read at 78% of the limit, so 1.5x its speed would have needed 117% of it."' \
    "$tmp/decoding.json"
report_on_record "$tmp/levels.json" \
    "$r decode-fp32 16384 1 8 8 1 5 0.002 0.002 0.002 30.00 190.0 1.20 L3 93.8"
check "a record naming a level has no limit to count" grep -q \
    'at least 85% of the limit: not in the record."' "$tmp/levels.json"
report_on_record "$tmp/misses.json" \
    "# $r: a thread started after 20 ms idle, its caller computing, begins in 2.50 ms (1.00-5.00 ms) placed by the scheduler, 0.10 ms (0.05-0.20 ms) bound to an idle processor, 15 starts each" \
    "$r fused 1024 64 0 2 5 0.010 0.010 0.010 100.00 40.0 - 0.50" \
    "$r torch 1024 64 0 2 5 0.005 0.005 0.005 200.00 80.0 - 1.00"
check "a miss on two threads is put beside the thread's start" grep -q \
    "more than one thread, at n up to 1024, where a call lasted at most 10.0 ms\. .* began after 2.50 ms (1.00-5.00 ms) where the scheduler placed it, and after 0.10 ms (0.05-0.20 ms) bound to an idle processor, as the kernel's threads are: 1% of that call" \
    "$tmp/misses.json"
check "the thread's start is reported from the record" grep -q \
    '"recorded_thread_start": "On the recorded machine .* began after 2.50 ms (1.00-5.00 ms) where the scheduler placed it, and after 0.10 ms (0.05-0.20 ms) bound to an idle processor\."' \
    "$tmp/misses.json"
finish ch08_fused_timing
