#!/bin/sh
# cli_prose.sh — the prose of every chapter and appendix speaks of attention,
# never of how the book was made. Tangled from chapters/harness.nw.
fail=0
prose() {  # prose FILE: its documentation lines, "N:text"
    awk '/^<<.*>>=[ \t]*$/ { code = 1; next }
         /^@([ \t]|$)/     { code = 0; next }
         !code              { print NR ":" $0 }' "$1"
}
words='\bissues? [0-9]|\bthe issue (this|that)|\bdefects?\b|\bsessions?\b|\btests? that failed|\bfound by a test|\bstill being written|\bhelper session'
for f in chapters/*.nw; do
    hits=$(prose "$f" | grep -iE -e "$words" | sed "s|^|$f:|")
    if [ -z "$hits" ]; then echo "ok - $f: the prose never speaks of how the book was made"
    else echo "not ok - $f: the prose speaks of how the book was made"
         printf "%s\n" "$hits" | sed "s/^/#   /"; fail=1; fi
done
exit $fail
