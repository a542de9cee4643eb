#!/bin/sh
# cli_chapter_shape.sh — every chapter ends with The program, The tests and
# Exercises, in that order, and its main text holds no report, option or
# main code. Tangled from chapters/harness.nw.
fail=0
for f in chapters/ch[0-9]*.nw; do
    last=$(grep '^## ' "$f" | tail -n 3 | sed 's/ *{.*}$//' | tr '\n' '|')
    count=$(grep -cE '^## (The program|The tests|Exercises)' "$f")
    if [ "$last" = "## The program|## The tests|## Exercises|" ] && [ "$count" -eq 3 ]
    then echo "ok - $f ends with The program, The tests, Exercises"
    else echo "not ok - $f: its last parts are '$last'"; fail=1
    fi
    plumbing=$(awk '/^## The program/ { exit }
                    /^<<.*>>=$/ { code = 1; name = $0; next }
                    /^@/ { code = 0 }
                    code && /report_(fact|table|note|new|finish)|table_row|options_parse|int main *\(|const option opts/ {
                        print NR ": " name ": " $0 }' "$f")
    if [ -z "$plumbing" ]; then echo "ok - $f: no report, option or main code before The program"
    else echo "not ok - $f: report, option or main code before The program"
         printf "%s\n" "$plumbing" | sed "s/^/#   /"; fail=1
    fi
done
exit $fail
