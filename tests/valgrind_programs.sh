#!/bin/sh
# valgrind_programs.sh DIR — every chapter program in DIR, at small sizes,
# under valgrind's memcheck. Tangled from chapters/app_robustness.nw.
set -u
dir=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
. "$(dirname "$0")/quick_sizes.sh"
failures=0
for p in ch01 ch02 ch03 ch04 ch05 ch06 ch07; do
    set -- $(quick $p); prog=$1; shift
    if valgrind --quiet --error-exitcode=99 --leak-check=full \
            --errors-for-leak-kinds=definite --trace-children=yes \
            --log-file="$scratch/vg.log" "$dir/$prog" "$@" --json --data "$scratch/data" \
            > /dev/null 2>&1; then
        echo "ok - $prog under memcheck"
    else
        echo "not ok - $prog under memcheck"; cat "$scratch/vg.log"
        failures=$((failures + 1))
    fi
done
[ "$failures" -eq 0 ]
