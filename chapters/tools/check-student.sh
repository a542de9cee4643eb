#!/bin/sh
# check-student.sh DIR N.k ... — is the student edition in DIR what a
# student should be handed?  No solution or wrong variant in its chapters
# or its tangled files, and `make grade EX=N.k` builds and grades every
# coding exercise there (the starters fail: each run must end with its
# count of checks passed, not "done").
#
#   make check-student   (builds the edition first; run by .ci/run)
set -u
dir=$1; shift
fail=0
say() { echo "$1"; case "$1" in "not ok"*) fail=1 ;; esac; }
if grep -lE '^<<(solution|wrong) [0-9A-Z]+\.[0-9]+: .*>>=' "$dir"/chapters/*.nw; then
    say "not ok - the student edition's chapters hold solutions"
else
    say "ok - the student edition's chapters hold no solution and no wrong variant"
fi
# the rubrics of the exercises read by hand are the instructor's, like the answers
if grep -lE '^\*Rubric:\* [0-9]+ points\.' "$dir"/chapters/*.nw; then
    say "not ok - the student edition's chapters hold the rubrics of hand-graded exercises"
else
    say "ok - the student edition's chapters hold no rubric of a hand-graded exercise"
fi
for ex in "$@"; do
    u=$(echo "$ex" | tr . _)
    if ! cmp -s "tests/ex_$u.c" "$dir/tests/ex_$u.c"; then
        say "ok - $ex: the student's tests/ex_$u.c is not the solution's"
    else
        say "not ok - $ex: the student's tests/ex_$u.c is the solution's"
    fi
    last=$(make -C "$dir" --no-print-directory grade EX="$ex" 2>&1 | tail -n 2 | grep "^exercise $ex: ")
    case "$last" in
        *"checks pass -- done") say "not ok - $ex: the starter passes its grader in the student edition" ;;
        *"checks pass") say "ok - $ex: make grade works in the student edition ($last)" ;;
        *) say "not ok - $ex: make grade EX=$ex does not build or run in the student edition" ;;
    esac
done
exit $fail
