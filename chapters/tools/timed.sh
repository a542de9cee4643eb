#!/bin/sh
# timed.sh LABEL COMMAND [ARG...] — run COMMAND; where FA_TIMES names a file,
# append one line "SECONDS<TAB>STEP/LABEL" to it (STEP: FA_TIMES_STEP, or
# "-"), so that .ci/run can print the slowest checks of the whole run.
# COMMAND's exit status is timed.sh's.
label=$1; shift
[ -n "${FA_TIMES:-}" ] || exec "$@"
start=$(date +%s.%N)
"$@"; rc=$?
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" -v l="${FA_TIMES_STEP:--}/$label" \
    'BEGIN { printf "%.1f\t%s\n", e - s, l }' >> "$FA_TIMES"
exit $rc
