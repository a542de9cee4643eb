#!/bin/sh
# cli_ch12_real_model.sh — chapter 12's program from the command line.
# Tangled from chapters/ch12_real_model.nw.
fail=0
check() {   # check NAME CONDITION
    if eval "$2"; then echo "ok - $1"; else echo "not ok - $1"; fail=1; fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
./ch12_real_model "A man is playing a guitar." "Someone is strumming a guitar." > "$tmp/table"
check "two sentences: a table of cosines" 'grep -q "^1 A man is playing a guita *1.000 *0.7" "$tmp/table"'
head -n 20 tests/goldens/ch12_corpus.txt > "$tmp/lines.txt"
./ch12_real_model --file "$tmp/lines.txt" --out "$tmp/e.npy" --attention tiled > /dev/null
check "--file --out writes a (20, 384) float32 array" \
    'head -c 128 "$tmp/e.npy" | grep -q "'"'"'<f4'"'"'.*(20, 384)"'
./ch12_real_model --file "$tmp/lines.txt" --out "$tmp/e2.npy" --attention naive --batch 3 > /dev/null
check "--batch 3 and --attention naive write the same shape" 'cmp -s -n 128 "$tmp/e.npy" "$tmp/e2.npy"'
./ch12_real_model --attention sparse x 2> "$tmp/err"; rc=$?
check "--attention sparse: exit 2, one line" '[ $rc = 2 ] && [ $(wc -l < "$tmp/err") = 1 ]'
./ch12_real_model --help > "$tmp/help"
check "--help names --attention" 'grep -q -- "--attention" "$tmp/help"'
exit $fail
