# shell_helpers.sh — what every chapter's command-line tests share; sourced
# by tests/cli_chNN_*.sh. Tangled from chapters/harness.nw.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
ok()  { echo "ok - $1"; }
bad() { echo "not ok - $1"; failures=$((failures + 1)); }
check() {   # check NAME COMMAND...: passes when the command succeeds
    name=$1; shift
    if "$@"; then ok "$name"; else bad "$name"; fi
}
floats() { tail -c $(($2 * 4)) "$1" | od -An -v -tf4 -w4; }   # floats FILE COUNT
largest_gap() {   # largest_gap < PAIRS: largest |a - b| over lines "a b"
    awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d }
         END { if (NR) printf "%.3e\n", m }'
}
max_diff() {   # max_diff A.npy B.npy COUNT: largest |a - b|
    floats "$1" "$3" > "$tmp/a.txt"; floats "$2" "$3" > "$tmp/b.txt"
    paste "$tmp/a.txt" "$tmp/b.txt" | largest_gap
}
below() {   # below X Y: X and Y are numbers and X < Y
    awk -v x="$1" -v y="$2" 'BEGIN { n = "^[-+]?[0-9.]+([eE][-+]?[0-9]+)?$"
        exit !(x ~ n && y ~ n && x + 0 < y + 0) }'
}
outputs=$tmp/out.npy
refuse() {   # refuse NAME ARGS...: exit 2, one line on stderr, none of $outputs left
    name=$1; shift
    rm -f $outputs
    $prog "$@" > /dev/null 2> "$tmp/err.txt"; status=$?
    lines=$(wc -l < "$tmp/err.txt")
    if [ "$status" -eq 2 ] && [ "$lines" -eq 1 ] && ! ls $outputs > /dev/null 2>&1; then
        ok "refuses $name: $(cat "$tmp/err.txt")"
    else
        bad "refuses $name (status $status, $lines stderr lines)"
    fi
}
finish() {   # finish PROGRAM: the closing line; exit 1 if any check failed
    [ "$failures" -eq 0 ] || { echo "# $failures command-line test(s) failed"; exit 1; }
    echo "# all command-line tests of $1 passed"
}
