#!/bin/sh
# check-portable.sh B TEST... — chapters 8, 9 and 11's unit tests once more, as other
# x86-64 machines would run them: OpenBLAS forced to other kernels, the vector
# paths capped at AVX2 (FA_ISA), and the tests built for x86-64-v3 (in B/v3).
# Prints what ran and its result, one line per variant and test, then a
# summary line; exits 1 if any ran and failed.
b=$1; shift
tools=$(dirname "$0")
out=$b/check-portable
mkdir -p "$out"
failed=0; ran=0
has() { grep -qw "$1" /proc/cpuinfo 2>/dev/null; }

# variant NAME BINDIR VAR=VALUE...: every test of the list, under those variables
variant() {
    name=$1; bin=$2; shift 2
    for t in $TESTS; do
        log="$out/$(echo "$name" | tr -c 'A-Za-z0-9.\n-' '_').$t.log"
        sh "$tools/timed.sh" "$name $t" env "$@" "$bin/$t" --jobs=1 > "$log" 2>&1; rc=$?
        syn=$(grep -a 'Synthesis:' "$log" | tail -n 1 | sed 's/.*Synthesis: //')
        ran=$((ran + 1))
        if [ "$rc" -eq 0 ] && [ -n "$syn" ]; then
            echo "ok - $name: $t ($syn)"
        else
            failed=$((failed + 1))
            grep -a -B1 -A2 'Assertion Failed\|CRASH\|FAIL' "$log" | head -n 20
            echo "not ok - $name: $t (exit $rc; ${syn:-no synthesis}; log $log)"
        fi
    done
}

TESTS="$*"
variant "OPENBLAS_CORETYPE=Prescott" "$b/bin" OPENBLAS_CORETYPE=Prescott
variant "OPENBLAS_CORETYPE=Haswell" "$b/bin" OPENBLAS_CORETYPE=Haswell
if has avx512f; then
    variant "FA_ISA=avx2" "$b/bin" FA_ISA=avx2
else
    echo "skip - FA_ISA=avx2: this CPU has no AVX-512, so AVX2 is already its path"
fi
if has avx2 && has fma && has bmi2 && has movbe && has f16c; then
    variant "x86-64-v3 build, FA_ISA=avx2" "$b/v3/bin" FA_ISA=avx2
else
    echo "skip - x86-64-v3 build: this CPU cannot run x86-64-v3 code"
fi
echo "check-portable: $ran runs, $failed failed"
[ "$failed" -eq 0 ]
