#!/bin/sh
# valgrind_programs.sh DIR — every chapter program in DIR, at small sizes,
# under valgrind's memcheck. Tangled from chapters/app_robustness.nw.
set -u
dir=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
. "$(dirname "$0")/quick_sizes.sh"
failures=0
export FA_ISA=avx2     # valgrind runs no AVX-512: chapter 11 then runs its model alone
memcheck() {   # memcheck NAME PROGRAM ARGS...
    name=$1; shift; prog=$1; shift
    if valgrind --quiet --error-exitcode=99 --leak-check=full \
            --errors-for-leak-kinds=definite --trace-children=yes \
            --log-file="$scratch/vg.log" "$dir/$prog" "$@" > /dev/null 2>&1; then
        echo "ok - $name under memcheck"
    else
        echo "not ok - $name under memcheck"; cat "$scratch/vg.log"
        failures=$((failures + 1))
    fi
}
for p in $programs; do
    set -- $(quick $p); prog=$1; shift
    if [ $p = ch09 ]; then
        saved=$scratch/ch09; mkdir -p "$saved"
        memcheck "$prog --save" "$prog" "$@" --save "$saved"
        inputs="--q $saved/q.npy --k $saved/k.npy --v $saved/v.npy --dout $saved/dout.npy"
        outputs="--out $saved/o.npy --dq $saved/dq.npy --dk $saved/dk.npy --dv $saved/dv.npy"
        memcheck "$prog flash backward on saved files" "$prog" $inputs $outputs \
            --causal --block-q 8 --block-k 4 --json --data "$scratch/data"
        memcheck "$prog --reference on saved files" "$prog" $inputs $outputs --reference --json
    else
        memcheck "$prog" "$prog" "$@" --json --data "$scratch/data"
    fi
done
[ "$failures" -eq 0 ]
