#!/bin/sh
# summary.sh DIR — one closing line for make check, from the logs in DIR:
# Criterion's "Synthesis" lines and the ok / not ok lines of the other checks.
dir=$1
passed=0; failed=0
for log in "$dir"/*.log; do
    [ -e "$log" ] || continue
    syn=$(grep -a 'Synthesis:' "$log" | tail -n 1)
    if [ -n "$syn" ]; then
        p=$(echo "$syn" | sed -n 's/.*Passing: \([0-9]*\).*/\1/p')
        f=$(echo "$syn" | sed -n 's/.*Failing: \([0-9]*\).*/\1/p')
        c=$(echo "$syn" | sed -n 's/.*Crashing: \([0-9]*\).*/\1/p')
        passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0} + ${c:-0}))
    else
        p=$(grep -c '^ok ' "$log"); f=$(grep -c '^not ok ' "$log")
        passed=$((passed + p)); failed=$((failed + f))
    fi
done
echo "check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
