#!/bin/sh
# Command-line tests of ./ch01_memory_ladder (run from the repository root).
prog=./ch01_memory_ladder
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok()     { echo "ok - $1"; }
not_ok() { echo "not ok - $1"; fail=1; }
refuses() {   # refuses DESCRIPTION ARGS...
    what=$1; shift
    $prog "$@" > "$tmp/out" 2> "$tmp/err"; rc=$?
    lines=$(wc -l < "$tmp/err")
    if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] && [ ! -s "$tmp/out" ]; then
        ok "refuses $what"
    else
        not_ok "refuses $what (status $rc, $lines lines on stderr)"
    fi
}
$prog --help > "$tmp/help" 2>&1 && grep -q -- '--max-mib' "$tmp/help" \
    && ok "--help lists the options" || not_ok "--help lists the options"
refuses "an unknown option" --bogus
refuses "a zero sequence length" --seq 0
refuses "a non-number" --heads eight
refuses "zero threads" --threads 0
refuses "a positional argument" extra
refuses "a probe buffer larger than memory" --max-mib 1048576 --threads 8
if $prog --quick --json --data "$tmp/data" > "$tmp/r.json" 2> "$tmp/progress"
then ok "a quick run succeeds"; else not_ok "a quick run succeeds"; fi
for key in fma_all dram_gbs_all ridge l1_ns dram_ns implied_ghz clock_note
do
    grep -q "\"$key\"" "$tmp/r.json" && ok "the receipts name $key" \
        || not_ok "the receipts name $key"
done
while IFS='|' read -r key value; do
    grep -qF "\"$key\": \"$value\"" "$tmp/r.json" \
        && ok "receipt $key is $value" || not_ok "receipt $key is $value"
done <<'RECEIPTS'
score_bytes|2.0 GiB
score_bytes_exact|2,147,483,648
score_passes|4
operand_total|64.0 MiB
traffic_ratio|128
naive_ms|4.3
all_sram|20.2 MiB
share_sm|0.0092
share_all|0.99
times_sm|10,923
times_all|101
pass_ms|1.1
RECEIPTS
[ -s "$tmp/data/ch01_ladder.dat" ] && [ -s "$tmp/data/ch01_machine.txt" ] \
    && ok "--data writes both files" || not_ok "--data writes both files"
[ -s "$tmp/progress" ] && ok "progress goes to stderr" \
    || not_ok "progress goes to stderr"
exit $fail
