#!/bin/sh
# cli_chapter_shape.sh — every chapter ends with The program, The tests and
# Exercises, in that order. Tangled from chapters/harness.nw.
fail=0
for f in chapters/ch[0-9]*.nw; do
    last=$(grep '^## ' "$f" | tail -n 3 | sed 's/ *{.*}$//' | tr '\n' '|')
    count=$(grep -cE '^## (The program|The tests|Exercises)' "$f")
    if [ "$last" = "## The program|## The tests|## Exercises|" ] && [ "$count" -eq 3 ]
    then echo "ok - $f ends with The program, The tests, Exercises"
    else echo "not ok - $f: its last parts are '$last'"; fail=1
    fi
done
exit $fail
