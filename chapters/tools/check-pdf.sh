#!/bin/sh
# check-pdf.sh — the two PDF volumes keep to the page.
#
#   sh chapters/tools/check-pdf.sh PROGRAM.log READER.log READER.pdf
#   sh chapters/tools/check-pdf.sh --count BOOK.log
#   sh chapters/tools/check-pdf.sh --self-test
#
# Prints ok / not ok lines and exits non-zero when
#   - a line of either volume stands more than $OVER_TOLERANCE pt (default 1)
#     past the margin: xelatex's "Overfull \hbox" in the volume's last log
#     (.build/pdf-aux/book.log, .build/pdf-aux-reader/book.log), each
#     listed with the page it falls on;
#   - the reader's book prints "(Program, p. N)" in its text: a page of the
#     complete volume goes in the margin (or, in a chunk's cross
#     references, after the chunk it names), never in brackets inside a
#     sentence (pdftotext; skipped when poppler-utils is missing).
# With --count, prints only the number of lines over the margin in BOOK.log.
set -eu
tol=${OVER_TOLERANCE:-1}

# over LOG: "PAGE WIDTHpt line" for each overfull line wider than $tol.
# The page is the one TeX ships out next: [N] after the warning.
over() {
    awk -v tol="$tol" '
        /^Overfull \\hbox \(/ {
            w = $3; sub(/^\(/, "", w); sub(/pt$/, "", w)
            if (w + 0 > tol + 0) { n++; what[n] = $0; page[n] = "?"; grab = 1; next }
        }
        grab { grab = 0; what[n] = what[n] ": " substr($0, 1, 70) }
        { while (match($0, /\[[0-9]+[] ]/)) {
              p = substr($0, RSTART + 1, RLENGTH - 2)
              for (i = done + 1; i <= n; i++) page[i] = p
              done = n
              $0 = substr($0, RSTART + RLENGTH) } }
        END { for (i = 1; i <= n; i++) printf "p. %s: %s\n", page[i], what[i] }' "$1"
}

# refs TEXT: the lines of TEXT (the reader's book as text) that hold a
# page of the complete volume in brackets.
refs() {
    grep -n '(Program, pp\?\.' "$1" || true
}

if [ "${1:-}" = --self-test ]; then   # both checks can fail
    t=$(mktemp -d)
    trap 'rm -rf "$t"' EXIT
    printf 'Overfull \\hbox (0.5pt too wide) in paragraph at lines 1--2\n[]x\n[1]\nOverfull \\hbox (7.2pt too wide) in paragraph at lines 3--4\n[]the_long_name\n[2]\n' >"$t/log"
    printf 'a sentence (Program, p. 412) goes on\nProgram, p. 413\n' >"$t/txt"
    n=$(over "$t/log" | wc -l | tr -d ' ')
    p=$(over "$t/log" | sed -n 's/^p\. \([0-9?]*\):.*/\1/p')
    r=$(refs "$t/txt" | wc -l | tr -d ' ')
    if [ "$n" = 1 ] && [ "$p" = 2 ] && [ "$r" = 1 ]; then
        echo "ok - check-pdf.sh self-test: one line over (p. 2), one reference in brackets"
        exit 0
    fi
    echo "not ok - check-pdf.sh self-test: $n line(s) over (want 1) on p. $p (want 2), $r reference(s) (want 1)"
    exit 1
fi
if [ "${1:-}" = --count ]; then
    [ $# -eq 2 ] || { echo "usage: sh check-pdf.sh --count BOOK.log" >&2; exit 2; }
    over "$2" | wc -l | tr -d ' '
    exit 0
fi
if [ $# -ne 3 ]; then
    echo "usage: sh check-pdf.sh PROGRAM.log READER.log READER.pdf" >&2
    exit 2
fi
rc=0
for log in "$1" "$2"; do
    if [ ! -f "$log" ]; then
        echo "not ok - $log: no such log (build the PDF first)"; rc=1; continue
    fi
    lines=$(over "$log")
    if [ -z "$lines" ]; then
        echo "ok - $log: no line more than ${tol}pt over the margin"
    else
        echo "not ok - $log: $(printf '%s\n' "$lines" | wc -l | tr -d ' ') line(s) more than ${tol}pt over the margin:"
        printf '%s\n' "$lines" | sed 's/^/#   /'
        rc=1
    fi
done
if command -v pdftotext >/dev/null 2>&1; then
    txt=$(mktemp)
    pdftotext -layout "$3" "$txt"
    hits=$(refs "$txt")
    rm -f "$txt"
    if [ -z "$hits" ]; then
        echo "ok - $3: no \"(Program, p. N)\" inside a sentence"
    else
        echo "not ok - $3: $(printf '%s\n' "$hits" | wc -l | tr -d ' ') \"(Program, p. N)\" inside sentences:"
        printf '%s\n' "$hits" | head -20 | sed 's/^/#   /'
        rc=1
    fi
else
    echo "ok - $3: references not checked: no pdftotext here # SKIP"
fi
exit $rc
