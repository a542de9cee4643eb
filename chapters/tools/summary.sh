#!/bin/sh
# summary.sh DIR [LOG...] — one closing line for make check, from the logs in
# DIR: Criterion's "Synthesis" lines and the ok / not ok lines of the other
# checks. Each LOG named (a file name in DIR) is a check that must have run:
# if its log is missing, or a Criterion log has no Synthesis line (the binary
# crashed or was killed), it counts as one failure, and is named.
dir=$1; shift
passed=0; failed=0
for name in "$@"; do
    if [ ! -e "$dir/$name" ]; then
        echo "check: $name: no log (the check did not run to its end)"; failed=$((failed + 1))
    fi
done
for log in "$dir"/*.log; do
    [ -e "$log" ] || continue
    syn=$(grep -a 'Synthesis:' "$log" | tail -n 1)
    if [ -n "$syn" ]; then
        p=$(echo "$syn" | sed -n 's/.*Passing: \([0-9]*\).*/\1/p')
        f=$(echo "$syn" | sed -n 's/.*Failing: \([0-9]*\).*/\1/p')
        c=$(echo "$syn" | sed -n 's/.*Crashing: \([0-9]*\).*/\1/p')
        passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0} + ${c:-0}))
    elif case "${log##*/}" in test_*) true ;; *) false ;; esac; then
        echo "check: ${log##*/}: no Criterion synthesis (the test binary did not finish)"
        failed=$((failed + 1))
    else
        p=$(grep -c '^ok ' "$log"); f=$(grep -c '^not ok ' "$log")
        passed=$((passed + p)); failed=$((failed + f))
    fi
done
echo "check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
