#!/bin/sh
# cli_notation.sh — the book's notation (chapter 1's table), checked in every
# chapter and appendix. Tangled from chapters/harness.nw.
fail=0
ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1"; fail=1; }
body() { sed '/^## Exercises/,$d' "$1"; }
check() {  # check RULE REGEX
    hits=$(for f in chapters/front.nw chapters/ch*.nw chapters/harness.nw chapters/app_*.nw chapters/back.nw; do
               [ -f "$f" ] && body "$f" | grep -nE -e "$2" | grep -v "^[0-9]*:check " | sed "s|^|$f:|"
           done)
    if [ -z "$hits" ]; then ok "$1"; else not_ok "$1"; printf "%s\n" "$hits" | sed "s/^/#   /"; fi
}
check "the correction is alpha, never c" '\$c = e\^|\$c\\,\\ell|correction \$c\$|^\| *\$c\$ *\|'
check "tables and labels print ell as ℓ, never l" '"l"[ ,}]|"l after'
check "block sizes are B, B_q, B_k, never b" '\$b (\\times|\\ge|=) |blocks of \$b\$|size \$b\$'
check "the number of blocks is T, never k" 'blocks? \$k\$|\$k = \\lceil'
check "bytes per element are e, never b" '\$b\$ bytes'
tables=$(grep -nE '^\| *symbol *\| *meaning *\|' chapters/*.nw)
case "$tables" in
    chapters/ch01_memory_ladder.nw:*:*) one=$(printf "%s\n" "$tables" | wc -l) ;;
    *) one=0 ;;
esac
if [ "$one" -eq 1 ]; then ok "one notation table, chapter 1's"
else not_ok "one notation table, chapter 1's"; printf "%s\n" "$tables" | sed "s/^/#   /"; fi
exit $fail
