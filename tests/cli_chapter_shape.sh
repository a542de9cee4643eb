#!/bin/sh
# cli_chapter_shape.sh — every chapter ends with The program, The tests and
# Exercises, in that order, its main text holds no report, option or main
# code, and no chunk goes into both its program and its test.
# Tangled from chapters/harness.nw.
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
    for prog in $(noroots "$f" | sed -n 's|^<<\(tangled/.*\.c\)>>$|\1|p'); do
        test=tests/test_${prog#tangled/}
        noroots "$f" | grep -qx "<<$test>>" || continue
        both=$( { notangle -L -R"$prog" "$f" | grep '^#line' | sort -u
                  notangle -L -R"$test" "$f" | grep '^#line' | sort -u; } | sort | uniq -d)
        if [ -z "$both" ]; then echo "ok - $f: no chunk in both $prog and $test"
        else echo "not ok - $f: chunks expanded into both $prog and $test"
             printf "%s\n" "$both" | sed "s/^/#   /"; fail=1
        fi
    done
done
exit $fail
