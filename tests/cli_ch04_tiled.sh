#!/bin/sh
# cli_ch04_tiled.sh — command-line tests of ./ch04_tiled (run from the repository root).
# Tangled from chapters/ch04_tiled.nw.
set -u
prog=./ch04_tiled
. "$(dirname "$0")/shell_helpers.sh"
npy_head() {   # npy_head DESCR SHAPE, e.g. npy_head '<f4' '(3, 2)'
    dict="{'descr': '$1', 'fortran_order': False, 'shape': $2, }"
    hlen=$(( (10 + ${#dict} + 1 + 63) / 64 * 64 - 10 ))
    printf '\223NUMPY\001\000'
    printf "\\$(printf %03o $((hlen % 256)))\\$(printf %03o $((hlen / 256)))"
    printf '%s' "$dict"
    printf "%$((hlen - ${#dict} - 1))s\n" ''
}

f32() {   # f32 VALUE...: float32 bytes of 0, 1, -1, 0.5, 2, -2
    for x in "$@"; do
        case $x in
            0) printf '\000\000\000\000' ;;   1) printf '\000\000\200\077' ;;
            -1) printf '\000\000\200\277' ;;  0.5) printf '\000\000\000\077' ;;
            2) printf '\000\000\000\100' ;;   -2) printf '\000\000\000\300' ;;
        esac
    done
}

has() { printf '%s\n' "$1" | grep -q "$2"; }   # has TEXT REGEX: a line matches

awk_attention() {   # awk_attention Q K V NQ NK D CAUSAL: the output, one number a line
    { floats "$1" $(($4 * $6)); floats "$2" $(($5 * $6)); floats "$3" $(($5 * $6)); } |
    awk -v nq="$4" -v nk="$5" -v d="$6" -v causal="$7" '
        { x[NR - 1] = $1 }
        END {
            kb = nq * d; vb = kb + nk * d; s = 1 / sqrt(d)
            for (i = 0; i < nq; i++) {
                m = -1e300; sum = 0
                for (j = 0; j < nk; j++) {
                    sc[j] = 0; for (c = 0; c < d; c++) sc[j] += x[i * d + c] * x[kb + j * d + c]
                    sc[j] *= s; if ((!causal || j <= i) && sc[j] > m) m = sc[j]
                }
                for (c = 0; c < d; c++) o[c] = 0
                for (j = 0; j < nk; j++) if (!causal || j <= i) {
                    w = exp(sc[j] - m); sum += w
                    for (c = 0; c < d; c++) o[c] += w * x[vb + j * d + c]
                }
                for (c = 0; c < d; c++) printf "%.9g\n", o[c] / sum
            }
        }'
}

{ npy_head '<f4' '(3, 2)'; f32 1 0  0 1  -1 0.5; } > "$tmp/q.npy"
{ npy_head '<f4' '(4, 2)'; f32 1 1  -1 2  0.5 0  2 -2; } > "$tmp/k.npy"
{ npy_head '<f4' '(4, 2)'; f32 0 1  2 0  -1 -1  0.5 2; } > "$tmp/v.npy"
for causal in 0 1; do
    flag=; [ "$causal" = 1 ] && flag=--causal
    $prog --q "$tmp/q.npy" --k "$tmp/k.npy" --v "$tmp/v.npy" --out "$tmp/o.npy" \
        --block-q 2 --block-k 3 $flag > /dev/null 2>&1
    awk_attention "$tmp/q.npy" "$tmp/k.npy" "$tmp/v.npy" 3 4 2 $causal > "$tmp/awk.txt"
    diff=$(floats "$tmp/o.npy" 6 | paste - "$tmp/awk.txt" | largest_gap)
    check "(3,2) x (4,2) causal=$causal agrees with awk (max diff $diff)" \
        below "$diff" 1e-6
done

$prog --batch 2 --heads 3 --seq 37 --seq-k 50 --dim 5 --seed 4 \
    --save "$tmp/s" > /dev/null
saved="--q $tmp/s/q.npy --k $tmp/s/k.npy --v $tmp/s/v.npy"
for flags in "" "--causal" "--window 9" "--block-q 5 --block-k 11 --scale 0.3"; do
    $prog $saved --out "$tmp/t.npy" $flags > /dev/null
    $prog $saved --out "$tmp/r.npy" $flags --reference > /dev/null
    diff=$(max_diff "$tmp/t.npy" "$tmp/r.npy" $((2 * 3 * 37 * 5)))
    check "(2,3,37,5) x (2,3,50,5) '$flags' equals --reference ($diff)" \
        below "$diff" 1e-5
done

out=$($prog --seq 100 --heads 1 --causal)
check "the text labels the tiles visited" has "$out" '^tiles visited: *3$'
json=$($prog --seq 100 --heads 1 --json)
check "--json prints one object" has "$(echo $json)" '^{.*"tiles_visited": "4"'
check "--help exits 0" sh -c "$prog --help > /dev/null"

good="--k $tmp/k.npy --v $tmp/v.npy --out $tmp/out.npy"
head -c 70 "$tmp/q.npy" > "$tmp/short.npy"
{ npy_head '<f8' '(3, 2)'; f32 1 0 0 1 -1 0.5 1 0 0 1 -1 0.5; } > "$tmp/f8.npy"
{ npy_head '<f4' '(3, 3)'; f32 1 0 0 1 0 0 1 0 0; } > "$tmp/d3.npy"
{ npy_head '<f4' '(6,)'; f32 1 0 0 1 -1 0.5; } > "$tmp/flat.npy"
{ npy_head '<f4' '(2, 3, 2)'; f32 1 0 0 1 -1 0.5 1 0 0 1 -1 0.5; } > "$tmp/h2.npy"
printf 'not a numpy file at all, no, not even close to one\n' > "$tmp/junk.npy"
refuse "a missing file" --q "$tmp/none.npy" $good
refuse "a truncated file" --q "$tmp/short.npy" $good
refuse "float64" --q "$tmp/f8.npy" $good
refuse "a file that is not .npy" --q "$tmp/junk.npy" $good
refuse "a 1-D tensor" --q "$tmp/flat.npy" $good

refuse "q and k with different d" --q "$tmp/d3.npy" $good
refuse "q with heads, k without" --q "$tmp/h2.npy" $good
refuse "k and v of different shapes" --q "$tmp/q.npy" --k "$tmp/k.npy" --v "$tmp/q.npy" \
    --out "$tmp/out.npy"
refuse "--q without --out" --q "$tmp/q.npy" --k "$tmp/k.npy" --v "$tmp/v.npy"
refuse "block size 0" --q "$tmp/q.npy" $good --block-q 0
refuse "block size 5000" --q "$tmp/q.npy" $good --block-k 5000
refuse "a block size that is not a number" --q "$tmp/q.npy" $good --block-k abc
refuse "a negative scale" --q "$tmp/q.npy" $good --scale -1
refuse "an unknown option" --q "$tmp/q.npy" $good --fast
refuse "an output in a missing directory" --q "$tmp/q.npy" --k "$tmp/k.npy" \
    --v "$tmp/v.npy" --out "$tmp/no/such/dir/o.npy"

finish ch04_tiled
