#!/bin/sh
# cli_ch09_backward.sh — command-line tests of ./ch09_backward (run from the
# repository root). Tangled from chapters/ch09_backward.nw.
set -u
prog=./ch09_backward
. "$(dirname "$0")/shell_helpers.sh"
outputs="$tmp/x.*"
$prog --heads 2 --seq 9 --seq-k 11 --dim 5 --seed 3 --save "$tmp/s" > /dev/null
in="--q $tmp/s/q.npy --k $tmp/s/k.npy --v $tmp/s/v.npy --dout $tmp/s/dout.npy"
for flags in "" "--causal" "--block-q 2 --block-k 3 --scale 0.7"; do
    for mode in f r; do
        extra=; [ $mode = r ] && extra=--reference
        $prog $in --out "$tmp/$mode.o" --dq "$tmp/$mode.dq" --dk "$tmp/$mode.dk" \
            --dv "$tmp/$mode.dv" $flags $extra > /dev/null
    done
    for pair in "o 90" "dq 90" "dk 110" "dv 110"; do
        set -- $pair
        diff=$(max_diff "$tmp/f.$1" "$tmp/r.$1" "$2")
        if below "$diff" 1e-5; then ok "'$flags' $1 agrees with finite differences ($diff)"
        else bad "'$flags' $1 differs from finite differences ($diff)"; fi
    done
done
if $prog --help > /dev/null; then ok "--help exits 0"; else bad "--help"; fi
out=$($prog $in --out "$tmp/o" --dq "$tmp/dq" --dk "$tmp/dk" --dv "$tmp/dv" --causal)
if printf '%s\n' "$out" | grep -q '^mask: *causal$'; then ok "the text names the mask"
else bad "the text names the mask"; fi
printf '#!/bin/sh\necho "512 1 0.25"\necho noise\necho "512 2 0.125"\n' > "$tmp/py"
chmod +x "$tmp/py"
out=$($prog --bench --max-n 512 --threads 2 --python "$tmp/py" 2> /dev/null)
if printf '%s\n' "$out" | grep -q '^512  *1 .* 250\.0 ' &&
   printf '%s\n' "$out" | grep -q '^512  *2 .* 125\.0 '; then
    ok "the bench reads the peer's seconds"
else bad "the bench reads the peer's seconds"; fi
if printf '%s\n' "$out" | grep -q '^mem_n *1024$'; then ok "the bench measures memory"
else bad "the bench measures memory"; fi
printf '%s\n' "# make bench: date 2026-01-02T03:04Z commit abc" \
    "Backward, 8 heads, d = 64, fp32" "   n  threads  naive ms  flash ms" \
    " 512        1      10.0      12.0" " 512        2       6.0       7.0" \
    "1024        1      40.0      30.0" "1024        2      20.0      19.5" "" \
    "machine:                        Test CPU" > "$tmp/bench-test.txt"
check "a recorded benchmark is read and said in words" sh -c \
    "$prog --seq 16 --heads 1 --dim 8 --recorded $tmp/bench-test.txt --json | grep -q \
     'On Test CPU, recorded 2026-01-02T03:04, .* on one thread from n = 1024 on, and on 2 threads at no length recorded'"
outs="--out $tmp/x.o --dq $tmp/x.dq --dk $tmp/x.dk --dv $tmp/x.dv"
kvd="--k $tmp/s/k.npy --v $tmp/s/v.npy --dout $tmp/s/dout.npy"
head -c 100 "$tmp/s/q.npy" > "$tmp/short.npy"
printf 'not a numpy file, not even close to one, no\n' > "$tmp/junk.npy"
sed 's/<f4/<f8/' "$tmp/s/q.npy" > "$tmp/f8.npy"
refuse "a missing file" --q "$tmp/none.npy" $kvd $outs
refuse "a truncated file" --q "$tmp/short.npy" $kvd $outs
refuse "a file that is not .npy" --q "$tmp/junk.npy" $kvd $outs
refuse "float64" --q "$tmp/f8.npy" $kvd $outs
refuse "dout of the wrong shape" --q "$tmp/s/q.npy" --k "$tmp/s/k.npy" \
    --v "$tmp/s/v.npy" --dout "$tmp/s/k.npy" $outs
refuse "k and v of different shapes" --q "$tmp/s/q.npy" --k "$tmp/s/k.npy" \
    --v "$tmp/s/q.npy" --dout "$tmp/s/dout.npy" $outs
q="--q $tmp/s/q.npy"
refuse "--dv missing" $q $kvd --out "$tmp/x.o" --dq "$tmp/x.dq" --dk "$tmp/x.dk"
refuse "block size 0" $q $kvd $outs --block-q 0
refuse "block size 5000" $q $kvd $outs --block-k 5000
refuse "a block size that is not a number" $q $kvd $outs --block-k abc
refuse "a negative scale" $q $kvd $outs --scale -1
refuse "an unknown option" $q $kvd $outs --fast
refuse "--python without --bench" --python python3
refuse "an output in a missing directory" $q $kvd --out "$tmp/no/dir/o" \
    --dq "$tmp/x.dq" --dk "$tmp/x.dk" --dv "$tmp/x.dv"
refuse "the last output in a missing directory" $q $kvd --out "$tmp/x.o" \
    --dq "$tmp/x.dq" --dk "$tmp/x.dk" --dv "$tmp/no/dir/dv"
refuse "a problem too big for memory" --seq 16384 --heads 64 --batch 64
$prog --heads 4 --seq 300 --dim 64 --save "$tmp/big" > /dev/null
refuse "--reference on a problem too big for finite differences" \
    --q "$tmp/big/q.npy" --k "$tmp/big/k.npy" --v "$tmp/big/v.npy" \
    --dout "$tmp/big/dout.npy" $outs --reference
finish ch09_backward
