#!/bin/sh
# grade.sh BINARY EXERCISE — run one exercise's grader and say, per check,
# whether it passes; a failing check is followed by its hint.
#
#   sh chapters/tools/grade.sh .build/bin/grade_4_1 4.1
#
# The grader is a Criterion test binary; each Test() carries a .description
# (the check, in words) and its assertions carry a "hint: ..." message.
# Exit status 0 when every check passes, 1 otherwise.
set -u
bin=$1; ex=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$bin" --tap=- --jobs=1 > "$out" 2>&1
rc=$?
awk -v ex="$ex" '
    function check(s) {
        if (s ~ /unexpected signal/) { sub(/^not ok - /, "", s); sub(/ unexpected signal.*/, ": it crashed", s); return s }
        sub(/^(not )?ok - [^ ]* /, "", s); sub(/ \([0-9.]+s\)$/, "", s); return s
    }
    /^ok - /     { printf "exercise %s: pass  %s\n", ex, check($0); pass++; next }
    /^not ok - / { printf "exercise %s: FAIL  %s\n", ex, check($0); fail++; next }
    /Assertion failed: / { sub(/^.*Assertion failed: /, ""); printf "                    %s\n", $0; next }
    END {
        if (pass + fail == 0) { printf "exercise %s: the grader ran no checks\n", ex; exit 1 }
        printf "exercise %s: %d of %d checks pass%s\n", ex, pass, pass + fail,
               fail ? "" : " -- done"
    }' "$out"
[ "$rc" -eq 0 ] && ! grep -q '^not ok' "$out"
