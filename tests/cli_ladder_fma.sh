#!/bin/sh
# cli_ladder_fma.sh — the FMA probe's loop as the compiler writes it for AVX2
# and AVX-512. Run from the repository root. Tangled from chapters/app_ladder.nw.
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok()     { echo "ok - $1"; }
not_ok() { echo "not ok - $1"; fail=1; }
chains=$(sed -n 's/.*LADDER_FMA_CHAINS *= *\([0-9][0-9]*\).*/\1/p' kernels/harness/ladder.h)
if [ "$(uname -m)" != x86_64 ] || ! command -v objdump > /dev/null; then
    echo "ok - the FMA loop is not checked: no x86-64 objdump # SKIP"
    exit 0
fi
fma_loop() {   # fma_loop MARCH
    ${CC:-cc} -std=c17 -O2 -march="$1" -Ikernels -c kernels/harness/ladder.c \
        -o "$tmp/ladder.o" || return 1
    objdump -d --no-show-raw-insn "$tmp/ladder.o" | awk '
        function hex(h,   i, v) {
            v = 0
            for (i = 1; i <= length(h); i++)
                v = 16 * v + index("0123456789abcdef", substr(h, i, 1)) - 1
            return v
        }
        /<ladder_fma_chains>:$/ { inside = 1; next }
        inside && !/:\t/ { inside = 0 }
        inside { a = $1; sub(/:$/, "", a); n++; at[n] = hex(a); line[n] = $0
                 if ($2 ~ /^j/ && $0 ~ /<ladder_fma_chains\+/ && hex($3) < at[n])
                     { loops++; from[loops] = hex($3); to[loops] = at[n] } }
        END {
            for (l = 1; l <= loops; l++) {
                body = ""
                for (i = 1; i <= n; i++)
                    if (at[i] >= from[l] && at[i] <= to[l]) body = body line[i] "\n"
                if (body ~ /vfmadd/) { printf "%s", body; exit }
            }
        }'
}
check_loop() {   # check_loop MARCH REGISTER
    if ! fma_loop "$1" > "$tmp/loop"; then not_ok "$1: ladder.c compiles"; return; fi
    fmas=$(grep -c vfmadd "$tmp/loop")
    wide=$(grep -c "vfmadd.*%$2" "$tmp/loop")
    [ "$fmas" -eq "$chains" ] && [ "$wide" -eq "$chains" ] \
        && ok "$1: $chains FMAs on %$2 an iteration, one per chain" \
        || not_ok "$1: $fmas FMAs ($wide on %$2) an iteration for $chains chains"
    grep -q '(%rsp)\|(%rbp)' "$tmp/loop" \
        && not_ok "$1: the loop spills accumulators to the stack" \
        || ok "$1: every accumulator stays in a register"
}
check_loop x86-64-v3 ymm
check_loop x86-64-v4 zmm
exit $fail
